"""Which requests a door may answer without the SDK: those whose every part the SDK would
read exactly as written, and act on no further. One rule for both doors.

Contract (standard library only: the stdio door runs it before the SDK has loaded; the
hosted fast path and the stdio early path both ask it; ``tests/wire`` holds every shape it
takes to the SDK's own request models, so it is stricter than the SDK, never looser):

- ``plain(method, params, names=..., modern_versions=...)`` is the ``Plain`` request in a
  ``tools/call`` or ``resources/read``, or ``None``:

  - ``tools/call``: ``params`` of only ``name`` (one of ``names``; an unknown name is the
    SDK's ``-32602``) and ``arguments`` (an object, ``null`` or left out);
  - ``resources/read``: ``params`` of only ``uri`` (a string); ``Plain.name`` is
    ``READ_METHOD`` and its arguments ``{"uri": uri}``;
  - ``modern_versions`` ``None`` (the handshake era): no ``_meta`` at all (a progress
    token, or anything else there, is the SDK's); else (the 2026-07-28 era) a ``_meta``
    that is only a well-formed envelope (``envelope_version``), whose version is
    ``Plain.version``.

- ``envelope_version(meta, versions)`` is the protocol version of a 2026-era ``_meta``
  that holds only the envelope (protocol version, client capabilities, client info) in
  shapes every protocol version's models accept, at one of ``versions``, else ``None``.
- ``initialize_version(params)`` is the protocol version an ``initialize`` asks for when
  its params are only the three the SDK reads, in shapes its models accept, else ``None``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, NamedTuple

CALL_METHOD: Final = "tools/call"
READ_METHOD: Final = "resources/read"
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
_CALL_KEYS: Final = frozenset({"name", "arguments"})
_READ_KEYS: Final = frozenset({"uri"})
_META: Final = frozenset({"_meta"})
_INITIALIZE_KEYS: Final = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_ENVELOPE_KEYS: Final = frozenset({PROTOCOL_VERSION_KEY, CLIENT_INFO_KEY, CLIENT_CAPABILITIES_KEY})
_IMPLEMENTATION_TEXT: Final = ("title", "description", "websiteUrl")
_IMPLEMENTATION_KEYS: Final = frozenset({"name", "version", *_IMPLEMENTATION_TEXT})
_OBJECT_CAPABILITIES: Final = frozenset(
    {"roots", "sampling", "elicitation", "experimental", "extensions", "tasks"}
)
# Capability -> its members that the SDK's models type as objects (others are ignored there).
_OBJECT_MEMBERS: Final[Mapping[str, tuple[str, ...]]] = {
    "sampling": ("context", "tools"),
    "elicitation": ("form", "url"),
}


class Plain(NamedTuple):
    """A plain ``tools/call`` (``name`` the tool's) or ``resources/read`` (``name``
    ``READ_METHOD``, ``arguments`` its ``uri``); ``version`` the 2026 envelope's, or ``None``."""

    name: str
    arguments: dict[str, Any]
    version: str | None


def plain(
    method: str, params: object, *, names: Collection[str], modern_versions: Collection[str] | None
) -> Plain | None:
    """The plain call or read in a request (see the module contract), or ``None``."""
    if not isinstance(params, dict):
        return None
    if method == CALL_METHOD:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or name not in names or not isinstance(arguments, dict | None):
            return None
        keys, taken = _CALL_KEYS, dict(arguments or {})
    elif method == READ_METHOD:
        name, uri = READ_METHOD, params.get("uri")
        if not isinstance(uri, str):
            return None
        keys, taken = _READ_KEYS, {"uri": uri}
    else:
        return None
    if modern_versions is None:
        return Plain(name, taken, None) if params.keys() <= keys else None
    if not params.keys() <= keys | _META:
        return None
    version = envelope_version(params.get("_meta"), modern_versions)
    return None if version is None else Plain(name, taken, version)


def envelope_version(meta: object, versions: Collection[str]) -> str | None:
    """The envelope's protocol version when ``meta`` is only a well-formed envelope."""
    if not isinstance(meta, dict) or not meta.keys() <= _ENVELOPE_KEYS:
        return None
    version = meta.get(PROTOCOL_VERSION_KEY)
    if not isinstance(version, str) or version not in versions or CLIENT_CAPABILITIES_KEY not in meta:
        return None
    info = meta.get(CLIENT_INFO_KEY)
    if not _capabilities_ok(meta[CLIENT_CAPABILITIES_KEY]) or not (info is None or _implementation_ok(info)):
        return None
    return version


def initialize_version(params: object) -> str | None:
    """The version an ``initialize`` asks for, when the SDK reads its params as written."""
    if not isinstance(params, dict) or params.keys() != _INITIALIZE_KEYS:
        return None
    requested = params["protocolVersion"]
    if not isinstance(requested, str):
        return None
    if not _capabilities_ok(params["capabilities"]) or not _implementation_ok(params["clientInfo"]):
        return None
    return requested


def _implementation_ok(info: object) -> bool:
    if not isinstance(info, dict) or not info.keys() <= _IMPLEMENTATION_KEYS:
        return False
    if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return False
    return all(info.get(key) is None or isinstance(info[key], str) for key in _IMPLEMENTATION_TEXT)


def _capabilities_ok(capabilities: object) -> bool:
    """Shapes every protocol version's ``ClientCapabilities`` model accepts (a subset of them)."""
    if not isinstance(capabilities, dict):
        return False
    for name, value in capabilities.items():
        if value is None or name not in _OBJECT_CAPABILITIES:
            continue  # absent, or a capability the models ignore
        if not isinstance(value, dict):
            return False
        if name == "roots" and not isinstance(value.get("listChanged"), bool | None):
            return False
        if name in _OBJECT_MEMBERS and any(
            value.get(member) is not None and not isinstance(value[member], dict)
            for member in _OBJECT_MEMBERS[name]
        ):
            return False
        if name in ("experimental", "extensions") and not all(isinstance(v, dict) for v in value.values()):
            return False
        if name == "tasks" and value:
            return False
    return True
