"""Where the credential cache lives: one per-user place by default, so a client that spawns
the gateway from a directory of its own still finds the grants ``connect`` cached.

Contract (every path returned is absolute):

- ``cache_root(flag, provider_url=..., trust_cwd=...)``: ``--cache-root`` when given, else
  ``PDPP_CACHE_ROOT``; else, only when the person opted in (``trust_cwd``: the
  ``--trust-cwd-cache`` flag, or ``PDPP_TRUST_CWD_CACHE=1``), a ``.pdpp`` in the working
  directory that holds a grant for ``provider_url`` (the reference CLI's cache; with no
  provider named, one that holds any grant); else the per-user directory
  (``user_cache_root``). MCP clients start servers in a project's directory and a cloned
  repository can ship a ``.pdpp``, so without the opt-in one found there is never read.
- ``user_cache_root()``: ``$XDG_DATA_HOME/pdpp-gateway``, by default
  ``~/.local/share/pdpp-gateway`` (the same on every platform, stated in the README).
- ``writing_root(flag)``: where ``connect`` writes a new grant: the flag, the environment,
  else the per-user directory (never a ``.pdpp`` it happens to run beside).
- ``reading_roots(flag, trust_cwd=...)``: every root a listing shows: the one named, else
  the working directory's ``.pdpp`` (opted in and present) and the per-user directory;
  ``cached_providers(roots)`` the providers with a grant there (a command given no
  ``--provider-url`` uses the only one).
- Whether the working directory's ``.pdpp`` is used or ignored is said once a process on
  stderr, with its absolute path (and, when ignored, the opt-in). Listing and reading go
  through ``cache_files`` (``CacheRefused`` for an unsafe file or folder).

Standard library only: a local door resolves it before the SDK has loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pdpp_gateway.local import cache_files

APP_DIR: Final = "pdpp-gateway"
LOCAL_DIR: Final = ".pdpp"
TRUST_CWD_FLAG: Final = "--trust-cwd-cache"
TRUST_CWD_ENV: Final = "PDPP_TRUST_CWD_CACHE"
_YES: Final = frozenset({"1", "true", "yes", "on"})
_said: set[str] = set()  # the notices this process has written


def user_cache_root(env: Mapping[str, str] | None = None) -> Path:
    values = os.environ if env is None else env
    base = values.get("XDG_DATA_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return root / APP_DIR


def _named(flag: str | None, env: Mapping[str, str]) -> Path | None:
    named = flag or env.get("PDPP_CACHE_ROOT")
    return Path(named).expanduser().absolute() if named else None


def _cwd_cache(trust_cwd: bool, env: Mapping[str, str]) -> tuple[Path, str] | None:
    """The working directory's ``.pdpp`` and how the person opted in to it; ``None`` when
    there is none, or when they did not (said once, with the way to opt in)."""
    local = Path(LOCAL_DIR).absolute()
    if not os.path.lexists(local):
        return None
    if trust_cwd:
        return local, TRUST_CWD_FLAG
    if env.get(TRUST_CWD_ENV, "").strip().lower() in _YES:
        return local, f"{TRUST_CWD_ENV}={env[TRUST_CWD_ENV]}"
    _say_once(
        f"ignoring {local}: a credential cache in the working directory is used only when you opt in "
        f"({TRUST_CWD_FLAG}, or {TRUST_CWD_ENV}=1)"
    )
    return None


def _using(local: Path, how: str) -> Path:
    _say_once(f"using the credential cache in the working directory, {local} (you opted in: {how})")
    return local


def cache_root(
    flag: str | None,
    *,
    provider_url: str | None = None,
    trust_cwd: bool = False,
    env: Mapping[str, str] | None = None,
) -> Path:
    values = os.environ if env is None else env
    named = _named(flag, values)
    if named is not None:
        return named
    opted = _cwd_cache(trust_cwd, values)
    if opted is not None:
        local, how = opted
        if provider_url is None:
            if cache_files.listed(local / "clients"):
                return _using(local, how)
        else:
            from pdpp_gateway.local.credentials import cache_file_for
            from pdpp_gateway.local_verdict import CredentialError

            try:
                if os.path.lexists(cache_file_for(provider_url, local)):  # read later, through cache_files
                    return _using(local, how)
            except CredentialError:
                pass  # an invalid URL: the caller says so
    return user_cache_root(values)


def writing_root(flag: str | None, env: Mapping[str, str] | None = None) -> Path:
    values = os.environ if env is None else env
    return _named(flag, values) or user_cache_root(values)


def reading_roots(
    flag: str | None, *, trust_cwd: bool = False, env: Mapping[str, str] | None = None
) -> list[Path]:
    values = os.environ if env is None else env
    named = _named(flag, values)
    if named is not None:
        return [named]
    opted = _cwd_cache(trust_cwd, values)
    return [*([_using(*opted)] if opted is not None else []), user_cache_root(values)]


def cached_providers(roots: list[Path]) -> list[tuple[str, Path]]:
    """Every provider with a grant cached under ``roots``: (its URL, the root), in order."""
    from pdpp_gateway.local.grant_cache import read_payload

    found: list[tuple[str, Path]] = []
    for root in roots:
        for path in cache_files.listed(root / "clients"):
            url = (read_payload(path) or {}).get("provider_url")
            if isinstance(url, str) and url and all(url != known for known, _ in found):
                found.append((url, root))
    return found


def _say_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        print(f"pdpp-gateway: {message}", file=sys.stderr, flush=True)
