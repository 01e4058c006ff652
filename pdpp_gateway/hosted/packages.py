"""Package resolution: which child grants an ``mcp_package`` bearer stands for.

Contract: a ``PackageResolver`` maps the facts of an active package bearer to its
usable members (``context.PackageMember``: a reader bound, by the ``bind`` it is given,
to the child's OWN client token, with its grant id, connections, streams and source
labels), or to ``None`` when it has no knowledge of that package at all (so the caller
hears "cannot resolve", not a false "revoked"). The gateway reads each child with that
child's token and never with the package token, which the RS refuses on ``/v1``. A
child that is not active is left out, so it is never offered as a usable connection.
An empty answer means the package has no usable member (``caller.authenticate`` then
refuses it with ``package_revoked``).

Implementations:

- ``IntrospectionPackageResolver``: the members listed in the introspection answer's
  ``package.members`` (what the sandbox RS's introspection reports).
- ``FilePackageResolver``: an operator's JSON file mapping ``grant_package_id`` to its
  members, each naming the environment variable that holds the child's token (so the
  file itself holds no secret).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import orjson

from pdpp_gateway.caller import BearerFacts
from pdpp_gateway.context import PackageMember, RsReader

Bind = Callable[[str], RsReader]  # a reader bound to one child's own token


class PackageResolver(Protocol):
    async def members(self, facts: BearerFacts, bind: Bind) -> Sequence[PackageMember] | None: ...


class IntrospectionPackageResolver:
    """Children straight from the introspection answer's ``package.members``."""

    async def members(self, facts: BearerFacts, bind: Bind) -> Sequence[PackageMember] | None:
        package = facts.claims.get("package")
        listed = package.get("members") if isinstance(package, Mapping) else None
        if not isinstance(listed, list):
            return None
        return tuple(child for entry in listed if (child := _child(entry, bind)) is not None)


class FilePackageResolver:
    """Children from an operator file: ``{"<grant_package_id>": [{"token_env": ..., ...}]}``."""

    def __init__(self, path: Path, env: Mapping[str, str] | None = None) -> None:
        document = orjson.loads(path.read_bytes())
        if not isinstance(document, dict):
            raise ValueError(f"{path}: expected an object keyed by grant_package_id")
        self._packages: dict[str, list[Any]] = {
            str(key): value for key, value in document.items() if isinstance(value, list)
        }
        self._env = os.environ if env is None else env

    async def members(self, facts: BearerFacts, bind: Bind) -> Sequence[PackageMember] | None:
        package_id = facts.claims.get("grant_package_id")
        if not package_id or str(package_id) not in self._packages:
            return None
        entries = self._packages[str(package_id)]
        found = []
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            token = self._env.get(str(entry.get("token_env", "")), "")
            child = _child({**entry, "access_token": token}, bind)
            if child is not None:
                found.append(child)
        return tuple(found)


def _child(entry: object, bind: Bind) -> PackageMember | None:
    if not isinstance(entry, Mapping):
        return None
    token = entry.get("access_token")
    if not isinstance(token, str) or not token or entry.get("status", "active") != "active":
        return None
    raw_source = entry.get("source")
    source: Mapping[str, Any] = raw_source if isinstance(raw_source, Mapping) else {}
    return PackageMember(
        rs=bind(token),
        grant_id=_text(entry.get("grant_id")),
        connection_ids=_strings(entry.get("connection_ids")),
        streams=_strings(entry.get("streams")) or ("*",),
        connector_key=_text(source.get("connector_key")) or _text(source.get("id")),
        display_name=_text(source.get("display_name")),
    )


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
