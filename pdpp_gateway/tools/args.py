"""Each tool's arguments, parsed once: typed, frozen values made by the validation stage.

Contract: ``parse_<tool>(arguments)`` runs after the tool's check ladder and its JSON
Schema accepted ``arguments`` (``mcp_gateway_middleware.ValidateArguments(parsers=...)``), so it sees
only well-typed values; it parses what needs parsing (a record handle, checked against an
explicit ``connection_id``: ``invalid_id`` or ``conflicting_connection_id`` if not; a merged
search's package cursor, ``invalid_cursor`` if it is not one of this search's) and encodes
the RS query once (``tools.encoding``: filters, expansions, projections). The value travels
as ``call.parsed``; its tool's handler, renderer and shape take it typed (``Tool[A]``,
``tools.registry``), and nothing below validation reads the raw mapping:

- Each tool's value is a ``NamedTuple`` (typed, immutable, and cheap to define on the
  stdio door's start path) whose first two fields, ``stream`` and ``connection_id``, are
  where the call reads (``Reads``): the stream it names (a handle's own for a record), and
  the connection it names (explicit, else embedded in the handle). The package fan-out
  routes by them (``reads_from``, ``package.plan``), and an error's text names them
  (``render.errors``).
- The handlers take the RS path's segments and the query; the renderers take the values
  their text names (the metric, the mode, the offset asked for, ...).
- A tool whose text proposes follow-up calls (next page, one source, fewer words) keeps
  its accepted ``arguments`` whole (whole numbers normalised), only to repeat them with
  changes (``render.common.again``): they hold what the gateway passes through untouched
  (a filter, an order), never read one by one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple, Protocol, TypeVar

from mcp_gateway_middleware import ToolCall

from pdpp_gateway.ids import RecordRef, parse_handle, resolve_connection
from pdpp_gateway.package.cursor import PackageCursor, decode, fingerprint, is_package_cursor
from pdpp_gateway.question.asked import Question
from pdpp_gateway.tools.encoding import expand_limit_pairs, filter_pairs, forward

RECORDS_PARAMS: Final = (
    "limit",
    "cursor",
    "order",
    "sort",
    "count",
    "fields",
    "expand",
    "changes_since",
    "connection_id",
)
AGGREGATE_PARAMS: Final = (
    "metric",
    "field",
    "group_by",
    "group_by_time",
    "granularity",
    "time_zone",
    "limit",
    "connection_id",
)
WINDOW_PARAMS: Final = ("offset_chars", "limit_chars", "q", "before_chars", "after_chars")
Pairs = tuple[tuple[str, str], ...]  # an RS query, encoded


class Reads(Protocol):
    """Where a call reads: what every tool's parsed arguments say first."""

    @property
    def stream(self) -> str | None: ...

    @property
    def connection_id(self) -> str | None: ...


class SchemaArgs(NamedTuple):
    stream: str | None
    connection_id: str | None
    full: bool  # detail: "full" (one stream's whole schema)
    scope: Pairs  # stream and connection_id, as the RS takes them


class RecordsArgs(NamedTuple):
    stream: str
    connection_id: str | None
    expand: tuple[str, ...]
    fields: tuple[str, ...]  # the projection asked for, empty for every granted field
    cursor: str | None
    changes_since: str | None
    query: Pairs
    arguments: Mapping[str, Any]  # as accepted, for the text's follow-up calls


class AggregateArgs(NamedTuple):
    stream: str
    connection_id: str | None
    metric: str
    field: str | None
    query: Pairs
    arguments: Mapping[str, Any]  # as accepted, for the text's follow-up calls


class SearchArgs(NamedTuple):
    stream: None  # a search names streams, not one stream
    connection_id: str | None
    mode: str | None  # None: not pinned (``retrieval.search``: the question's words, then fused)
    cursor: str | None
    package_cursor: PackageCursor | None  # ``cursor`` decoded, when it continues a merged page
    question: Question  # the query as asked, parsed once
    limit: int | None
    scope: Pairs  # the RS query but ``q``: streams, limit, cursor, connection_id, filter
    arguments: Mapping[str, Any]  # as accepted, for the text's follow-up calls

    @property
    def text(self) -> str:
        """The query as asked."""
        return self.question.text

    @property
    def words(self) -> tuple[str, ...]:
        """Its content words (``words.content_words``)."""
        return self.question.words

    @property
    def terms(self) -> tuple[str, ...]:
        """The words a text is matched against: its content words, else the query whole."""
        return self.question.terms

    def with_q(self, q: str) -> Pairs:
        """The RS query searching for ``q``."""
        return (("q", q), *self.scope)


class FetchArgs(NamedTuple):
    stream: str
    connection_id: str | None
    ref: RecordRef  # its connection resolved (explicit, else embedded)
    requested_id: str  # the id as the caller wrote it
    expand: tuple[str, ...]
    query: Pairs


class FieldArgs(NamedTuple):
    stream: str
    connection_id: str | None
    ref: RecordRef
    requested_id: str | None  # the id as the caller wrote it; None: named by stream + record_id
    field: str
    near: Question | None  # ``near`` parsed (a read aimed at the passage that answers it), else None
    offset_chars: int | None
    limit_chars: int | None
    query: Pairs


