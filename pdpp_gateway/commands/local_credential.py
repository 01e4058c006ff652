"""Shared by the local commands (stdio, search, read-field): provider URL and scoped token.

Commands that serve a package (``add_arguments(package=True)``) take ``--provider-url``
repeated or ``--package NAME`` and get every member from ``resolve_members``.

Contract: ``add_arguments`` declares ``--provider-url`` and ``--cache-root`` (env
``PDPP_PROVIDER_URL`` / ``PDPP_CACHE_ROOT``, default cache root ``.pdpp``);
``resolve`` returns ``(provider_url, token)`` from the ``pdpp-gateway connect`` cache, or an
exit code after printing one actionable line to stderr. Owner credentials in the
environment are announced as ignored and never read.

A cache label can be missing or wrong, so ``resolve`` also asks the RS what the token
is (``GET /v1/schema`` → ``bearer.token_kind``) before a command reads anything: 77 for
an owner or mcp_package token, 78 for one the RS rejects, 69 when the RS cannot be
asked (a one-shot command fails closed). An expired access token with a cached refresh
token (``pdpp-gateway connect``) is renewed first, once, without a browser. The stdio server passes ``verify=False`` and
verifies itself, since it may start before the RS is up.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pdpp_gateway.refusals import ExitCode

if TYPE_CHECKING:
    from pdpp_gateway.local_package import MemberStart


def add_arguments(parser: argparse.ArgumentParser, *, package: bool = False) -> None:
    """``--provider-url`` and ``--cache-root``; with ``package``, ``--provider-url`` repeats and
    ``--package NAME`` names a package file (several cached grants served as one)."""
    if package:
        parser.add_argument(
            "--provider-url",
            action="append",
            help="RS public origin (env PDPP_PROVIDER_URL); repeat it to use several cached grants as one package.",
        )
        parser.add_argument(
            "--package",
            metavar="NAME",
            help="use the cached grants listed in <cache-root>/packages/NAME.json as one package.",
        )
    else:
        parser.add_argument("--provider-url", help="RS public origin (env PDPP_PROVIDER_URL).")
    parser.add_argument("--cache-root", help="credential cache root (env PDPP_CACHE_ROOT, default .pdpp).")


def resolve_members(args: argparse.Namespace, command: str, *, verify: bool) -> list[MemberStart] | int:
    """Each member's provider URL and cached token, or the exit code (after saying why).

    One provider (``--provider-url`` once, or none: ``PDPP_PROVIDER_URL``) is ``resolve``
    exactly, checked with the RS when ``verify``; the members of a package are never checked
    here (``local_package.check_members`` checks them all at once).
    """
    from pdpp_gateway.credentials import CredentialError, cache_file_for
    from pdpp_gateway.local_package import MemberStart, package_providers

    urls: list[str] = args.provider_url or []
    cache_root = cache_root_of(args)
    if args.package is None and len(urls) <= 1:
        single = argparse.Namespace(provider_url=urls[0] if urls else None, cache_root=args.cache_root)
        resolved = resolve(single, command, verify=verify)
        if isinstance(resolved, int):
            return resolved
        provider_url, token = resolved
        return [MemberStart(provider_url, token, cache_file_for(provider_url, cache_root))]
    try:
        providers = package_providers(urls, args.package, cache_root)
    except CredentialError as error:
        say(error.message)
        return error.exit_code
    members = []
    for index, provider_url in enumerate(providers):
        one = argparse.Namespace(provider_url=provider_url, cache_root=args.cache_root)
        resolved = resolve(one, command, verify=False, announce=index == 0)
        if isinstance(resolved, int):
            return resolved
        members.append(MemberStart(provider_url, resolved[1], cache_file_for(provider_url, cache_root)))
    return members


def resolve(
    args: argparse.Namespace, command: str, *, verify: bool = True, announce: bool = True
) -> tuple[str, str] | int:
    """The provider URL and cached scoped token, or the exit code to stop with (``announce``:
    say that owner credentials in the environment are ignored)."""
    from pdpp_gateway.credentials import (
        CredentialError,
        load_credential,
        normalize_provider_url,
        owner_env_warning,
    )

    raw_url = args.provider_url or os.environ.get("PDPP_PROVIDER_URL")
    if not raw_url:
        say(
            f"missing --provider-url (or PDPP_PROVIDER_URL). Example: pdpp-gateway {command} "
            "--provider-url https://pdpp.example.com"
        )
        return ExitCode.USAGE
    notice = owner_env_warning(os.environ) if announce else None
    if notice:
        say(notice)
    cache_root = cache_root_of(args)
    try:
        provider_url = normalize_provider_url(raw_url)
        credential = load_credential(provider_url, cache_root)
    except CredentialError as error:
        if error.code != "credential_expired" or not _renewed(provider_url, cache_root):
            say(error.message)
            return error.exit_code
        credential = load_credential(provider_url, cache_root)
    if verify:
        stop = _verify_with_rs(provider_url, credential.access_token)
        if stop is not None:
            return stop
    return provider_url, credential.access_token


def cache_root_of(args: argparse.Namespace) -> Path:
    return Path(args.cache_root or os.environ.get("PDPP_CACHE_ROOT") or ".pdpp")


def _renewed(provider_url: str, cache_root: Path) -> bool:
    """Renew an expired cached grant with its refresh token, when it has one."""
    import asyncio

    from pdpp_gateway.commands.connect import refresh_cached
    from pdpp_gateway.credentials import CredentialError
    from pdpp_gateway.oauth_flow import ConnectError

    try:
        asyncio.run(refresh_cached(provider_url, cache_root))
    except (ConnectError, CredentialError) as error:
        say(error.message)
        return False
    say(f"the cached access token had expired; renewed it with the refresh token ({provider_url})")
    return True


def _verify_with_rs(provider_url: str, token: str) -> int | None:
    """``None`` when the RS says the token is a client token, else the exit code (after saying why)."""
    import asyncio

    from pdpp_gateway.credentials import CredentialError
    from pdpp_gateway.rs.client import RsClient
    from pdpp_gateway.rs.token_kind import KindUnknown, verify_at_start

    async def ask() -> str:
        async with RsClient(provider_url) as rs:
            return await verify_at_start(rs.bind(token), provider_url)

    try:
        asyncio.run(ask())
    except CredentialError as error:
        say(error.message)
        return error.exit_code
    except KindUnknown as unknown:
        say(
            f"cannot verify the cached credential with {provider_url} ({unknown.reason}); nothing was read. "
            "Retry when the resource server is reachable."
        )
        return ExitCode.UNAVAILABLE
    return None


def say(message: str) -> None:
    print(f"pdpp-gateway: {message}", file=sys.stderr, flush=True)
