"""Shared by the local commands (stdio, search, read-field): provider URL and scoped token.

Contract: ``add_arguments`` declares ``--provider-url`` and ``--cache-root`` (env
``PDPP_PROVIDER_URL`` / ``PDPP_CACHE_ROOT``, default cache root ``.pdpp``);
``resolve`` returns ``(provider_url, token)`` from the ``pdpp connect`` cache, or an
exit code after printing one actionable line to stderr. Owner credentials in the
environment are announced as ignored and never read.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

EXIT_USAGE = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider-url", help="RS public origin (env PDPP_PROVIDER_URL).")
    parser.add_argument("--cache-root", help="credential cache root (env PDPP_CACHE_ROOT, default .pdpp).")


def resolve(args: argparse.Namespace, command: str) -> tuple[str, str] | int:
    """The provider URL and cached scoped token, or the exit code to stop with."""
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
        return EXIT_USAGE
    notice = owner_env_warning(os.environ)
    if notice:
        say(notice)
    cache_root = Path(args.cache_root or os.environ.get("PDPP_CACHE_ROOT") or ".pdpp")
    try:
        provider_url = normalize_provider_url(raw_url)
        credential = load_credential(provider_url, cache_root)
    except CredentialError as error:
        say(error.message)
        return error.exit_code
    return provider_url, credential.access_token


def say(message: str) -> None:
    print(f"pdpp-gateway: {message}", file=sys.stderr, flush=True)
