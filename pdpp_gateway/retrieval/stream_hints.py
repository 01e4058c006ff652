"""Streams a question names: the structured data no text search reaches, as ready reads.

Contract (a schema document and the question's words in, hints out; no I/O but the embedding
model of ``question.meaning`` for the fallback by meaning, loaded once, a few ms):

``stream_hints(schema, words, question, shown)`` answers, for a search in a person's words
that found no record holding every word, at most ``MAX_HINTS`` granted streams whose name
or field names the question's content words ``words`` name, each as a ``query_records``
call that answers directly. ``schema`` is an RS ``/v1/schema`` body (compact or full);
``shown`` the streams already among the search's hits (never hinted: their records are on
the page); ``streams`` and ``connection_id`` keep them within a search's scope.
``add_stream_hints`` puts them in a search's structured output under ``STREAM_HINTS``: the
streams of its results are shown, and when its first hit's evidence holds half the content
words or more, those words name no stream (that hit speaks of them: "what did I pay for the
Lisbon apartment deposit", whose first hit says "deposit ... Lisbon apartment ... payable",
is not pointed at pay statements; a first hit that holds only "pay" of "my take-home pay on
my most recent payslip" is a guess, and the question still names them).
``merge_stream_hints`` gives a merged package page its members' hints. ``source_of`` and
``granted_connections`` say where a schema row's stream is read (``retrieval.other_streams``
names streams the same way).

- A name is split on ``_``; a part names a word when their stems are the same, or when the
  part begins with the word, stem or lower-cased form, of four letters or more (a compound
  of it: "file" in "filename", whose stem "fil" is too short). A word that begins with the
  part names it only as a compound, the part (three letters or more) then another word
  (four or more: "payslip" names ``pay_statements``); with a derivational ending
  (``_SUFFIX_WORDS``) it says more than the part ("membership" is not a "member", so
  ``member_count`` does not name it). Generic parts (``GENERIC_PARTS``: id, text, name,
  type, ...) name nothing, nor do a stream's primary key, its fields not granted (flag
  ``g=false``), its times (a question's "sent" or "updated" says when, not what) and
  objects (blobs). A question's regular past forms (``PAST_FORM``: "saved", "booked") say
  what was done, not what is asked for, and name nothing ("how much have I got saved up"
  is not about ``saved_tracks``), nor do words said as deeds (``words.deeds``: "how much
  did I pay to get the car fixed" is not about ``pay_statements``, "my take-home pay"
  still is); words that say an order (``ORDER_WORDS``: latest, earliest, ...) set the
  order instead.
- A stream is hinted when at least one word names it or one of its fields; streams rank
  by the distinct words they match (a match on the stream's own name first on a tie),
  then in schema order.
- Its call reads that stream (``connection_id`` when one granted connection holds it, or
  the search named one, so a package routes it and a name shared with another source does
  not merge them), at
  most ``HINT_LIMIT`` records, ordered by its cursor field: newest first (``desc``), or
  oldest first (``asc``) when the question asks for the earliest, first or oldest. When
  fields matched words the stream's name does not, ``fields`` projects the records to the
  cursor field, the field that names a record (the first granted of ``documents.TITLE_FIELDS``:
  "which repository has the most stars" reads created_at, full_name and stars, not stars alone)
  and those fields ("gross salary" reads issued_at and gross_amount; "pay" names
  pay_statements itself, so its records come whole).
- A hint is ``{stream, source, connection_id?, words, fields, order, call: {tool,
  arguments}}`` (``order``: e.g. "newest first by issued_at"); ``source`` is the
  connector key and the connection's display name.
- When words name fewer than ``MAX_HINTS`` streams and the first hit holds fewer than half the
  words (those that say an order aside), ``stream_by_meaning`` offers the granted stream,
  neither among the hits nor hinted, whose connector, name and granted fields, as one text,
  are nearest the question in meaning (the embedding model of ``question.meaning``), when at
  least ``MEANING_HINT`` near ("how much was my last salary": ``pay_statements``, whose words
  it shares none of): a hint as above with no words or fields, and ``by: "meaning"``, after
  the words' hint if any ("what songs have I saved recently": ``recently_played`` by the word,
  ``saved_tracks`` by meaning, where "saved" says what was done and names nothing).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from pdpp_gateway import documents
from pdpp_gateway.marks import parse_marks
from pdpp_gateway.question.meaning import embedding_model
from pdpp_gateway.question.words import WORD, deeds, stands_for, stem
from pdpp_gateway.render.common import as_mapping
from pdpp_gateway.schema_view import compact_projection, unwrap_schema
from pdpp_gateway.tools.args import SearchArgs

STREAM_HINTS: Final = "stream_hints"  # the structured output key holding them
MAX_HINTS: Final = 2
# a stream this near the question in meaning (its connector, name and fields as one text) is
# hinted when no word names one: "how much was my last salary" and pay_statements, 0.35;
# "what did I spend on the lisbon apartment deposit" meets no stream above 0.14
MEANING_HINT: Final = 0.3
HINT_LIMIT: Final = 3
GENERIC_PARTS: Final = frozenset(
    {"id", "ids", "text", "name", "type", "key", "data", "value", "url", "number", "count"}
)
ORDER_WORDS: Final = frozenset({"latest", "last", "newest", "recent", "earliest", "first", "oldest"})
PAST_FORM: Final = re.compile(r"\w{3,}(?<!e)ed", re.IGNORECASE)  # "saved", "booked"; not "speed", "used"
_PREFIX_MIN: Final = 4  # the shortest word a longer part can begin with and name
_COMPOUND_MIN: Final = 3  # the shortest part a compound word can begin with ("pay" of "payslip")
_COMPOUND_REST: Final = 4  # the shortest word that can follow it ("slip")
# endings that make a word say more than the part it begins with ("membership" is no "member")
_SUFFIX_WORDS: Final = frozenset({"ship", "ships", "hood", "ness", "ment", "ments", "less", "able", "ible"})
_EARLIEST: Final = re.compile(r"\b(earliest|first|oldest)\b", re.IGNORECASE)


def stream_hints(
    schema: Mapping[str, Any],
    words: Sequence[str],
    question: str,
    shown: Collection[str],
    *,
    streams: Collection[str] | None = None,
    connection_id: str | None = None,
) -> list[dict[str, Any]]:
    """The ready reads of the streams the question names (see the module contract)."""
    done = deeds(question)
    asked = [
        word
        for word in words
        if word.lower() not in ORDER_WORDS and word.lower() not in done and not PAST_FORM.fullmatch(word)
    ]
    if not asked:
        return []
    oldest = _EARLIEST.search(question) is not None
    ranked: list[tuple[int, bool, int, dict[str, Any]]] = []
    for connector, row, name in _offered_rows(schema, shown, streams, connection_id):
        by_name = set(_named(name, asked))
        keys = set(row.get("primary_key") or ())
        by_field = {
            field: named
            for field, flags in (row.get("field_capabilities") or {}).items()
            if field not in keys and _names_a_thing(str(flags)) and (named := set(_named(field, asked)))
        }
        matched = by_name.union(*by_field.values())
        if matched:
            narrowing = [field for field, named in by_field.items() if named - by_name]
            hint = _hint(connector, row, sorted(matched, key=asked.index), narrowing, oldest)
            ranked.append((len(matched), bool(by_name), -len(ranked), hint))
    ranked.sort(key=lambda entry: entry[:3], reverse=True)
    return [hint for *_, hint in ranked[:MAX_HINTS]]


def add_stream_hints(structured: dict[str, Any], schema: Mapping[str, Any] | None, args: SearchArgs) -> None:
    """``structured`` (the structured output of the search ``args``) with its hints under
    ``STREAM_HINTS``, within the search's streams and connection; unchanged without a schema
    or a hint."""
    if schema is None:
        return
    results = [hit for hit in structured.get("results") or () if isinstance(hit, Mapping)]
    shown = {str(hit.get("stream")) for hit in results}
    said = {stem(token) for token in WORD.findall(_evidence_text(results[0] if results else {}))}
    held = [word for word in args.words if any(stands_for(token, {stem(word)}) for token in said)]
    # a first hit holding half the words or more speaks of them; one holding fewer is a guess
    unsaid = (
        [word for word in args.words if word not in held] if 2 * len(held) >= len(args.words) else args.words
    )
    scope = args.arguments.get("streams")
    streams = scope if isinstance(scope, list) else None
    hints = stream_hints(schema, unsaid, args.text, shown, streams=streams, connection_id=args.connection_id)
    asked = [word for word in args.words if word.lower() not in ORDER_WORDS]  # "last" asks an order
    if len(hints) < MAX_HINTS and 2 * len([word for word in held if word in asked]) < len(asked):
        hinted = {str(hint["stream"]) for hint in hints}
        near = stream_by_meaning(  # beside the words' hint, or in place of none
            schema,
            args.text,
            {*shown, *hinted},
            streams=streams,
            connection_id=args.connection_id,
        )
        hints += [near] if near is not None else []
    if hints:
        structured[STREAM_HINTS] = hints


def stream_by_meaning(
    schema: Mapping[str, Any],
    question: str,
    shown: Collection[str],
    *,
    streams: Collection[str] | None = None,
    connection_id: str | None = None,
) -> dict[str, Any] | None:
    """The ready read of the granted stream nearest ``question`` in meaning, when at least
    ``MEANING_HINT`` near (see the module contract); ``None`` otherwise or without the model."""
    model = embedding_model()
    if model is None:
        return None
    candidates: list[tuple[Mapping[str, Any], Mapping[str, Any], str]] = []
    for connector, row, name in _offered_rows(schema, shown, streams, connection_id):
        key = str(connector.get("connector_key") or connector.get("connector_id") or "")
        said = ", ".join(field.replace("_", " ") for field in _granted(row))
        candidates.append((connector, row, f"{key} {name.replace('_', ' ')}: {said}"))
    if not candidates:
        return None
    scores = model.embed([text for *_, text in candidates], norm=True) @ model.embed([question], norm=True)[0]
    best = int(scores.argmax())
    if float(scores[best]) < MEANING_HINT:
        return None
    connector, row, _ = candidates[best]
    return {**_hint(connector, row, [], [], _EARLIEST.search(question) is not None), "by": "meaning"}


def merge_stream_hints(structured: dict[str, Any], answers: Iterable[Mapping[str, Any]]) -> None:
    """A merged package page's hints: those of its members' ``answers`` (structured outputs,
    in member order), the streams of its ``results`` not hinted, at most ``MAX_HINTS``."""
    shown = {str(hit.get("stream")) for hit in structured.get("results") or () if isinstance(hit, Mapping)}
    hints = [
        hint
        for answer in answers
        for hint in answer.get(STREAM_HINTS) or ()
        if isinstance(hint, Mapping) and hint.get("stream") not in shown
    ]
    if hints:
        structured[STREAM_HINTS] = hints[:MAX_HINTS]


def _evidence_text(hit: Mapping[str, Any]) -> str:
    """What a hit's evidence shows, without its marks."""
    previews = (item.get("preview") for item in hit.get("evidence") or () if isinstance(item, Mapping))
    return " ".join(parse_marks(str(preview))[0] for preview in previews if preview)


