"""Record handles: the ids that search shows and fetch / read_record_field accept.

Grammar (the spec's "self-contained result ids"):

- self-contained: ``{connection_id}/{stream}:{record_id}``
- legacy:         ``{stream}:{record_id}``
- URI:            ``pdpp://record/{base64url(JSON {"v":1,"kind":"record","connection_id",
                  "stream","record_id"})}`` or ``pdpp://record/{percent-encoded id}``

``/`` is reserved as the connection separator: it is refused inside every segment, so
a ``/`` unambiguously marks the self-contained form. The stream ends at the first
``:``; a record id may contain further ``:`` (compound keys). Every segment is checked
against traversal (``..``, ``\\``, ``/``, control characters) before any upstream call;
a bad handle raises a typed ``invalid_id`` ``ToolError``.

``format_handle`` never wraps what could not be parsed back: a connection id that
contains ``/`` or ``:`` or a segment that fails the checks leaves the legacy form
(or the base id) unchanged; ``handle_arguments`` then adds ``connection_id`` next to
the id, so a continuation never drops the source.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Final
from urllib.parse import quote, unquote

import orjson
from mcp_gateway_middleware import ToolError, echo, gateway_error

RECORD_URI_PREFIX = "pdpp://record/"
MAX_SEGMENT_CHARS = 512
_FORMS = "use connection_id/stream:record_id (as shown by search) or stream:record_id"


@dataclass(frozen=True, slots=True)
class RecordRef:
    """A parsed record handle."""

    stream: str
    record_id: str
    connection_id: str | None = None

    @property
    def handle(self) -> str:
        """The self-contained id when a connection is known, else the legacy id."""
        return format_handle(self.stream, self.record_id, self.connection_id)

    @property
    def uri(self) -> str:
        """A ``pdpp://record/`` URI readable as an MCP resource."""
        return RECORD_URI_PREFIX + quote(self.handle, safe="")


_CONTROL_CHARS: Final = re.compile(r"[\x00-\x1f\x7f]")


def segment_problem(value: object) -> str | None:
    """Why ``value`` cannot be an id segment (stream, record id, connection id), or None."""
    if not isinstance(value, str) or not value:
        return "is empty"
    if len(value) > MAX_SEGMENT_CHARS:
        return f"is longer than {MAX_SEGMENT_CHARS} characters"
    if value in {".", ".."} or ".." in value:
        return "contains '..'"
    if "/" in value or "\\" in value:
        return "contains a path separator"
    if not value.isprintable() and _CONTROL_CHARS.search(value):  # control chars are never printable
        return "contains control characters"
    return None


def check_segment(value: object, label: str, *, param: str) -> str:
    """Return ``value`` if it is a safe segment, else raise ``invalid_id``."""
    problem = segment_problem(value)
    if problem is not None:
        raise gateway_error("invalid_id", f"{label} {problem}; {_FORMS}.", param=param)
    assert isinstance(value, str)
    return value


def parse_handle(raw: object, *, param: str = "id") -> RecordRef:
    """Parse any accepted record handle form, or raise ``invalid_id``."""
    if not isinstance(raw, str) or not raw.strip():
        raise gateway_error("invalid_id", f"{param} is required; {_FORMS}.", param=param)
    if raw.startswith(RECORD_URI_PREFIX):
        return _parse_uri(raw[len(RECORD_URI_PREFIX) :], param=param)
    return _parse_plain(raw, param=param)


def _parse_plain(raw: str, *, param: str) -> RecordRef:
    connection_id: str | None = None
    rest = raw
    if "/" in raw:
        connection_part, rest = raw.split("/", 1)
        connection_id = check_segment(connection_part, "the connection part of the id", param=param)
        if "/" in rest:
            raise gateway_error(
                "invalid_id", f"{param} has more than one '/' separator; {_FORMS}.", param=param
            )
    stream, sep, record_id = rest.partition(":")
    if not sep or not stream or not record_id:
        raise gateway_error(
            "invalid_id", f"{param} {echo(raw)} is not a record handle; {_FORMS}.", param=param
        )
    check_segment(stream, "the stream part of the id", param=param)
    check_segment(record_id, "the record part of the id", param=param)
    return RecordRef(stream=stream, record_id=record_id, connection_id=connection_id)


def _parse_uri(encoded: str, *, param: str) -> RecordRef:
    decoded = _decode_base64_handle(encoded)
    if decoded is not None:
        if decoded.get("v") != 1 or decoded.get("kind") != "record":
            raise gateway_error(
                "invalid_id", "pdpp://record/ handle has the wrong kind or version.", param=param
            )
        connection_id = decoded.get("connection_id")
        return RecordRef(
            stream=check_segment(decoded.get("stream"), "the stream of the handle", param=param),
            record_id=check_segment(decoded.get("record_id"), "the record id of the handle", param=param),
            connection_id=None
            if connection_id is None
            else check_segment(connection_id, "the connection of the handle", param=param),
        )
    return _parse_plain(unquote(encoded), param=param)


def _decode_base64_handle(encoded: str) -> dict[str, object] | None:
    if not encoded or any(ch in encoded for ch in "%:/"):
        return None
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        value = orjson.loads(raw)
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def format_handle(stream: str, record_id: str, connection_id: str | None = None) -> str:
    """``{connection_id}/{stream}:{record_id}`` when it parses back, else ``{stream}:{record_id}``."""
    if connection_id and _source_fits(connection_id, stream) and segment_problem(record_id) is None:
        return f"{connection_id}/{stream}:{record_id}"
    return f"{stream}:{record_id}"


def _source_fits(connection_id: str, stream: str) -> bool:
    """Whether a handle can embed this connection and stream."""
    # Longer ones never fit (segment_problem); the cache then holds short strings only.
    short = len(connection_id) <= MAX_SEGMENT_CHARS and len(stream) <= MAX_SEGMENT_CHARS
    return short and _short_source_fits(connection_id, stream)


@lru_cache(maxsize=1024)
def _short_source_fits(connection_id: str, stream: str) -> bool:
    """``_source_fits`` for segments of at most ``MAX_SEGMENT_CHARS`` (cached: a page repeats them)."""
    return (
        ":" not in connection_id
        and segment_problem(connection_id) is None
        and segment_problem(stream) is None
    )


def handle_arguments(stream: str, record_id: str, connection_id: str | None = None) -> dict[str, str]:
    """The arguments naming one record in fetch / read_record_field calls.

    ``{"id": <self-contained handle>}`` when the connection fits in the handle, else the
    legacy handle plus ``"connection_id"`` (never a bare legacy id that loses the source).
    """
    if connection_id and _source_fits(connection_id, stream) and segment_problem(record_id) is None:
        return {"id": f"{connection_id}/{stream}:{record_id}"}  # format_handle's self-contained form
    handle = f"{stream}:{record_id}"
    arguments = {"id": handle}
    if connection_id and not handle.startswith(f"{connection_id}/"):
        arguments["connection_id"] = connection_id
    return arguments


def resolve_connection(ref: RecordRef, explicit: object, *, param: str = "connection_id") -> str | None:
    """The connection to read ``ref`` from; a conflicting explicit argument is an error."""
    if explicit is None:
        return ref.connection_id
    if ref.connection_id is not None and explicit != ref.connection_id:
        raise ToolError(
            {
                "type": "invalid_request_error",
                "code": "conflicting_connection_id",
                "message": f"The id embeds connection_id {echo(ref.connection_id)} but the connection_id "
                f"argument is {echo(explicit)}. Pass the self-contained id alone, or make both agree.",
                "param": param,
            }
        )
    return check_segment(explicit, "connection_id", param=param)
