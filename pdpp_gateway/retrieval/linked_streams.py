"""Streams linked by a foreign key in the grant's schema: a mail's message, its body, its sender.

A connector's streams name each other by fields ``<singular of a stream>_id``: a
``message_bodies`` record names its message by ``message_id``. Client tokens cannot expand
or filter, so the gateway follows such a link only by reading the field and then the
record it names. Everything here reads the grant's compact schema (``/v1/schema``, compact
or full, narrowed to one connection); no I/O.

Contract:

- ``body_streams(schema, stream, connection_id)``: the streams of the connector of
  ``stream`` (readable through ``connection_id``), other than ``stream``, with a granted
  field ``<singular of stream>_id`` and a searchable text field (flag ``role=text``, else
  ``lex``, no title or metadata; a schema whose flags say nothing, as the reference's
  ``declared``, leaves the field to a search's ``matched_fields``): the bodies of its
  records, each with ``key``, that field. Each is ``whole`` (one record holds a record's whole
  text: a mail's body) unless
  ``stream``'s row declares its relation to it ``has_many`` in ``expand_capabilities`` (the
  parts of a thread: an issue's comments, a conversation's messages; ``retrieval.threads``).
- ``origin_fields(schema, stream, connection_id)``: who and when a record of ``stream``
  says it comes from: its granted fields with the role ``metadata`` or ``actor`` (a
  sender's name and address), then its ``event-time`` field, else its first field typed
  ``date-time`` or ``timestamp``, and its ``title`` or ``primary-title`` field apart;
  ``None`` when no field has such a role (a schema that declares no roles, as the
  reference's today, names no origin: field names are never guessed).
- ``text_field_of(schema, stream, connection_id)``: the long text field of a stream's records
  (as ``body_streams`` finds a body's), ``None`` when the schema's flags do not say.
- ``reply_link(schema, stream, connection_id)``: how ``stream``'s records reply to each other
  in threads, as a chat's messages do: a granted ``thread_ts`` (Slack's convention: a reply
  names its thread's first message by that message's ``ts``; by its record id when the stream
  has no ``ts``, as the sandbox's), else a granted ``parent_id`` (``direct``: a conversation's
  turn names the turn it answers by its id, as the reference's ChatGPT messages do; its
  ``speaker`` is the field flagged as who wrote a turn, ``role=actor`` or ``role=metadata``),
  and the messages' text field (flagged ``role=text``, else their title: the reference flags a
  Slack message's text and a ChatGPT turn's content as their primary title); ``None``
  otherwise.
- ``parent_link(schema, stream, connection_id)``: the stream whose records ``stream``'s
  records belong to and the field naming them: a granted ``<x>_id`` field of ``stream``
  whose stream (``<x>s``, or ``<x>`` ending in y as ``ies``) is granted in the same
  connector and has origin fields (the first such, in field order); ``None`` otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pdpp_gateway.render.common import as_mapping
from pdpp_gateway.schema_view import compact_projection, unwrap_schema

# field roles, in this gateway's flags and in the reference's declared vocabulary
# (``x_pdpp_role``: primary-title, actor, event-time), and the types of a moment
_ACTOR: Final = frozenset({"role=metadata", "role=actor"})
_TITLE: Final = frozenset({"role=title", "role=primary-title"})
_TIME_TYPES: Final = frozenset({"t=date-time", "t=timestamp"})


@dataclass(frozen=True, slots=True)
class BodyStream:
    name: str
    text_field: str | None  # its long text field, None when the schema's flags do not say
    key: str  # its field naming the parent record (message_id)
    whole: bool = True  # one record of it holds a parent's whole text (has_one), not a thread's part


@dataclass(frozen=True, slots=True)
class OriginFields:
    title: str | None  # the record's title field (a mail's subject), if any
    fields: tuple[str, ...]  # its metadata fields, then its first date-time field


@dataclass(frozen=True, slots=True)
class ParentLink:
    stream: str  # the parent's stream
    key: str  # the field of the child naming the parent's id
    origin: OriginFields  # the parent's


def body_streams(schema: Mapping[str, Any] | None, stream: str, connection_id: str) -> list[BodyStream]:
    """The granted streams that hold the long text of ``stream``'s records (see the contract)."""
    rows = _connector_rows(schema, stream, connection_id)
    own = next((row for row in rows if row.get("name") == stream), {})
    many = {  # the streams its row declares a has_many relation to
        as_mapping(relation).get("target_stream")
        for relation in own.get("expand_capabilities") or ()
        if as_mapping(relation).get("cardinality") == "has_many"
    }
    key = f"{_singular(stream)}_id"
    found = []
    for name, flags in ((str(row.get("name")), _flags(row)) for row in rows):
        if name == stream or key not in flags or "g=false" in flags[key]:
            continue
        text = _text_field(flags)
        if text is not None or all(value == ["declared"] for value in flags.values()):
            found.append(BodyStream(name, text, key, name not in many))
    return found