def _granted(row: Mapping[str, Any]) -> list[str]:
    """The fields of a stream's compact row that the grant holds (no ``g=false`` flag)."""
    flags = as_mapping(row.get("field_capabilities"))
    return [str(field) for field, flag in flags.items() if "g=false" not in str(flag).split(",")]


def _names_a_thing(flags: str) -> bool:
    """Whether a field with these compact flags can name what a question asks about: granted,
    and neither a time nor an object."""
    parts = flags.split(",")
    return "g=false" not in parts and not {"t=date-time", "t=date", "t=object"} & set(parts)


def _named(name: str, words: Sequence[str]) -> list[str]:
    """The ``words`` some part of ``name`` names."""
    parts = [part for part in name.lower().split("_") if part and part not in GENERIC_PARTS]
    return [word for word in words if any(_names(part, word) for part in parts)]


def _names(part: str, word: str) -> bool:
    """Whether a name's ``part`` names the question's ``word``: the same stem, the part
    beginning with the word (its stem or its lower-cased form), or the word a compound of
    the part and another word ("payslip" of "pay"; not "membership" of "member")."""
    folded = word.lower()
    rest = folded[len(part) :] if len(part) >= _COMPOUND_MIN and folded.startswith(part) else ""
    return (
        stem(part) == stem(word)
        or any(
            len(begun) >= _PREFIX_MIN and whole.startswith(begun)
            for whole, begun in ((stem(part), stem(word)), (part, folded))
        )
        or (len(rest) >= _COMPOUND_REST and rest not in _SUFFIX_WORDS)
    )


