"""PDPP-specific argument checks, run before the JSON Schema and before any RS call.

Each check takes the raw arguments (any JSON) and returns a typed ``ToolError`` that
tells the caller what to send instead, or ``None``. They exist where the schema alone
would give a vague answer (a string ``filter``), where arguments depend on each other
(``group_by`` XOR ``group_by_time``), and where a value could widen or redirect a read
(path segments with traversal). A record handle is parsed, and checked against an explicit
``connection_id``, once, by the tool's parser after the schema (``tools/args``).

``check_sizes`` runs first in every ladder: it applies the size caps of the tool's
input schema (``maxLength``, ``maxItems``, ``maxProperties``) and the filter's own
caps, so no later check (nor its message) ever handles a megabyte argument, and the
refusal names the argument, its size and the limit without echoing the value.

``<TOOL>_CHECKS`` is each tool's ladder, named in its ``Tool`` record (``tools/registry``);
``mcp_gateway_middleware.ValidateArguments`` runs it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from mcp_gateway_middleware import Check, ToolError, echo, gateway_error

from pdpp_gateway.ids import segment_problem
from pdpp_gateway.question.words import content_words
from pdpp_gateway.tools.specs import (
    MAX_FILTER_VALUE_CHARS,
    MAX_NAME_CHARS,
    JSONObject,
)

RANGE_OPERATORS: Final = ("gte", "gt", "lte", "lt")
_FILTER_EXAMPLE = 'filter: {"field": "value"} or filter: {"created_at": {"gte": "2026-01-01T00:00:00Z"}}'


_SIZE_HINTS: Final = {
    "cursor": "pass next_cursor exactly as the previous page returned it",
    "changes_since": 'pass "beginning" or next_changes_since exactly as returned',
    "query": "shorten the search text to its key terms",
    "q": "search for a shorter literal snippet",
    "id": "pass the id exactly as search or query_records returned it",
    "fields": "list only the fields you need, or omit fields to get every granted field",
    "streams": "omit streams to search every granted stream",
    "filter": "filter on fewer fields, then narrow further in a second call",
}


def check_sizes(input_schema: JSONObject) -> Check:
    """The size caps of a tool's input schema, checked before anything else looks at a value."""
    properties: Mapping[str, JSONObject] = input_schema.get("properties", {})

    def too_big(param: str, measured: str, limit: str) -> ToolError:
        hint = _SIZE_HINTS.get(param, "shorten it")
        return gateway_error(
            "invalid_arguments",
            f"argument '{param}' {measured}; at most {limit} accepted: {hint}.",
            param=param,
        )

    def check(arguments: Mapping[str, Any]) -> ToolError | None:
        for param, value in arguments.items():
            spec = properties.get(param)
            if spec is None:
                continue  # unknown arguments are the schema's to refuse
            if isinstance(value, str) and len(value) > spec.get("maxLength", math.inf):
                return too_big(param, f"is {len(value):,} characters long", f"{spec['maxLength']:,} are")
            if isinstance(value, list):
                if len(value) > spec.get("maxItems", math.inf):
                    return too_big(param, f"has {len(value):,} items", f"{spec['maxItems']:,} are")
                cap = (spec.get("items") or {}).get("maxLength", math.inf)
                longest = max((len(v) for v in value if isinstance(v, str)), default=0)
                if longest > cap:
                    return too_big(param, f"has an item {longest:,} characters long", f"{cap:,} are")
            if isinstance(value, Mapping):
                if len(value) > spec.get("maxProperties", math.inf):
                    return too_big(param, f"has {len(value):,} keys", f"{spec['maxProperties']:,} are")
                longest = max((len(str(key)) for key in value), default=0)
                if longest > MAX_NAME_CHARS:
                    return too_big(param, f"has a key {longest:,} characters long", f"{MAX_NAME_CHARS} are")
                if param == "filter":
                    longest = max((len(v) for v in _filter_strings(value)), default=0)
                    if longest > MAX_FILTER_VALUE_CHARS:
                        return too_big(
                            param,
                            f"has a value {longest:,} characters long",
                            f"{MAX_FILTER_VALUE_CHARS:,} are",
                        )
        return None

    return check


def _filter_strings(value: Mapping[str, Any]) -> list[str]:
    strings: list[str] = []
    for spec in value.values():
        bounds = spec.values() if isinstance(spec, Mapping) else [spec]
        strings.extend(bound for bound in bounds if isinstance(bound, str))
    return strings