def origin_fields(schema: Mapping[str, Any] | None, stream: str, connection_id: str) -> OriginFields | None:
    """The fields that say who sent a record of ``stream`` and when (see the contract)."""
    return _origin(_rows(schema, stream, connection_id).get(stream) or {})


@dataclass(frozen=True, slots=True)
class ReplyLink:
    key: str  # the field a reply names its thread's first message by (thread_ts), or the one it answers
    head: str | None  # the field of that first message it names (ts); None: its record id
    text: str  # the messages' text field
    direct: bool = False  # its key names the message it answers (parent_id), not its thread's first
    speaker: str | None = None  # a direct link's field saying who wrote a message (a turn's role)


# a reply's field -> the field of the message it names (None: its id), whether that is the one it answers
_REPLY_KEYS: Final = {"thread_ts": ("ts", False), "parent_id": (None, True)}


def reply_link(schema: Mapping[str, Any] | None, stream: str, connection_id: str) -> ReplyLink | None:
    """How ``stream``'s records reply to each other in threads (see the contract)."""
    flags = _rows(schema, stream, connection_id).get(stream) or {}
    granted = _granted(flags)
    text = next(
        (name for wanted in ({"role=text"}, _TITLE) for name, parts in granted.items() if parts & wanted),
        None,
    )
    speaker = next(iter(_actors(granted)), None)
    for key, (head, direct) in _REPLY_KEYS.items():
        if key in granted and text is not None:
            return ReplyLink(
                key, head if head in granted else None, text, direct, speaker if direct else None
            )
    return None


def parent_link(schema: Mapping[str, Any] | None, stream: str, connection_id: str) -> ParentLink | None:
    """The stream ``stream``'s records belong to, and the field naming it (see the contract)."""
    rows = _rows(schema, stream, connection_id)
    for field, flags in (rows.get(stream) or {}).items():
        if not field.endswith("_id") or "g=false" in flags:
            continue
        base = field.removesuffix("_id")
        names = [f"{base}s", f"{base[:-1]}ies"] if base.endswith("y") else [f"{base}s"]
        for name in names:
            origin = _origin(rows[name]) if name in rows and name != stream else None
            if origin is not None:
                return ParentLink(name, field, origin)
    return None


def text_field_of(schema: Mapping[str, Any] | None, stream: str, connection_id: str) -> str | None:
    """The long text field of ``stream`` in the grant's schema (``role=text``, else a lexically
    searchable field that is no title or metadata), ``None`` when the schema does not say."""
    flags = _rows(schema, stream, connection_id).get(stream)
    return None if flags is None else _text_field(flags)


def _singular(stream: str) -> str:
    if stream.endswith("ies"):
        return stream[:-3] + "y"
    return stream[:-1] if stream.endswith("s") else stream


def _rows(
    schema: Mapping[str, Any] | None, stream: str, connection_id: str
) -> dict[str, dict[str, list[str]]]:
    """The streams of ``stream``'s connector through ``connection_id``: each field's flags."""
    return {str(row.get("name")): _flags(row) for row in _connector_rows(schema, stream, connection_id)}


def _connector_rows(
    schema: Mapping[str, Any] | None, stream: str, connection_id: str
) -> list[Mapping[str, Any]]:
    """The compact rows of ``stream``'s connector through ``connection_id`` (none without it)."""
    if schema is None:
        return []
    document = compact_projection(unwrap_schema(schema), connection_id=connection_id)
    for connector in document.get("connectors") or ():
        rows = [as_mapping(row) for row in connector.get("streams") or ()]
        if any(row.get("name") == stream for row in rows):
            return rows
    return []


def _flags(row: Mapping[str, Any]) -> dict[str, list[str]]:
    return {
        str(name): str(value).split(",") for name, value in as_mapping(row.get("field_capabilities")).items()
    }


def _granted(flags: Mapping[str, list[str]]) -> dict[str, set[str]]:
    """The granted fields of a stream's row, each with its flags."""
    return {name: set(parts) for name, parts in flags.items() if "g=false" not in parts}


def _actors(granted: Mapping[str, set[str]]) -> list[str]:
    """The granted fields that say who wrote a record (a sender, a turn's role), in field order."""
    return [name for name, parts in granted.items() if parts & _ACTOR]


def _origin(flags: Mapping[str, list[str]]) -> OriginFields | None:
    granted = _granted(flags)
    actors = _actors(granted)
    if not actors:
        return None
    times = [name for name, parts in granted.items() if "role=event-time" in parts]
    times += [name for name, parts in granted.items() if parts & _TIME_TYPES and name not in times]
    title = next((name for name, parts in granted.items() if parts & _TITLE), None)
    return OriginFields(title, (*actors, *times[:1]))


def _text_field(flags: Mapping[str, Iterable[str]]) -> str | None:
    """A stream's long text field: ``role=text`` first, else any lexically searchable field
    that is no title or metadata."""
    for wanted in ("role=text", "lex"):
        for name, parts in flags.items():
            kept = set(parts)
            if wanted in kept and not {"role=title", "role=metadata"} & kept:
                return name
    return None