def granted_connections(connector: Mapping[str, Any], row: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The connections through which the grant reads the stream of ``row``: its own list, else
    its connector's."""
    granted = row.get("granted_connections") or connector.get("granted_connections") or ()
    return [connection for connection in granted if isinstance(connection, Mapping)]


def source_of(connector: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[str, str | None]:
    """The source of the stream of ``row`` as a person names it (the connector key and the
    connection's display name), and that connection's id when one connection holds it."""
    connections = granted_connections(connector, row)
    connection = connections[0] if len(connections) == 1 else {}
    source = str(connector.get("connector_key") or connector.get("connector_id") or "")
    if connection.get("display_name"):
        source = f"{source} ({connection['display_name']})" if source else str(connection["display_name"])
    connection_id = connection.get("connection_id")
    return source, str(connection_id) if connection_id else None


def _offered_rows(
    schema: Mapping[str, Any],
    shown: Collection[str],
    streams: Collection[str] | None,
    connection_id: str | None,
) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any], str]]:
    """The granted streams a hint may offer: ``(connector, row, name)`` of each one not
    ``shown``, within ``streams`` and ``connection_id``."""
    document = compact_projection(unwrap_schema(schema), connection_id=connection_id)
    for connector in document.get("connectors") or ():
        for row in connector.get("streams") or ():
            name = str(row.get("name") or "")
            if name and name not in shown and (streams is None or name in streams):
                yield connector, row, name