def check_filter(arguments: Mapping[str, Any]) -> ToolError | None:
    """``filter`` must be a non-empty typed object of field -> scalar | range object."""
    if "filter" not in arguments:
        return None
    value = arguments["filter"]

    def bad(message: str) -> ToolError:
        return gateway_error(
            "invalid_filter", f"{message} Use the typed filter object: {_FILTER_EXAMPLE}.", param="filter"
        )

    if isinstance(value, str):
        return bad(
            "filter must be an object, not a string; bracket syntax and query strings are not accepted."
        )
    if not isinstance(value, Mapping):
        return bad("filter must be an object.")
    if not value:
        return bad("filter must name at least one field; omit filter to read unfiltered.")
    for field, spec in value.items():
        if not field or "[" in field or "]" in field:
            return bad(
                f"filter field {echo(field)} must be a plain field name from schema(stream), not bracket syntax."
            )
        if isinstance(spec, Mapping):
            if not spec:
                return bad(f"filter range on {echo(field)} must use at least one of gte, gt, lte, lt.")
            for op, bound in spec.items():
                if op not in RANGE_OPERATORS:
                    return bad(
                        f"unsupported range operator {echo(op)} on {echo(field)}; supported: gte, gt, lte, lt."
                    )
                if isinstance(bound, bool) or not _is_scalar(bound):
                    return bad(f"filter bound {echo(field)}.{op} must be a string or number.")
                if _non_finite(bound):
                    return bad(f"filter bound {echo(field)}.{op} must be a finite number, not {echo(bound)}.")
        elif not _is_scalar(spec):
            return bad(f"filter value for {echo(field)} must be a string, number, boolean or range object.")
        elif _non_finite(spec):
            return bad(f"filter value for {echo(field)} must be a finite number, not {echo(spec)}.")
    return None


def check_expand_limit(arguments: Mapping[str, Any]) -> ToolError | None:
    """``expand_limit`` must be a non-empty object of relation -> positive integer, for expanded relations."""
    if "expand_limit" not in arguments:
        return None
    value = arguments["expand_limit"]
    example = 'expand: ["messages"], expand_limit: {"messages": 3}'
    if not isinstance(value, Mapping) or not value:
        return gateway_error(
            "invalid_expand",
            f"expand_limit must be a non-empty object keyed by relation name, e.g. {example}; "
            "omit it when not capping children.",
            param="expand_limit",
        )
    expanded = arguments.get("expand")
    expanded_names = (
        {name for name in expanded if isinstance(name, str)} if isinstance(expanded, list) else set()
    )
    for relation, limit in value.items():
        if not relation or "[" in relation or "]" in relation:
            return gateway_error(
                "invalid_expand",
                f"expand_limit relation {echo(relation)} must be a relation name, not bracket syntax, "
                f"e.g. {example}.",
                param="expand_limit",
            )
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return gateway_error(
                "invalid_expand",
                f"expand_limit[{relation}] must be a positive integer.",
                param="expand_limit",
            )
        if relation not in expanded_names:
            return gateway_error(
                "invalid_expand",
                f"expand_limit names {echo(relation)}, which is not in expand; "
                "add it to expand or drop the limit.",
                param="expand_limit",
            )
    return None


def safe_names(*params: str) -> Check:
    """Each named argument (a string, or a list of strings) must be a safe path segment."""

    def check(arguments: Mapping[str, Any]) -> ToolError | None:
        for param in params:
            value = arguments.get(param)
            items: Sequence[Any] = value if isinstance(value, list) else [value]
            if value is None:
                continue
            for item in items:
                if not isinstance(item, str):
                    continue  # the schema reports the type
                problem = segment_problem(item)
                if problem is not None:
                    return gateway_error(
                        "invalid_arguments",
                        f"{param} {problem}; pass a plain name exactly as schema() lists it.",
                        param=param,
                    )
        return None

    return check


def check_fields_list(arguments: Mapping[str, Any]) -> ToolError | None:
    """Projection fields are separate array items, never a comma-joined string."""
    value = arguments.get("fields")
    if isinstance(value, list):
        for item in value:
            if isinstance(item, str) and "," in item:
                return gateway_error(
                    "invalid_arguments",
                    f"fields item {echo(item)} contains ','; pass each field as its own array item.",
                    param="fields",
                )
    return safe_names("fields")(arguments)


def check_schema_detail(arguments: Mapping[str, Any]) -> ToolError | None:
    """``detail: "full"`` is only for one stream: the global full schema can be megabytes."""
    if arguments.get("detail") == "full" and not arguments.get("stream"):
        return gateway_error(
            "invalid_arguments",
            'detail: "full" needs stream; call schema() for the index, then schema(stream, detail: "full").',
            param="detail",
        )
    return None


def check_changes_since(arguments: Mapping[str, Any]) -> ToolError | None:
    """Incremental sync has its own fixed order; sort, order and count do not combine with it."""
    if "changes_since" not in arguments:
        return None
    clashing = [name for name in ("order", "sort", "count") if name in arguments]
    if clashing:
        return gateway_error(
            "invalid_arguments",
            f"changes_since cannot be combined with {', '.join(clashing)}; drop them for incremental reads.",
            param=clashing[0],
        )
    return None


