"""Early answers: the opening requests of a stdio session, answered before the SDK has loaded.

Contract:

- ``EarlyResponder.respond(line)`` looks at one stdin line and returns an ``Answer`` (the
  whole frame to write), an ``EarlyCall`` (a tool call or a resource read for a pipeline,
  answered by ``fast_start.calls``), an ``EarlyCancel`` (the client cancelled an early call),
  ``SILENT`` (a notification that needs no answer) or ``None``: from the first ``None``
  on, it answers nothing more and the SDK must answer that line and every later one. It
  takes only what it answers with the SDK's own bytes, so it is stricter than the SDK,
  never looser:

  - handshake era: ``initialize`` as the first request (``protocolVersion``,
    ``capabilities`` and ``clientInfo`` of well-formed shapes, no ``_meta``), then
    ``notifications/initialized`` and ``tools/list`` / ``resources/templates/list`` /
    ``ping`` without params (or ``{}``), ``tools/call`` with ``name`` (one of the six
    tools) and ``arguments`` (an object, ``null`` or left out) only, and ``resources/read``
    with ``uri`` (a string) only;
  - 2026-07-28 era: ``server/discover`` / ``tools/list`` / ``resources/templates/list``
    whose params are only a well-formed ``_meta`` envelope at a version the SDK serves,
    the first of them opening the era, and ``tools/call`` and ``resources/read`` as above
    with that envelope as their only ``_meta``;
  - ``notifications/cancelled`` naming an early call or read (``requestId``, ``reason``) only;
  - blank lines are ``SILENT``;
  - anything else (another method, a cursor, a progress token, an unknown tool, an odd or
    reused id, duplicate keys, escaped surrogates, ``NaN`` or a number beyond a double,
    more than ``SDK_PARSE_DEPTH`` brackets, so never nesting the SDK's parser refuses, more
    than ``MAX_EARLY_LINES`` lines) is left to the SDK.

- The result texts come from ``answers.json``, written by the SDK itself
  (``fast_start.build``) and pinned by a test; a table written for another gateway
  version, from other ``SOURCES`` (the tools, instructions, server identity and
  resource templates: a checkout edited without a rebuild) or with another ``mcp``
  release than the one installed (``mcp==2.3.*`` lets a patch release in), or a server
  name that cannot be written as UTF-8, turns early answers off: the SDK answers.
- This module imports nothing heavier than ``json`` and the tool names, and defines its
  records as ``NamedTuple``s (a dataclass costs about a millisecond to define): it runs
  before the SDK and the pipeline are loaded, on the path of the first answers.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

from pdpp_gateway import __version__
from pdpp_gateway.tools.specs import TOOL_NAMES

ANSWERS_PATH: Final = Path(__file__).with_name("answers.json")
PACKAGE_DIR: Final = Path(__file__).resolve().parents[1]
# The sources the answers are made from (with the SDK): editing one makes the table stale.
SOURCES: Final = ("tools/specs.py", "instructions.py", "server.py", "resources/handlers.py")
NAME_PLACEHOLDER: Final = "@@pdpp-gateway-server-name@@"
HANDSHAKE_METHODS: Final = ("initialize", "tools/list", "resources/templates/list", "ping")
MODERN_METHODS: Final = ("server/discover", "tools/list", "resources/templates/list")
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
MAX_EARLY_LINES: Final = 256
MAX_SAFE_ID: Final = 2**53

_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
CALL_METHOD: Final = "tools/call"
READ_METHOD: Final = "resources/read"
_CALL_KEYS: Final = frozenset({"name", "arguments"})
_READ_KEYS: Final = frozenset({"uri"})
_CANCEL_KEYS: Final = frozenset({"requestId", "reason"})
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
_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
# The nesting the SDK's parser (jiter) reads. A line with more brackets than that, in
# strings or not, is left to the SDK: never parsed deeper here, never answered where it refuses.
SDK_PARSE_DEPTH: Final = 200
_PLAIN_ID: Final = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e]{0,256}")  # printable ASCII but " and \
_log = logging.getLogger(__name__)


class Answer(NamedTuple):
    """An early answer: the frame to write, and the request id (as JSON text) it answers."""

    id_key: str
    method: str
    frame: bytes


class EarlyCall(NamedTuple):
    """A ``tools/call`` run by the pipeline before the SDK has loaded (``fast_start.calls``):
    the SDK never sees it. ``version`` is the protocol version it is served at. A
    ``resources/read`` is one too: ``name`` is ``READ_METHOD``, ``arguments`` its ``uri``."""

    id_key: str
    name: str
    arguments: dict[str, Any]
    version: str
    modern: bool


class EarlyCancel(NamedTuple):
    """``notifications/cancelled`` for an early call: it is stopped and never answered, as the
    SDK does for its own requests."""

    id_key: str


class Silent:
    """A notification taken in order: nothing to write now, the SDK sees it later."""


SILENT: Final = Silent()
# What ``EarlyResponder.respond`` makes of a line (``None``: the SDK's, from here on).
Outcome = Answer | EarlyCall | EarlyCancel | Silent | None


class Table(NamedTuple):
    """``answers.json``: the SDK's result texts per protocol version and method."""

    handshake_versions: tuple[str, ...]
    latest_handshake_version: str
    modern_versions: tuple[str, ...]
    handshake: Mapping[str, Mapping[str, str]]
    modern: Mapping[str, Mapping[str, str]]
    server_info: str  # the SDK's identity stamp of a 2026-era result, as JSON text

    @classmethod
    def load(cls, path: Path = ANSWERS_PATH) -> Table | None:
        """The table, or ``None`` when it is missing, unreadable, or made for another gateway
        version, other ``SOURCES`` or another ``mcp`` release than the one installed."""
        try:
            raw = json.loads(path.read_bytes())
        except (OSError, ValueError) as error:
            _log.warning("early answers are off: %s cannot be read (%s)", path.name, type(error).__name__)
            return None
        if (
            raw.get("gateway_version") != __version__
            or raw.get("sources_crc32") != sources_crc32()
            or "server_info" not in raw
        ):
            _log.warning(
                "early answers are off: %s was built from other sources; rebuild it with "
                "`python -m pdpp_gateway.fast_start.build`",
                path.name,
            )
            return None
        if not sdk_installed(raw.get("sdk_version")):
            _log.warning(
                "early answers are off: %s was built with mcp %s, another release than the one "
                "installed; rebuild it with `python -m pdpp_gateway.fast_start.build`",
                path.name,
                raw.get("sdk_version"),
            )
            return None
        return cls(
            handshake_versions=tuple(raw["handshake_versions"]),
            latest_handshake_version=raw["latest_handshake_version"],
            modern_versions=tuple(raw["modern_versions"]),
            handshake=raw["handshake"],
            modern=raw["modern"],
            server_info=raw["server_info"],
        )