def _hint(
    connector: Mapping[str, Any],
    row: Mapping[str, Any],
    words: list[str],
    fields: list[str],
    oldest: bool,
) -> dict[str, Any]:
    source, connection_id = source_of(connector, row)
    arguments: dict[str, Any] = {"stream": row["name"]}
    if connection_id is not None:
        arguments["connection_id"] = connection_id
    cursor = row.get("cursor_field") if isinstance(row.get("cursor_field"), str) else None
    if fields:  # projected: the cursor field, the field that names a record, the fields asked
        granted = _granted(row)
        named = next((field for field in documents.TITLE_FIELDS if field in granted), None)
        kept = [*([cursor] if cursor else []), *([named] if named else []), *fields]
        arguments["fields"] = list(dict.fromkeys(kept))
    order = "default order"
    if cursor:
        arguments["order"] = "asc" if oldest else "desc"
        order = f"{'oldest' if oldest else 'newest'} first by {cursor}"
    arguments["limit"] = HINT_LIMIT
    hint: dict[str, Any] = {"stream": row["name"], "source": source}
    if "connection_id" in arguments:
        hint["connection_id"] = arguments["connection_id"]
    hint.update(
        words=words, fields=fields, order=order, call={"tool": "query_records", "arguments": arguments}
    )
    return hint
