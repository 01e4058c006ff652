"""Text helpers shared by the renderers: bounded, copyable, never a dump.

Contract: ``as_mapping`` treats anything but an object as empty; ``clip`` cuts to a
length with a visible ellipsis; ``call_text`` prints a tool call as ``tool {json}``
(models copy the JSON object as the arguments); ``again`` is a call's accepted arguments
repeated with changes (a follow-up call keeps whatever the caller passed, in its order);
``preview_value`` shortens long strings
inside a value with an explicit ``…[+N chars]`` marker and replaces blob references by
their metadata and readable ``pdpp://blob/`` URI, reporting which fields were
shortened; ``fit_rows`` lays out a list so every item is listed (detailed first, then
one-line rows) within a budget, or reports how many fit so the caller can say which
are left out; ``kv`` formats ``key=value`` with strings JSON-quoted only when they
contain spaces or quotes; ``merged_note`` is the one line every tool uses when its
answer merged several connections holding one stream name (which, what that did to the
answer, and the call that reads one source; each connection's label clipped);
``warning_lines`` lists an RS's warnings within a bound (the first few in full, the
rest counted with their distinct codes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from pdpp_gateway.documents import blob_uri, is_blob_ref

MERGED_LISTED: Final = 6
MAX_WARNINGS_SHOWN: Final = 5
_MAX_CONNECTION_LABEL: Final = 120
# Structured output key: the connections an answer merged because no connection_id narrowed it.
MERGED_CONNECTIONS: Final = "merged_connections"
# Structured output key: the mode that answered a search, when not the one asked (``search``).
RETRIEVAL: Final = "retrieval"
NO_RECORD_HAS_EVERY_WORD: Final = "no record holds every word of the query"  # a fused answer's why
WORDS_AND_MEANING: Final = "records holding the words and records near the meaning"  # the other why
FEWER_WORDS_AND_MEANING: Final = "the question's most distinctive words and its meaning"  # a long question's


def as_mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (tolerates junk from upstream)."""
    return value if type(value) is dict or isinstance(value, Mapping) else {}  # exact dict: no ABC check


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def call_text(tool: str, arguments: Mapping[str, Any]) -> str:
    return f"{tool} {orjson.dumps(arguments if type(arguments) is dict else dict(arguments)).decode()}"


def again(arguments: Mapping[str, Any], *, without: tuple[str, ...] = (), **changes: Any) -> dict[str, Any]:
    """``arguments`` less ``without``, with ``changes`` (a changed argument keeps its place)."""
    return {key: value for key, value in arguments.items() if key not in without} | changes


def kv(key: str, value: Any) -> str:
    if isinstance(value, str) and (not value or any(ch in value for ch in ' "\n=;')):
        return f"{key}={dumps(value)}"
    if isinstance(value, bool):
        return f"{key}={'true' if value else 'false'}"
    if value is None:
        return f"{key}=null"
    return f"{key}={value}"