def check_aggregate_shape(arguments: Mapping[str, Any]) -> ToolError | None:
    """One grouping dimension; granularity goes with group_by_time; field goes with non-count metrics."""
    metric = arguments.get("metric")
    by_field, by_time = "group_by" in arguments, "group_by_time" in arguments
    if by_field and by_time:
        return gateway_error(
            "invalid_arguments",
            "Group by exactly one dimension: group_by (a field) or group_by_time (a date field), not both.",
            param="group_by_time",
        )
    if by_time and "granularity" not in arguments:
        return gateway_error(
            "invalid_arguments",
            "group_by_time needs granularity (minute, hour, day, week, month, quarter or year).",
            param="granularity",
        )
    if "granularity" in arguments and not by_time:
        return gateway_error(
            "invalid_arguments", "granularity only applies with group_by_time.", param="granularity"
        )
    if "time_zone" in arguments and not by_time:
        return gateway_error(
            "invalid_arguments", "time_zone only applies with group_by_time.", param="time_zone"
        )
    if "limit" in arguments and not (by_field or by_time):
        return gateway_error(
            "invalid_arguments",
            "limit caps groups; it only applies with group_by or group_by_time.",
            param="limit",
        )
    if (by_field or by_time) and metric not in (None, "count"):
        return gateway_error("invalid_arguments", "Grouping works with metric count only.", param="metric")
    if metric in ("sum", "min", "max", "count_distinct") and "field" not in arguments:
        return gateway_error("invalid_arguments", f"metric {metric} needs field.", param="field")
    if metric == "count" and "field" in arguments:
        return gateway_error(
            "invalid_arguments",
            "metric count takes no field; use count_distinct to count distinct values.",
            param="field",
        )
    return None


def check_search_paging(arguments: Mapping[str, Any]) -> ToolError | None:
    """Hybrid search never pages, and an RS filter on search needs exactly one stream."""
    if arguments.get("mode") == "hybrid" and "cursor" in arguments:
        return gateway_error(
            "invalid_arguments",
            "hybrid search does not page; drop cursor or use mode lexical or semantic.",
            param="cursor",
        )
    streams = arguments.get("streams")
    if "filter" in arguments and not (isinstance(streams, list) and len(streams) == 1):
        return gateway_error(
            "invalid_filter",
            "A search filter applies to one stream: pass streams with exactly one name.",
            param="streams",
        )
    return None


def check_field_window_selectors(arguments: Mapping[str, Any]) -> ToolError | None:
    """One record identity form, and compatible window selectors."""

    def bad(message: str, param: str) -> ToolError:
        return gateway_error("invalid_field_window_selector", message, param=param)

    triple = [name for name in ("stream", "record_id") if name in arguments]
    if "id" in arguments:
        if triple:
            return bad("Pass either id or stream + record_id (with connection_id), not both.", triple[0])
    elif len(triple) < 2:
        return bad(
            "read_record_field needs id, or stream + record_id (plus connection_id when shared).", "id"
        )
    if "q" in arguments and "offset_chars" in arguments:
        return bad("q finds the first match; it cannot be combined with offset_chars.", "q")
    if "near" in arguments:
        other = next((name for name in ("q", "offset_chars") if name in arguments), None)
        if other is not None:
            return bad(f"near finds the best passage itself; it cannot be combined with {other}.", "near")
        if not content_words(str(arguments["near"])):
            return bad(
                "near needs words that say what to find (not only words like 'what' or 'the').", "near"
            )
    for name in ("before_chars", "after_chars"):
        if name in arguments and "q" not in arguments:
            return bad(f"{name} sets context around a q match; pass q too, or use offset_chars.", name)
    return None


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and value is not None


def _non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def check_search_query(arguments: Mapping[str, Any]) -> ToolError | None:
    """A search needs words: an empty or whitespace-only query would only bounce off the RS."""
    query = arguments.get("query")
    if isinstance(query, str) and not query.strip():
        return gateway_error(
            "invalid_arguments",
            "argument 'query' is blank; pass the words to search for, e.g. search(query: \"lisbon invoice\"). "
            "To browse without text, use query_records.",
            param="query",
        )
    return None


# Each tool's ladder (its ``Tool`` record, ``tools/registry.py``, puts ``check_sizes`` first).
SCHEMA_CHECKS: Final = (safe_names("stream", "connection_id"), check_schema_detail)
QUERY_RECORDS_CHECKS: Final = (
    safe_names("stream", "connection_id", "expand"),
    check_fields_list,
    check_filter,
    check_expand_limit,
    check_changes_since,
)
AGGREGATE_CHECKS: Final = (
    safe_names("stream", "connection_id", "field", "group_by", "group_by_time"),
    check_filter,
    check_aggregate_shape,
)
SEARCH_CHECKS: Final = (
    check_search_query,
    safe_names("streams", "connection_id"),
    check_filter,
    check_search_paging,
)
FETCH_CHECKS: Final = (
    safe_names("connection_id", "expand"),
    check_fields_list,
    check_expand_limit,
)
READ_RECORD_FIELD_CHECKS: Final = (
    safe_names("connection_id", "stream", "record_id", "field"),
    check_field_window_selectors,
)
