"""Shared by the local commands (stdio, search, call, read-field, resource): which cached grants, with which tokens.

Contract: ``add_arguments`` declares ``--provider-url`` (env ``PDPP_PROVIDER_URL``),
``--connector``, ``--cache-root`` (env ``PDPP_CACHE_ROOT``, else ``local.cache_root``'s default:
the per-user directory) and ``--trust-cwd-cache`` (``add_trust_cwd_argument``, env
``PDPP_TRUST_CWD_CACHE=1``: a ``.pdpp`` here holding the provider's grant is read); with
``package=True`` ``--provider-url`` repeats and ``--package NAME`` names a package file
(``local.package``). ``resolve_members`` returns one ``MemberStart`` per cached grant to
serve, or an exit code after printing one actionable line to stderr:

- One provider: every grant cached for it (one per connector, ``local.grant_cache``), narrowed
  by ``--connector`` (repeatable). One grant is the single-grant door, exactly as before;
  several are served as one package (routed and merged like any local package).
- Several providers (``--provider-url`` repeated, or ``--package``): every grant of each.
- A grant whose access token has lapsed is renewed first, once, with its refresh token
  (``renewal.renew``: under the cache lock, so a concurrent process's renewal is reused).
- A cache label can be missing or wrong, so with ``verify`` a single grant is also checked
  with the RS (``GET /v1/schema`` → ``bearer.token_kind``) before a command reads
  anything: 77 for an owner or mcp_package token, 78 for one the RS rejects, 69 when the
  RS cannot be asked (a one-shot command fails closed). The members of a package are
  checked together by ``local.package.check_members``. The stdio server passes
  ``verify=False`` and verifies itself, since it may start before the RS is up.

Owner credentials in the environment are announced as ignored and never read.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pdpp_gateway.refusals import ExitCode

if TYPE_CHECKING:
    from pdpp_gateway.local.credentials import Credential
    from pdpp_gateway.local.package import MemberStart


CACHE_ROOT_HELP = (
    "credential cache root (env PDPP_CACHE_ROOT; default ~/.local/share/pdpp-gateway, or "
    "$XDG_DATA_HOME/pdpp-gateway)"
)


def add_arguments(parser: argparse.ArgumentParser, *, package: bool = False) -> None:
    """``--provider-url``, ``--connector`` and ``--cache-root``; with ``package``,
    ``--provider-url`` repeats and ``--package NAME`` names a package file (several
    providers' cached grants served as one)."""
    if package:
        parser.add_argument(
            "--provider-url",
            action="append",
            help="RS public origin (env PDPP_PROVIDER_URL); every grant cached for it is served. "
            "Repeat it to serve several providers as one package.",
        )
        parser.add_argument(
            "--package",
            metavar="NAME",
            help="use the cached grants listed in <cache-root>/packages/NAME.json as one package.",
        )
    else:
        parser.add_argument("--provider-url", help="RS public origin (env PDPP_PROVIDER_URL).")
    parser.add_argument(
        "--connector",
        action="append",
        metavar="ID",
        help="serve only this connector's grant of the provider (repeatable; default: every cached grant).",
    )
    parser.add_argument("--cache-root", help=CACHE_ROOT_HELP)
    add_trust_cwd_argument(parser)


def add_trust_cwd_argument(parser: argparse.ArgumentParser) -> None:
    """``--trust-cwd-cache``: the opt-in to a ``.pdpp`` credential cache in the working directory."""
    from pdpp_gateway.local.cache_root import TRUST_CWD_ENV, TRUST_CWD_FLAG

    parser.add_argument(
        TRUST_CWD_FLAG,
        dest="trust_cwd_cache",
        action="store_true",
        help=f"also read a .pdpp credential cache in the working directory (env {TRUST_CWD_ENV}=1); "
        "without it one found there is ignored, since a project you cloned can ship one",
    )


def resolve_members(args: argparse.Namespace, command: str, *, verify: bool) -> list[MemberStart] | int:
    """One ``MemberStart`` per cached grant to serve, or the exit code (after saying why)."""
    from pdpp_gateway.local.credentials import load_credentials, owner_env_warning
    from pdpp_gateway.local.package import MemberStart, package_providers
    from pdpp_gateway.local_verdict import CredentialError

    urls: list[str] = _as_list(args.provider_url)
    connectors: list[str] = getattr(args, "connector", None) or []
    package = getattr(args, "package", None)
    if package is None and not urls:
        only = os.environ.get("PDPP_PROVIDER_URL") or _only_cached_provider(args, command)
        if isinstance(only, int):
            return only
        urls = [only]
    notice = owner_env_warning(os.environ)
    if notice:
        say(notice)
    from pdpp_gateway.local.cache_root import cache_root as resolve_root

    try:
        cache_root = args.resolved_cache_root = resolve_root(
            args.cache_root,
            provider_url=urls[0] if package is None and len(urls) == 1 else None,
            trust_cwd=args.trust_cwd_cache,
        )
        providers = package_providers(urls, package, cache_root)
        if connectors and len(providers) > 1:
            say("--connector narrows one provider's grants; name one --provider-url with it.")
            return ExitCode.USAGE
        credentials = [
            c for url in providers for c in load_credentials(url, cache_root, connectors=connectors)
        ]
    except CredentialError as error:
        say(error.message)
        return error.exit_code
    members = []
    for credential in credentials:
        if credential.lapsed():
            renewed = _renewed(credential, cache_root)
            if isinstance(renewed, int):
                return renewed
            credential = renewed
        members.append(MemberStart(credential.provider_url, credential))
    if verify and len(members) == 1:
        stop = _verify_with_rs(members[0].provider_url, members[0].token)
        if stop is not None:
            return stop
        members[0].verified = "client"
    return members


def _only_cached_provider(args: argparse.Namespace, command: str) -> str | int:
    """The one provider with a cached grant (said on stderr), else the exit code after
    listing the choices as ready commands."""
    from pdpp_gateway.local.cache_root import cached_providers, reading_roots
    from pdpp_gateway.local_verdict import CredentialError

    roots = reading_roots(args.cache_root, trust_cwd=args.trust_cwd_cache)
    try:
        found = cached_providers(roots)
    except CredentialError as error:
        say(error.message)
        return error.exit_code
    if len(found) == 1:
        url, root = found[0]
        say(f"using the only provider with a cached grant, {url} ({root})")
        return url
    if not found:
        where = " or ".join(str(root) for root in roots)
        say(
            f"missing --provider-url (or PDPP_PROVIDER_URL), and no grant is cached in {where} to use "
            f"instead. Connect first (pdpp-gateway connect https://pdpp.example.com), or name the "
            f"provider: pdpp-gateway {command} --provider-url https://pdpp.example.com"
        )
        return ExitCode.USAGE
    choices = "; ".join(f"pdpp-gateway {command} ... --provider-url {url}" for url, _ in found)
    say(f"{len(found)} providers have cached grants: name one with --provider-url: {choices}")
    return ExitCode.USAGE


def _as_list(value: object) -> list[str]:
    if isinstance(value, list):
        return value
    return [value] if isinstance(value, str) and value else []


def cache_root_of(args: argparse.Namespace) -> Path:
    """The cache root ``resolve_members`` read the grants from (``local.cache_root``)."""
    resolved = getattr(args, "resolved_cache_root", None)
    if isinstance(resolved, Path):
        return resolved
    from pdpp_gateway.local.cache_root import cache_root

    return cache_root(args.cache_root, trust_cwd=args.trust_cwd_cache)


def _renewed(credential: Credential, cache_root: Path) -> Credential | int:
    """The lapsed grant renewed with its refresh token, or the exit code (after saying why)."""
    import asyncio

    from pdpp_gateway.local.renewal import RenewalError, reconnect_command, renew

    if not credential.refreshable:
        again = reconnect_command(credential.provider_url, credential.connector, cache_root)
        assert credential.expires_at is not None
        say(
            f"the cached credential for {credential.provider_url} expired at "
            f"{credential.expires_at.isoformat()} and has no refresh token. Connect again: {again}"
        )
        return ExitCode.NO_CREDENTIAL
    try:
        renewed = asyncio.run(
            renew(credential.provider_url, cache_root, credential.connector, stale=credential.access_token)
        )
    except RenewalError as error:
        say(error.message)
        return error.exit_code
    say(f"the cached access token had expired; renewed it with the refresh token ({credential.provider_url})")
    return renewed


def _verify_with_rs(provider_url: str, token: str) -> int | None:
    """``None`` when the RS says the token is a client token, else the exit code (after saying why)."""
    import asyncio

    from pdpp_gateway.local_verdict import CredentialError
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