A = TypeVar("A")


def args_of(call: ToolCall[Any], kind: type[A]) -> A:
    """``call``'s parsed arguments, of the tool's own kind (anything else is a defect)."""
    parsed = call.parsed
    if not isinstance(parsed, kind):
        raise TypeError(f"{call.name} arrived without its parsed arguments ({kind.__name__})")
    return parsed


def reads_from(parsed: object) -> tuple[str | None, str | None]:
    """The stream and the connection a call's parsed arguments name (``Reads``), or neither
    (no parsed arguments: a call the validation stage refused, or has not seen)."""
    stream, connection = getattr(parsed, "stream", None), getattr(parsed, "connection_id", None)
    return (
        stream if isinstance(stream, str) else None,
        connection if isinstance(connection, str) else None,
    )


def named_stream(parsed: object) -> str | None:
    """The stream a call names as its ``stream`` argument; a record handle names a record,
    not a stream name (``requested_id``), so its stream is not this."""
    if getattr(parsed, "requested_id", None) is not None:
        return None
    return reads_from(parsed)[0]


def parse_schema(arguments: Mapping[str, Any]) -> SchemaArgs:
    return SchemaArgs(
        stream=arguments.get("stream"),
        connection_id=arguments.get("connection_id"),
        full=arguments.get("detail") == "full",
        scope=tuple(forward(arguments, ("stream", "connection_id"))),
    )


def parse_query_records(arguments: Mapping[str, Any]) -> RecordsArgs:
    return RecordsArgs(
        stream=arguments["stream"],
        connection_id=arguments.get("connection_id"),
        expand=tuple(arguments.get("expand") or ()),
        fields=tuple(arguments.get("fields") or ()),
        cursor=arguments.get("cursor"),
        changes_since=arguments.get("changes_since"),
        query=(
            *forward(arguments, RECORDS_PARAMS),
            *filter_pairs(arguments.get("filter")),
            *expand_limit_pairs(arguments.get("expand_limit")),
        ),
        arguments=arguments,
    )


def parse_aggregate(arguments: Mapping[str, Any]) -> AggregateArgs:
    return AggregateArgs(
        stream=arguments["stream"],
        connection_id=arguments.get("connection_id"),
        metric=arguments["metric"],
        field=arguments.get("field"),
        query=(*forward(arguments, AGGREGATE_PARAMS), *filter_pairs(arguments.get("filter"))),
        arguments=arguments,
    )


def parse_search(arguments: Mapping[str, Any]) -> SearchArgs:
    cursor = arguments.get("cursor")
    merged = None
    # With connection_id it continues no merged search: the fan-out refuses it, saying so.
    if is_package_cursor(cursor) and "connection_id" not in arguments:
        merged = decode(cursor, expected_fingerprint=fingerprint(arguments))
    return SearchArgs(
        stream=None,
        connection_id=arguments.get("connection_id"),
        mode=arguments.get("mode"),
        cursor=cursor,
        package_cursor=merged,
        question=Question.parse(arguments["query"]),
        limit=arguments.get("limit"),
        scope=(
            *forward(arguments, ("streams", "limit", "cursor", "connection_id")),
            *filter_pairs(arguments.get("filter")),
        ),
        arguments=arguments,
    )


def parse_fetch(arguments: Mapping[str, Any]) -> FetchArgs:
    ref = _resolved(arguments)
    return FetchArgs(
        stream=ref.stream,
        connection_id=ref.connection_id,
        ref=ref,
        requested_id=arguments["id"],
        expand=tuple(arguments.get("expand") or ()),
        query=(
            *forward(arguments, ("fields", "expand")),
            *expand_limit_pairs(arguments.get("expand_limit")),
            *([("connection_id", ref.connection_id)] if ref.connection_id else []),
        ),
    )


def parse_read_record_field(arguments: Mapping[str, Any]) -> FieldArgs:
    requested_id = arguments.get("id")
    if requested_id is not None:
        ref = _resolved(arguments)
    else:  # stream + record_id, each a safe segment (the ladder checked them)
        ref = RecordRef(arguments["stream"], arguments["record_id"], arguments.get("connection_id"))
    return FieldArgs(
        stream=ref.stream,
        connection_id=ref.connection_id,
        ref=ref,
        requested_id=requested_id,
        field=arguments["field"],
        near=Question.parse(arguments["near"]) if "near" in arguments else None,
        offset_chars=arguments.get("offset_chars"),
        limit_chars=arguments.get("limit_chars"),
        query=(
            *([("connection_id", ref.connection_id)] if ref.connection_id else []),
            ("field", arguments["field"]),
            *forward(arguments, WINDOW_PARAMS),
        ),
    )


def _resolved(arguments: Mapping[str, Any]) -> RecordRef:
    """The handle ``id``, its connection resolved against an explicit ``connection_id``."""
    ref = parse_handle(arguments["id"])
    connection = resolve_connection(ref, arguments.get("connection_id"))
    return RecordRef(stream=ref.stream, record_id=ref.record_id, connection_id=connection)
