"""Where a sandbox keeps its authorization state between runs, and that state's file.

Contract:

- ``state_root(flag, env)``: ``--state-dir``, else ``PDPP_SANDBOX_STATE_DIR``, else
  ``sandbox`` under the per-user data directory (``local.cache_root.user_cache_root``:
  ``$XDG_DATA_HOME/pdpp-gateway/sandbox``, by default ``~/.local/share/pdpp-gateway/sandbox``).
- ``state_file(root, host, port, fixed_ids)``: one file per sandbox, keyed by the address it
  serves and its kind of connection ids (``<root>/127.0.0.1_7663/state.json``,
  ``.../127.0.0.1_7663_fixed-ids/state.json``), so two sandboxes on different ports or
  configurations never share one.
- ``load(path)``: the saved state, ``None`` when there is none yet; a ``StateError`` naming
  the file and how to start afresh when it cannot be read or is not in this format. It is read
  with the credential cache's checks (``local.cache_files.read``): a link (to ``/dev/zero``,
  dangling, or a linked folder), a FIFO or a device, a file others may write, or one over the
  size bound is refused with its fix, never followed, waited on or silently replaced.
- ``attach(store, path, suffix)``: fill the store with what was saved and save it after
  every change (``files.private.write_private``: written whole, 0600 in a 0700 directory).
  A save that fails (a full disk, a path that cannot be a directory) is one warning in the
  log, the first time: the sandbox answers on, its state lasting until it stops.
- The file holds the connection suffix (a restarted sandbox serves the connection ids its
  grants name), the registered clients, unexpired codes, and every issued access and
  refresh token by its ``token_key`` with the grant it names and its expiry: never a token.
  Consents waiting on the consent page are not saved: one open across a restart is asked
  again from the app.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pydantic import TypeAdapter, ValidationError

from pdpp_gateway.files.private import write_private
from pdpp_gateway.local.cache_files import CacheRefused
from pdpp_gateway.local.cache_files import read as checked_read
from pdpp_gateway.local.cache_root import user_cache_root
from pdpp_gateway.sandbox.config import Principal
from pdpp_gateway.sandbox.oauth_store import Client, IssuedCode, OAuthStore, RefreshEntry

_log = logging.getLogger(__name__)

STATE_ENV: Final = "PDPP_SANDBOX_STATE_DIR"
FILE_NAME: Final = "state.json"


class StateError(Exception):
    """A saved state that cannot be used; the message says which file and what to do."""


@dataclass(frozen=True, slots=True)
class SavedState:
    version: Literal[1]
    connection_suffix: str
    clients: dict[str, Client]
    codes: dict[str, IssuedCode]
    used_codes: dict[str, float]
    access: dict[str, Principal]
    refresh: dict[str, RefreshEntry]
    families: dict[str, list[str]]
    used_refresh: dict[str, str]


_FORMAT: Final = TypeAdapter(SavedState)


def state_root(flag: str | None, env: Mapping[str, str] | None = None) -> Path:
    values = os.environ if env is None else env
    named = flag or values.get(STATE_ENV)
    return Path(named).expanduser().absolute() if named else user_cache_root(values) / "sandbox"


def state_file(root: Path, host: str, port: int, fixed_ids: bool) -> Path:
    key = re.sub(r"[^A-Za-z0-9.-]", "_", f"{host}_{port}") + ("_fixed-ids" if fixed_ids else "")
    return root / key / FILE_NAME


def load(path: Path) -> SavedState | None:
    try:  # the credential cache's checked read: no link followed, no FIFO or device opened
        text = checked_read(path)
    except CacheRefused as refused:
        raise StateError(
            f"refused the sandbox's saved state {refused.path}: {refused.why}. Fix: {refused.fix}"
        ) from None
    except OSError as error:
        raise StateError(f"cannot read the sandbox's saved state {path}: {error.strerror}") from None
    if text is None:
        return None
    try:
        return _FORMAT.validate_json(text)
    except ValidationError:
        raise StateError(
            f"the sandbox's saved state {path} is not in this version's format; "
            f"remove {path.parent} to start afresh (its clients and grants are then forgotten)"
        ) from None


def attach(store: OAuthStore, path: Path, suffix: str) -> None:
    saved = load(path)
    if saved is not None:
        store.clients.update(saved.clients)
        store.codes.update(saved.codes)
        store.used_codes.update(saved.used_codes)
        store.access.update(saved.access)
        store.refresh.update(saved.refresh)
        store.families.update((code, set(keys)) for code, keys in saved.families.items())
        store.used_refresh.update(saved.used_refresh)

    def save(changed: OAuthStore) -> None:
        state = SavedState(
            version=1,
            connection_suffix=suffix,
            clients=changed.clients,
            codes=changed.codes,
            used_codes=changed.used_codes,
            access=changed.access,
            refresh=changed.refresh,
            families={code: sorted(keys) for code, keys in changed.families.items()},
            used_refresh=changed.used_refresh,
        )
        try:
            write_private(path, _FORMAT.dump_json(state).decode())
        except OSError as error:
            if not failed:
                _log.warning(
                    "cannot save the sandbox's clients and grants to %s (%s); they last until it stops",
                    path,
                    error.strerror or error,
                )
            failed.append(error)

    failed: list[OSError] = []
    store.saver = save