class EarlyResponder:
    """Answers a session's opening requests from the table, until it meets anything else."""

    def __init__(self, table: Table | None, server_name: str) -> None:
        self.table = table
        self.server_name = server_name
        self.era: str | None = None  # "handshake" or "modern" once the first request is answered
        self.version: str | None = None  # the negotiated handshake version
        self.lines = 0
        self.stopped = False
        self._answered: set[str] = set()
        self._calls: set[str] = set()  # the ids of the early calls
        self._results: dict[tuple[str, str, str], bytes] = {}
        try:
            server_name.encode()
        except UnicodeEncodeError:
            self.table = None  # the SDK cannot write this name either; let it say so

    def respond(self, line: str) -> Outcome:
        outcome = None if self.stopped or self.table is None else self._respond(line)
        if isinstance(outcome, Answer | EarlyCall):
            if outcome.id_key in self._answered:
                outcome = None  # a reused id: only the SDK can tell its two answers apart
            else:
                self._answered.add(outcome.id_key)
                if isinstance(outcome, EarlyCall):
                    self._calls.add(outcome.id_key)
        self.lines += 1
        if outcome is None or self.lines >= MAX_EARLY_LINES:
            self.stopped = True
        return outcome

    def _respond(self, line: str) -> Outcome:
        if not line.strip():
            return SILENT  # not a message; the SDK side skips it too
        message = _parse(line)
        if message is None:
            return None
        method, params = message.get("method"), message.get("params")
        if "id" not in message:
            if self.era == "handshake" and method == "notifications/initialized" and not params:
                return SILENT
            if method == "notifications/cancelled":
                return self._cancel(params)
            return None
        id_key = _id_key(message["id"])
        if id_key is None or not isinstance(method, str):
            return None
        if self.era is None:
            return self._open(id_key, method, params)
        if method == CALL_METHOD:
            return self._call(id_key, params)
        if method == READ_METHOD:
            return self._read(id_key, params)
        if self.era == "handshake":
            if method in HANDSHAKE_METHODS[1:] and not params and self.version is not None:
                return self._answer(id_key, "handshake", self.version, method)
            return None
        protocol_version = self._modern_version(params)
        if method in MODERN_METHODS and protocol_version is not None:
            return self._answer(id_key, "modern", protocol_version, method)
        return None

    def _call(self, id_key: str, params: object) -> EarlyCall | None:
        """A plain call of one of the tools: ``name`` and ``arguments`` (an object, ``null`` or
        left out), and in the 2026 era the envelope as the only ``_meta`` (a progress token,
        or anything else the SDK would act on, is the SDK's)."""
        if not isinstance(params, dict):
            return None
        name, arguments = params.get("name"), params.get("arguments")
        if name not in TOOL_NAMES or not isinstance(arguments, dict | None):
            return None
        return self._early(id_key, name, arguments or {}, params, _CALL_KEYS)

    def _read(self, id_key: str, params: object) -> EarlyCall | None:
        """A plain read of one resource: ``uri`` (a string) only, and in the 2026 era the
        envelope as the only ``_meta``."""
        if not isinstance(params, dict) or not isinstance(params.get("uri"), str):
            return None
        return self._early(id_key, READ_METHOD, {"uri": params["uri"]}, params, _READ_KEYS)

    def _early(
        self, id_key: str, name: str, arguments: dict[str, Any], params: dict[str, Any], keys: frozenset[str]
    ) -> EarlyCall | None:
        """``params`` taken early when they hold only ``keys`` (and in the 2026 era the
        envelope, as their only ``_meta``), at the version the session is served at."""
        if self.era == "handshake":
            if not params.keys() <= keys or self.version is None:
                return None
            return EarlyCall(id_key, name, arguments, self.version, modern=False)
        if not params.keys() <= keys | {"_meta"}:
            return None
        protocol_version = self._modern_version({"_meta": params.get("_meta")})
        if protocol_version is None:
            return None
        return EarlyCall(id_key, name, arguments, protocol_version, modern=True)

    def _cancel(self, params: object) -> EarlyCancel | None:
        """The cancellation of an early call (any other is the SDK's)."""
        if not isinstance(params, dict) or not params.keys() <= _CANCEL_KEYS:
            return None
        id_key = _id_key(params.get("requestId"))
        reason = params.get("reason")
        if id_key is None or id_key not in self._calls or not isinstance(reason, str | None):
            return None
        return EarlyCancel(id_key)

    def _open(self, id_key: str, method: str, params: object) -> Answer | None:
        assert self.table is not None
        if method == "initialize":
            requested = _initialize_version(params)
            if requested is None:
                return None
            # Negotiated as the SDK does: the client's version when served, else the latest.
            self.era = "handshake"
            served = requested in self.table.handshake_versions
            self.version = requested if served else self.table.latest_handshake_version
            return self._answer(id_key, "handshake", self.version, method)
        protocol_version = self._modern_version(params)
        if method in MODERN_METHODS and protocol_version is not None:
            self.era = "modern"
            return self._answer(id_key, "modern", protocol_version, method)
        return None

    def _modern_version(self, params: object) -> str | None:
        """The envelope's protocol version when params are only a well-formed envelope."""
        assert self.table is not None
        if not isinstance(params, dict) or params.keys() != {"_meta"}:
            return None
        meta = params["_meta"]
        if not isinstance(meta, dict) or not meta.keys() <= _ENVELOPE_KEYS:
            return None
        protocol_version = meta.get(PROTOCOL_VERSION_KEY)
        if protocol_version not in self.table.modern_versions or CLIENT_CAPABILITIES_KEY not in meta:
            return None
        info = meta.get(CLIENT_INFO_KEY)
        if not _capabilities_ok(meta[CLIENT_CAPABILITIES_KEY]) or not (
            info is None or _implementation_ok(info)
        ):
            return None
        return str(protocol_version)

    def server_info(self) -> dict[str, Any]:
        """The server identity the SDK stamps into a 2026-era result (needs the table)."""
        assert self.table is not None
        name = json.dumps(self.server_name, ensure_ascii=False)
        stamp: dict[str, Any] = json.loads(self.table.server_info.replace(json.dumps(NAME_PLACEHOLDER), name))
        return stamp

    def _answer(self, id_key: str, era: str, protocol_version: str, method: str) -> Answer:
        key = (era, protocol_version, method)
        result = self._results.get(key)
        if result is None:
            assert self.table is not None
            by_era = self.table.handshake if era == "handshake" else self.table.modern
            name = json.dumps(self.server_name, ensure_ascii=False)
            text = by_era[protocol_version][method].replace(json.dumps(NAME_PLACEHOLDER), name)
            result = self._results[key] = text.encode()
        frame = b'{"jsonrpc":"2.0","id":' + id_key.encode() + b',"result":' + result + b"}\n"
        return Answer(id_key=id_key, method=method, frame=frame)


