"""Evidence that answers: the answer windows of the best cut hits, read while no better hit answers.

Contract (step 3 of ``retrieval.search``; each read a GET through the caller's client, a
failed read leaving the hit as it was):

- ``add_evidence(context, hits, args, schema, searched, meaning)``: the best-ranked hit whose
  long field the RS cut (a meaning-based hit, or a relaxed lexical hit whose snippet does not
  read as an answer: ``previews.answers``), when no better-ranked hit shows evidence that reads
  as an answer, has that field read (``read_passages``, at most ``SCAN_CHARS``, its first
  window alone when one stretch of it holds every word) and its ``ANSWER_WINDOWS`` windows
  that best carry the answer shown (``sentences.answer_windows``: sentence by sentence, by
  meaning, rare words and the kind of value asked for), each with the call that reads around
  it. While the best window is weak (under half the question's words, and no number a figure
  question asks for), the next such hit is read the same way, at most ``MAX_SCANS`` in all,
  never one record twice; a strong window ends the reads. A hit whose snippet is the whole
  short field shows it marked (``previews.mark_snippet``); every other cut hit carries
  ``read_near``: the ``read_record_field`` call aimed with the question's most distinctive
  words (``Question.distinctive``), which the read's scorer weighs with the rest of the text;
  never on a text the page shows whole. The best-ranked short hit whose stream has a body
  stream in the grant's schema (``linked_streams.body_streams``, ``whole``: a mail's message and
  its body; the parts of a thread are ``retrieval.threads``'s) has, in its rank's turn (a title that names the
  topic does not stand in for the text) and counted among the ``MAX_SCANS``, the body streams searched on the question
  by the meaning-based mode (``scan_bodies``: 1 read, within the caller's ``streams`` and
  ``connection_id``, none under a ``filter``); the body found is read as above and, when it
  shows evidence, stands as a hit of its own at that short hit's rank; when its link field
  (read alongside, 1 read) names that short hit, the two fold into one
  (``linked_hits.fold``: the body, with the hit's title, at its place).
- ``read_best(context, hits, args, schema)``: each of the ``READ_HITS`` best-ranked hits (in
  the fused order: the RS's ranks, which choose what to read better than a judge of snippets)
  whose page shows only a cut preview of its long text (``…`` at an end; not a message whose
  text previews a whole body, which the body search reads; an issue's own text is read, its
  comments are its thread's) has that text read for its answer windows,
  concurrently; a hit matched on its title alone has its stream's text field read
  (``linked_streams.text_field_of``).
- ``first_passage(context, top, args)``: step 1's exception: a first lexical hit whose snippet
  of a long field lacks some of the question's words (a figure question: shows no figure
  beside half its words; a who/when question reads its origin instead) has that field read
  for its passages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

from pdpp_gateway import documents
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import RecordRef
from pdpp_gateway.marks import parse_marks, shows_part
from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.passages import Passage, best_passage
from pdpp_gateway.retrieval.body_search import search_bodies, text_field
from pdpp_gateway.retrieval.linked_hits import fold, link_of
from pdpp_gateway.retrieval.linked_streams import BodyStream, body_streams, text_field_of
from pdpp_gateway.retrieval.pages import SEARCH_PATHS, naming, page_hits
from pdpp_gateway.retrieval.passage_reads import read_windows, windows_evidence
from pdpp_gateway.retrieval.previews import answers, holds_every_word, mark_snippet
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.tools.args import SearchArgs

SCAN_CHARS: Final = 32_768  # two RS windows
MAX_SCANS: Final = 2  # cut hits read for a passage, the next only while the last one's was weak
READ_HITS: Final = 4  # the best-ranked hits whose cut text is read for its answer windows
ANSWER_WINDOWS: Final = 2  # windows shown of a text read for them


async def add_evidence(
    context: GatewayContext,
    hits: list[dict[str, Any]],
    args: SearchArgs,
    schema: Mapping[str, Any] | None,
    searched: list[dict[str, Any]],
    meaning: str | None,
) -> None:
    """Step 3 of the module contract: passages of the best cut hits (or of the body the
    question finds by the ``meaning`` mode for the best bare hit, its search added to
    ``searched``) while no better one answers, marked short snippets, and the aimed call for
    every other hit whose field was cut."""
    words, figure = args.terms, args.question.figure
    scans: list[Callable[[], Awaitable[Passage | None]]] = []  # in rank order
    shown = False  # whether a better-ranked hit already shows evidence that reads as an answer
    bodied = False  # whether a body search is already among the scans
    read: set[str] = set()  # the hits whose field a scan read
    bodies_of: dict[tuple[object, object], list[BodyStream]] = {}  # per stream and connection

    def scan(hit: dict[str, Any], field: str) -> None:
        async def once() -> Passage | None:
            if hit.get("id") in read:  # the body search already read it, and moved it up
                return None
            read.add(str(hit.get("id")))
            return await read_passages(context, hit, naming(hit), field, args.question)

        scans.append(once)

    for hit in hits:
        evidence = hit.get("evidence") or []
        if evidence:  # the relaxed lexical search's own snippet of a field
            if answers(evidence, words, figure):
                shown = True
            elif not shown and len(scans) < MAX_SCANS and evidence[0].get("truncated"):
                scan(hit, str(evidence[0].get("field")))
            continue
        if not hit.get("matched_fields"):
            continue
        field = str(hit["matched_fields"][0])
        snippet = str(hit.get("snippet") or "")
        if not snippet.endswith("…"):
            mark_snippet(hit, field, snippet, words)
            titled = answers([{"preview": hit.get("title")}], words, figure)
            where = (hit.get("stream"), hit.get("connection_id"))
            if where not in bodies_of:  # the grant's schema projected once per stream
                bodies_of[where] = searchable_bodies(schema, hit, args)
            bodies = bodies_of[where]  # its snippet previews a body
            if meaning and bodies and not (shown or bodied) and len(scans) < MAX_SCANS:
                bodied = True
                scans.append(partial(scan_bodies, context, hit, bodies, hits, args, searched, read, meaning))
            shown = shown or titled or (not bodies and answers(hit.get("evidence") or [], words, figure))
            continue
        if args.question.words:  # the RS cut its text: the read aimed at the answer in it
            aim = " ".join(args.question.distinctive())
            hit["read_near"] = {
                "tool": "read_record_field",
                "arguments": {**naming(hit), "field": field, "near": aim},
            }
        if not shown and len(scans) < MAX_SCANS:
            scan(hit, field)
    for each in scans:  # one after another: a strong passage ends the scans
        passage = await each()
        if passage is not None and passage.answers:
            break


async def first_passage(context: GatewayContext, top: dict[str, Any], args: SearchArgs) -> None:
    """Step 1's exception: a first hit whose snippet of a long field lacks some of the
    question's words (a figure question: shows no figure beside half its words; a who/when
    question reads the hit's origin instead, step 5) has that field read for its passages
    (``read_passages``; the RS's snippet stays when none is found)."""
    words, figure = args.terms, args.question.figure
    evidence = top.get("evidence") or []
    if not (evidence and evidence[0].get("truncated")):
        return
    if figure and answers(evidence, words, figure):
        return
    if not figure and (args.question.who_or_when or holds_every_word(evidence, words)):
        return
    await read_passages(context, top, naming(top), str(evidence[0].get("field")), args.question)


def searchable_bodies(
    schema: Mapping[str, Any] | None, hit: Mapping[str, Any], args: SearchArgs
) -> list[BodyStream]:
    """The body streams of ``hit``'s stream (``linked_streams.body_streams``) that the search
    may read: among the caller's ``streams`` when it named some, none when it set a filter
    (a filter names one stream)."""
    connection = hit.get("connection_id")
    if not isinstance(connection, str) or any(name == "filter" for name, _ in args.scope):
        return []
    bodies = [body for body in body_streams(schema, str(hit.get("stream")), connection) if body.whole]
    named = {value for name, value in args.scope if name == "streams"}
    return [body for body in bodies if body.name in named] if named else bodies


async def scan_bodies(
    context: GatewayContext,
    hit: dict[str, Any],
    bodies: Sequence[BodyStream],
    hits: list[dict[str, Any]],
    args: SearchArgs,
    searched: list[dict[str, Any]],
    read: set[str],
    mode: str,
) -> Passage | None:
    """The body streams searched on the question by the meaning-based ``mode``
    (``body_search.search_bodies``, within the caller's ``connection_id`` when it set one,
    the search added to ``searched``); the first body found that no scan read and no hit
    shows evidence of is read as ``read_passages`` reads a field (its snippet marked when
    it is the whole field) and, when it shows evidence, placed in ``hits`` at ``hit``'s rank
    (an entry of it further down moves up), folded with ``hit`` when its link, read alongside,
    names it (``_owner``). Answers its passage found by words (``None``: a
    failed search, no new body, or no passage in it)."""
    words, figure = args.terms, args.question.figure
    within = tuple(pair for pair in args.scope if pair[0] == "connection_id")
    try:
        response = await search_bodies(context.rs, bodies, args.text, SEARCH_PATHS[mode], within)
    except RsError:
        return None
    found = page_hits(context, response)
    names = [body.name for body in bodies]
    searched.append({"mode": mode, "query": args.text, "streams": names, "hits": len(found)})
    shown = read | {str(each.get("id")) for each in hits if each.get("evidence")}
    body = next((each for each in found if each.get("id") not in shown), None)
    field = None if body is None else text_field(bodies, body)
    if body is None or field is None:
        return None
    body["found_by"] = [mode]
    read.add(str(body["id"]))
    snippet = str(body.get("snippet") or "")
    if snippet and not snippet.endswith("…"):  # a short body: the RS showed all of it
        mark_snippet(body, field, snippet, words)
        passage = best_passage(parse_marks(snippet)[0], words, figure=figure)
        owned = await _owner(context, body, bodies, hit)
    else:  # its text and its link, read side by side
        passage, owned = await asyncio.gather(
            read_passages(context, body, naming(body), field, args.question),
            _owner(context, body, bodies, hit),
        )
    if body.get("evidence"):
        hits[:] = [each for each in hits if each.get("id") != body["id"]]
        hits.insert(next(n for n, each in enumerate(hits) if each is hit), body)
        if owned:  # the short hit's own body: one hit, at its place, with its title
            fold(hits, hit, body, str(hit.get("stream")), whole=True)
    return passage


async def _owner(
    context: GatewayContext, body: Mapping[str, Any], bodies: Sequence[BodyStream], hit: Mapping[str, Any]
) -> bool:
    """Whether ``body`` (found by the body search) is ``hit``'s own: its link field, read
    (``linked_hits.link_of``), names it; ``False`` when the read fails."""
    key = next((each.key for each in bodies if each.name == body.get("stream")), None)
    if key is None or body.get("connection_id") != hit.get("connection_id"):
        return False
    return await link_of(context, body, key) == str(hit.get("record_id"))


async def read_passages(
    context: GatewayContext,
    hit: dict[str, Any],
    naming: Mapping[str, str],
    field: str,
    question: Question,
) -> Passage | None:
    """The hit's field read (at most ``SCAN_CHARS``; only its first window when a stretch of it
    holds every word of the question), its ``ANSWER_WINDOWS`` windows that best
    carry the answer (``sentences.answer_windows``, in a thread) set as its evidence. Answers
    the best as a passage (``None``: nothing read, or the read failed)."""
    ref = RecordRef(str(hit.get("stream")), str(hit.get("record_id")), hit.get("connection_id"))
    try:
        scanned, windows = await read_windows(context.rs, ref, field, question, ANSWER_WINDOWS, SCAN_CHARS)
    except RsError:
        return None
    if not windows:
        return None
    hit["evidence"] = windows_evidence(scanned, windows, question, naming, field)
    hit.pop("read_near", None)
    best = windows[0]
    numbered = question.figure and any(char.isdigit() for char in scanned.text[best.start : best.end])
    return Passage(best.start, best.end, best.marks, best.matched, best.asked, figure=numbered)


async def read_best(
    context: GatewayContext, hits: list[dict[str, Any]], args: SearchArgs, schema: Mapping[str, Any] | None
) -> None:
    """The long text of each of the ``READ_HITS`` best-ranked hits that shows only a cut
    preview of it (the RS's snippet, not a passage read for it) read for the windows that carry
    the answer, concurrently (``read_passages``); a hit matched on its title alone has its
    stream's text field read (``linked_streams.text_field_of``)."""
    reads = []
    for hit in hits[:READ_HITS]:
        field = _long_field(hit, schema)
        if field is not None:
            reads.append(read_passages(context, hit, naming(hit), field, args.question))
    await asyncio.gather(*reads)


def _long_field(hit: Mapping[str, Any], schema: Mapping[str, Any] | None) -> str | None:
    """The field of ``hit`` whose text the page shows only in part, if any."""
    evidence = [item for item in hit.get("evidence") or () if isinstance(item, Mapping)]
    if any(item.get("provenance") in {"passage", "meaning_match"} for item in evidence):
        return None  # read for its passages already, or shown whole
    connection = hit.get("connection_id")
    if isinstance(connection, str) and any(
        body.whole for body in body_streams(schema, str(hit.get("stream")), connection)
    ):
        return None  # its text previews a body (a mail's message): the body is the long text
    cut = [
        str(item.get("field"))
        for item in evidence
        if item.get("truncated") and shows_part(item.get("preview"))
    ]
    matched = [str(field) for field in hit.get("matched_fields") or ()]
    if not evidence and str(hit.get("snippet") or "").endswith("…"):
        cut = matched[:1]
    fields = [field for field in cut if field not in documents.TITLE_FIELDS]
    if fields:
        return fields[0]
    if matched and set(matched) <= set(documents.TITLE_FIELDS) and isinstance(connection, str):
        return text_field_of(schema, str(hit.get("stream")), connection)
    return None
