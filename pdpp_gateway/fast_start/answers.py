"""Early answers: the opening requests of a stdio session, answered before the SDK has loaded.

Contract:

- ``EarlyResponder.respond(line)`` looks at one stdin line and returns an ``Answer`` (the
  whole frame to write), an ``EarlyCall`` (a tool call or a resource read for a pipeline,
  answered by ``fast_start.calls``), an ``EarlyCancel`` (the client cancelled an early call),
  ``SILENT`` (a notification that needs no answer) or ``None``: from the first ``None``
  on, it answers nothing more and the SDK must answer that line and every later one. It
  takes only what it answers with the SDK's own bytes, so it is stricter than the SDK,
  never looser. What it reads and takes is the wire kernel's: a line as
  ``wire.line.read_message`` reads it, an id ``wire.line.id_key`` echoes, a call or read
  ``wire.plain`` finds plain (the hosted fast path's rule too):

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
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

from pdpp_gateway import __version__
from pdpp_gateway.tools.specs import TOOL_NAMES
from pdpp_gateway.wire import line as wire_line
from pdpp_gateway.wire.envelope import frame
from pdpp_gateway.wire.plain import CALL_METHOD, READ_METHOD, envelope_version, initialize_version, plain

ANSWERS_PATH: Final = Path(__file__).with_name("answers.json")
PACKAGE_DIR: Final = Path(__file__).resolve().parents[1]
# The sources the answers are made from (with the SDK): editing one makes the table stale.
SOURCES: Final = ("tools/specs.py", "instructions.py", "server.py", "resources/handlers.py")
NAME_PLACEHOLDER: Final = "@@pdpp-gateway-server-name@@"
HANDSHAKE_METHODS: Final = ("initialize", "tools/list", "resources/templates/list", "ping")
MODERN_METHODS: Final = ("server/discover", "tools/list", "resources/templates/list")
MAX_EARLY_LINES: Final = 256
_CANCEL_KEYS: Final = frozenset({"requestId", "reason"})
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
        message = wire_line.read_message(line)
        if message is None:
            return None
        method, params = message["method"], message.get("params")
        if "id" not in message:
            if self.era == "handshake" and method == "notifications/initialized" and not params:
                return SILENT
            if method == "notifications/cancelled":
                return self._cancel(params)
            return None
        id_key = wire_line.id_key(message["id"])
        if id_key is None:
            return None
        if self.era is None:
            return self._open(id_key, method, params)
        if method in (CALL_METHOD, READ_METHOD):
            return self._early(id_key, method, params)
        if self.era == "handshake":
            if method in HANDSHAKE_METHODS[1:] and not params and self.version is not None:
                return self._answer(id_key, "handshake", self.version, method)
            return None
        protocol_version = self._modern_version(params)
        if method in MODERN_METHODS and protocol_version is not None:
            return self._answer(id_key, "modern", protocol_version, method)
        return None

    def _early(self, id_key: str, method: str, params: object) -> EarlyCall | None:
        """A plain call of one of the tools or a plain read (``wire.plain``: in the 2026 era
        with the envelope as its only ``_meta``), at the version the session is served at."""
        assert self.table is not None
        if self.era == "handshake":
            taken = plain(method, params, names=TOOL_NAMES, modern_versions=None)
            if taken is None or self.version is None:
                return None
            return EarlyCall(id_key, taken.name, taken.arguments, self.version, modern=False)
        taken = plain(method, params, names=TOOL_NAMES, modern_versions=self.table.modern_versions)
        if taken is None or taken.version is None:
            return None
        return EarlyCall(id_key, taken.name, taken.arguments, taken.version, modern=True)

    def _cancel(self, params: object) -> EarlyCancel | None:
        """The cancellation of an early call (any other is the SDK's)."""
        if not isinstance(params, dict) or not params.keys() <= _CANCEL_KEYS:
            return None
        id_key = wire_line.id_key(params.get("requestId"))
        reason = params.get("reason")
        if id_key is None or id_key not in self._calls or not isinstance(reason, str | None):
            return None
        return EarlyCancel(id_key)

    def _open(self, id_key: str, method: str, params: object) -> Answer | None:
        assert self.table is not None
        if method == "initialize":
            requested = initialize_version(params)
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
        return envelope_version(params["_meta"], self.table.modern_versions)

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
        return Answer(id_key=id_key, method=method, frame=frame(id_key, b"result", result))


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
