"""A page that shows none of the question's words names the grant's other streams.

When no hit a search found holds a word of a person's question, its hits are guesses by
meaning ("which band have I been listening to the most lately" meets flight confirmations):
the answer is likelier data that no text search reaches (a music service's top artists, a
payroll's statements), in streams whose names say nothing the question says ("band" is no
"artist", so ``stream_hints`` offers none). Such a page names the grant's streams that none of
its hits is of, by source, so that a model reads one (``query_records``) or looks at its
fields (``schema``) instead of opening guesses.

Contract (pure: a schema document and a search's structured output in, that output with
``OTHER_STREAMS`` out; no I/O):

- ``add_other_streams(structured, schema, args)``: when the search's results show no word of
  the question (no ``<mark>`` in any hit's snippet or evidence, no title word that stands for
  one of its content words: ``words.stands_for``) and it offers no stream hint,
  ``structured[OTHER_STREAMS]`` lists per connector and connection the granted streams (within
  the search's ``streams`` and ``connection_id``) that no result is of: ``[{source,
  connection_id?, streams}]``, at most ``MAX_STREAMS`` names in all. Unchanged without a
  schema, a page that shows a word, or such a stream.
- ``merge_other_streams(structured, answers, words)``: a merged package page whose results show
  none of the content ``words`` names its members' other streams (``answers``: their structured
  outputs), the streams of its results left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pdpp_gateway.question.words import WORD, stands_for, stem
from pdpp_gateway.retrieval.stream_hints import STREAM_HINTS, granted_connections, source_of
from pdpp_gateway.schema_view import compact_projection, unwrap_schema
from pdpp_gateway.tools.args import SearchArgs

OTHER_STREAMS: Final = "other_streams"  # the structured output key holding them
MAX_STREAMS: Final = 24


def add_other_streams(structured: dict[str, Any], schema: Mapping[str, Any] | None, args: SearchArgs) -> None:
    """``structured`` with the grant's other streams when its page shows no word (see the contract)."""
    shown = _silent_page_streams(structured, args.words)
    if schema is None or shown is None:
        return
    scope = args.arguments.get("streams")
    named = set(scope) if isinstance(scope, list) else None
    document = compact_projection(unwrap_schema(schema), connection_id=args.connection_id)
    found: list[dict[str, Any]] = []
    left = MAX_STREAMS
    for connector in document.get("connectors") or ():
        names = [
            name
            for row in connector.get("streams") or ()
            if (name := str(row.get("name") or ""))
            and (named is None or name in named)
            and not any(
                (name, str(connection.get("connection_id"))) in shown
                for connection in granted_connections(connector, row)
            )
        ][:left]
        if names:
            source, connection_id = source_of(connector, {})  # the connector's own connections
            entry: dict[str, Any] = {"source": source, "streams": names}
            if connection_id is not None:
                entry["connection_id"] = connection_id
            found.append(entry)
            left -= len(names)
    if found:
        structured[OTHER_STREAMS] = found


def merge_other_streams(
    structured: dict[str, Any], answers: Iterable[Mapping[str, Any]], words: Iterable[str]
) -> None:
    """A merged package page's other streams (see the contract)."""
    shown = _silent_page_streams(structured, words)
    if shown is None:
        return
    found = []
    for answer in answers:
        for entry in answer.get(OTHER_STREAMS) or ():
            connection = str(entry.get("connection_id"))
            names = [name for name in entry.get("streams") or () if (name, connection) not in shown]
            if names:
                found.append({**entry, "streams": names})
    if found:
        structured[OTHER_STREAMS] = found


def _silent_page_streams(structured: Mapping[str, Any], words: Iterable[str]) -> set[tuple[str, str]] | None:
    """The (stream, connection) of each result of a page that shows none of the content
    ``words`` and offers no stream hint; ``None`` for any other page."""
    results = [hit for hit in structured.get("results") or () if isinstance(hit, Mapping)]
    wanted = {stem(word) for word in words}
    if structured.get(STREAM_HINTS) or any(_shows_a_word(hit, wanted) for hit in results):
        return None
    return {(str(hit.get("stream")), str(hit.get("connection_id"))) for hit in results}


def _shows_a_word(hit: Mapping[str, Any], wanted: set[str]) -> bool:
    """Whether the page shows a word of the question in ``hit``: a mark in its snippet or
    evidence, or a word of its title that stands for one of the question's (``wanted``: stems)."""
    shown = [str(hit.get("snippet") or "")]
    shown += [
        str(item.get("preview") or "") for item in hit.get("evidence") or () if isinstance(item, Mapping)
    ]
    titled = (stands_for(stem(token), wanted) for token in WORD.findall(str(hit.get("title") or "")))
    return any("<mark>" in text for text in shown) or any(titled)