def sdk_installed(version: object) -> bool:
    """Whether the installed ``mcp`` is release ``version``, found without importing it: its
    ``.dist-info`` beside the package (one stat), else the package metadata (about 30 ms
    to import, so only when the first look fails)."""
    spec = importlib.util.find_spec("mcp")
    if not isinstance(version, str) or spec is None or spec.origin is None:
        return False
    if (Path(spec.origin).parents[1] / f"mcp-{version}.dist-info").is_dir():
        return True
    from importlib import metadata

    try:
        return metadata.version("mcp") == version
    except metadata.PackageNotFoundError:
        return False


def sources_crc32() -> int | None:
    """A checksum of ``SOURCES`` (``None`` when one cannot be read)."""
    checksum = 0
    for name in SOURCES:
        try:
            checksum = zlib.crc32((PACKAGE_DIR / name).read_bytes(), checksum)
        except OSError:
            return None
    return checksum


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: the SDK's parser may read them otherwise


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("a number too large for a double")
    return value


def _parse(line: str) -> dict[str, Any] | None:
    """The message as a request or notification envelope, or ``None`` for anything unusual."""
    if _ESCAPED_SURROGATE.search(line) or line.count("[") + line.count("{") > SDK_PARSE_DEPTH:
        return None
    try:
        message = json.loads(
            line, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite
        )
    except ValueError:
        return None
    if not isinstance(message, dict) or not message.keys() <= _REQUEST_KEYS:
        return None
    if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return None
    params = message.get("params")
    return message if params is None or isinstance(params, dict) else None


def _id_key(request_id: object) -> str | None:
    """A request id as JSON text, when it is one the early path echoes exactly like the SDK."""
    if type(request_id) is int and -MAX_SAFE_ID < request_id < MAX_SAFE_ID:
        return str(request_id)
    if type(request_id) is str and _PLAIN_ID.fullmatch(request_id):
        return f'"{request_id}"'
    return None


def _initialize_version(params: object) -> str | None:
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