def preview_value(
    value: Any,
    max_string: int,
    long_fields: list[tuple[str, int]],
    path: str = "",
    *,
    connection_id: str | None = None,
) -> Any:
    """``value`` with long strings shortened and blobs summarised; records what was cut.

    A blob becomes ``{"blob": <media type>, "size_bytes": n, "uri": "pdpp://blob/..."}``:
    the URI is the readable resource holding its bytes. An object with nothing to cut is
    returned as it is (not copied): callers only serialise the result."""
    if type(value) is dict:
        if "blob_id" not in value and "fetch_url" not in value and _all_unchanged(value, max_string):
            return value  # the usual record: nothing to shorten, no copy
    elif _unchanged(value, max_string):
        return value
    if isinstance(value, str):
        long_fields.append((path, len(value)))
        return f"{value[:max_string]}…[+{len(value) - max_string} chars]"
    if isinstance(value, dict | Mapping):
        if is_blob_ref(value):
            summary = {
                "blob": value.get("mime_type") or value.get("content_type") or "binary",
                "size_bytes": value.get("size_bytes"),
            }
            uri = blob_uri(connection_id, value)
            return {**summary, "uri": uri} if uri else summary
        return {
            k: v
            if _unchanged(v, max_string)
            else preview_value(
                v, max_string, long_fields, f"{path}.{k}" if path else str(k), connection_id=connection_id
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        shown = [
            preview_value(v, max_string, long_fields, path, connection_id=connection_id) for v in value[:10]
        ]
        return [*shown, f"…[+{len(value) - 10} items]"] if len(value) > 10 else shown
    return value


def _unchanged(value: Any, max_string: int) -> bool:
    """A scalar ``preview_value`` keeps as it is (most values of a record)."""
    kind = type(value)
    if kind is str:
        return len(value) <= max_string
    if value is None or kind is int or kind is bool or kind is float:
        return True
    if isinstance(value, str):
        return len(value) <= max_string
    return isinstance(value, bool | int | float)


def _all_unchanged(value: dict[Any, Any] | list[Any], max_string: int) -> bool:
    """Whether ``preview_value`` keeps every member of an object or short list as it is:
    scalars it keeps, and (in an object) lists of at most 10 of them."""
    for member in value.values() if type(value) is dict else value:
        kind = type(member)
        if kind is str:
            if len(member) > max_string:
                return False
        elif kind is list:
            if type(value) is not dict or len(member) > 10 or not _all_unchanged(member, max_string):
                return False
        elif not (
            member is None or kind is int or kind is bool or kind is float or _unchanged(member, max_string)
        ):
            return False
    return True


def fit_rows(
    budget: int, detailed: Sequence[str], compact: Sequence[str], *, max_detailed: int, reserve: int = 240
) -> tuple[list[str], int, int]:
    """Lines listing items within ``budget`` chars: ``(lines, listed, detailed)``.

    Every item gets at least its compact row when they all fit; the first items are then
    upgraded to their detailed block while the total stays within budget. When even the
    compact rows do not all fit, as many as fit (keeping ``reserve`` chars for the caller's
    note about the rest) are listed, none detailed."""
    compact_total = sum(map(len, compact)) + len(compact)
    if compact_total > budget:
        lines: list[str] = []
        used = 0
        for row in compact:
            if used + len(row) + 1 > budget - reserve:
                break
            lines.append(row)
            used += len(row) + 1
        return lines, len(lines), 0
    spare = budget - compact_total
    upgraded = 0
    for block, row in zip(detailed[:max_detailed], compact, strict=False):
        extra = len(block) - len(row)
        if extra > spare:
            break
        spare -= extra
        upgraded += 1
    return [*detailed[:upgraded], *compact[upgraded:]], len(compact), upgraded


def warning_lines(warnings: object, limit: int) -> list[str]:
    """Lines for an RS ``warnings`` list: the first ``MAX_WARNINGS_SHOWN`` with their code and
    message (each within ``limit`` characters), then one line counting the rest and naming
    their distinct codes (within ``limit`` too): an answer's text stays bounded however many
    warnings an RS sends, and every one is still in the structured output."""
    found = [w for w in warnings if isinstance(w, Mapping)] if isinstance(warnings, list) else []
    lines = [
        clip(f"warning {w.get('code')}: {w.get('message', '')}", limit) for w in found[:MAX_WARNINGS_SHOWN]
    ]
    rest = found[MAX_WARNINGS_SHOWN:]
    if rest:
        codes = ", ".join(dict.fromkeys(str(w.get("code")) for w in rest))
        lines.append(clip(f"+{len(rest)} more warning(s) in the structured output: {codes}", limit))
    return lines


def merged_note(
    tool: str,
    stream: str,
    arguments: Mapping[str, Any],
    connections: Sequence[Mapping[str, Any]],
    effect: str,
) -> str:
    """The line saying an answer merged several connections that hold ``stream``.

    ``connections`` are the ones known (``connection_id``, ``display_name``,
    ``connector_key``); ``effect`` says what merging did to this answer; the call that reads
    one source repeats ``arguments`` (the call's own, ``tools.args``)."""
    name = dumps(stream)
    known = [c for c in connections if isinstance(c.get("connection_id"), str) and c["connection_id"]]
    if len(known) > 1:
        listed = ", ".join(_connection_label(c) for c in known[:MERGED_LISTED])
        more = f", +{len(known) - MERGED_LISTED} more" if len(known) > MERGED_LISTED else ""
        spans = f"{len(known)} connections hold stream {name}: {listed}{more}"
    else:
        spans = f"several connections hold stream {name} (schema(stream) lists them)"
    line = f"Merged sources: {spans}; {effect}. Pass connection_id to read one source"
    if not known:
        return line + "."
    one = again(arguments, without=("cursor",), connection_id=known[0]["connection_id"])
    return line + f", e.g. {call_text(tool, one)}"


def _connection_label(connection: Mapping[str, Any]) -> str:
    label = str(connection["connection_id"])
    if connection.get("display_name"):
        label += f" ({connection['display_name']})"
    if connection.get("connector_key"):
        label += f" [{connection['connector_key']}]"
    return clip(label, _MAX_CONNECTION_LABEL)
