"""Where the credential cache lives: one per-user place by default, so a client that spawns
the gateway from a directory of its own still finds the grants ``connect`` cached.

Contract (every path returned is absolute):

- ``cache_root(flag, provider_url=...)``: ``--cache-root`` when given, else
  ``PDPP_CACHE_ROOT``; else a ``.pdpp`` in the working directory that holds a grant for
  ``provider_url`` (the reference CLI's cache, still read where it wrote it; with no
  provider named, one that holds any grant); else the per-user directory
  (``user_cache_root``).
- ``user_cache_root()``: ``$XDG_DATA_HOME/pdpp-gateway``, by default
  ``~/.local/share/pdpp-gateway`` (the same on every platform, stated in the README).
- ``writing_root(flag)``: where ``connect`` writes a new grant: the flag, the environment,
  else the per-user directory (never a ``.pdpp`` it happens to run beside).
- ``reading_roots(flag)``: every root a listing shows: the one named, else the working
  directory's ``.pdpp`` (when it exists) and the per-user directory;
  ``cached_providers(roots)`` the providers with a grant there (a command given no
  ``--provider-url`` uses the only one). Listing and reading go through ``cache_files``
  (``CacheRefused`` for an unsafe file or folder).

Standard library only: a local door resolves it before the SDK has loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pdpp_gateway import cache_files

APP_DIR: Final = "pdpp-gateway"
LOCAL_DIR: Final = ".pdpp"


def user_cache_root(env: Mapping[str, str] | None = None) -> Path:
    values = os.environ if env is None else env
    base = values.get("XDG_DATA_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return root / APP_DIR


def _named(flag: str | None, env: Mapping[str, str]) -> Path | None:
    named = flag or env.get("PDPP_CACHE_ROOT")
    return Path(named).expanduser().absolute() if named else None


def cache_root(
    flag: str | None, *, provider_url: str | None = None, env: Mapping[str, str] | None = None
) -> Path:
    values = os.environ if env is None else env
    named = _named(flag, values)
    if named is not None:
        return named
    local = Path(LOCAL_DIR).absolute()
    if provider_url is not None:
        from pdpp_gateway.credentials import cache_file_for
        from pdpp_gateway.local_verdict import CredentialError

        try:
            if cache_file_for(provider_url, local).is_file():
                return local
        except CredentialError:
            pass  # an invalid URL: the caller says so
    elif (local / "clients").is_dir() and cache_files.listed(local / "clients"):
        return local
    return user_cache_root(values)


def writing_root(flag: str | None, env: Mapping[str, str] | None = None) -> Path:
    values = os.environ if env is None else env
    return _named(flag, values) or user_cache_root(values)


def reading_roots(flag: str | None, env: Mapping[str, str] | None = None) -> list[Path]:
    values = os.environ if env is None else env
    named = _named(flag, values)
    if named is not None:
        return [named]
    local = Path(LOCAL_DIR).absolute()
    return [*([local] if (local / "clients").is_dir() else []), user_cache_root(values)]


def cached_providers(roots: list[Path]) -> list[tuple[str, Path]]:
    """Every provider with a grant cached under ``roots``: (its URL, the root), in order."""
    from pdpp_gateway.grant_cache import read_payload

    found: list[tuple[str, Path]] = []
    for root in roots:
        for path in cache_files.listed(root / "clients"):
            url = (read_payload(path) or {}).get("provider_url")
            if isinstance(url, str) and url and all(url != known for known, _ in found):
                found.append((url, root))
    return found
