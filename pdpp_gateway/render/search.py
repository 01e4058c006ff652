"""Text for ``search``: every hit's complete id, sources, and proven evidence.

Contract: a summary line (hit count, has_more, mode); for a fused answer one line of how it
was found (``search_account``: why, each search and its hit count, the long texts and the
thread read, the order); ``next_cursor`` verbatim with the exact next-page call (hybrid
search has none: when it says more hits exist, the text says how to reach them: a larger
``limit``, narrower ``streams``, or the same search in lexical mode, which pages); recall and source-mix
disclosures when the RS sent them; then the hits within ``BUDGET`` characters. Every
returned hit is listed with its complete id (never cut): the first ones (up to ``MAX_HITS``;
on a page the judge ordered, only those scoring at least ``DETAIL_SHARE`` of its best: a hit
judged far below the first is a row, and the note says so) as detailed blocks with source
label (the stream only when the id does not name it), title (see
``documents.search_results``; a title made of source, stream and id says nothing its evidence
does not, so a hit whose evidence shows the field it matched in gives only its date, ``at
<time>``; a snippet the title already shows in full is not repeated), snippet and evidence,
the rest as one-line ``[n] id=... "…excerpt…"`` rows (a short window of the evidence or
snippet around its first mark, so a model can still choose which hit to open). A
hit without text evidence after one that shows some is a row wherever it ranks, with the
aimed read of its long field when it has one (``BARE_ROWS`` says so): a model reads past it
to the evidence. If even the one-line rows cannot all fit, the text says exactly which hits
are not listed and how to list them (a smaller ``limit``, then ``next_cursor``).
``connection_id`` appears separately, and in every continuation's arguments, only for a hit
whose id could not embed it. A hit proven in a text field shows its best preview (the first
hit up to ``MAX_EVIDENCE``: one window each leaves room for more hits in full; at most
``PREVIEW_CHARS`` visible chars, tags well-formed) with the exact ``read_record_field``
arguments; a hit whose field the gateway read for its passages shows them, not the field's
opening (its snippet), as bounded where they were cut (``Window.preview``: never inside the
sentence chosen; at most ``PASSAGE_CHARS``). A hit whose evidence shows its long text in part
offers that text's ``fetch`` ahead of its evidence (its length, and how much a fetch shows): the
first call a page spells out is the best hit's whole text. A window's read-more is then offered
only where the fetch does not reach (past ``documents.FETCH_TEXT_CHARS``): one call per hit,
not one per window; and the closing line gives no fetch example. A hit matched only on metadata
shows no invented body window, only how to read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.documents import FETCH_TEXT_CHARS, TEXT_FIELDS, TITLE_FIELDS, made_title_part
from pdpp_gateway.marks import parse_marks, preview_around_mark
from pdpp_gateway.render.common import (
    RETRIEVAL,
    again,
    as_mapping,
    call_text,
    clip,
    dumps,
    fit_rows,
    warning_lines,
)
from pdpp_gateway.render.search_account import (
    FIELD_VALUE,
    MEANING_MODES,
    fused_line,
    fused_more,
    hybrid_more,
    nothing_lexical,
    older_thread_line,
    other_streams_line,
    package_order_line,
    stream_hint_line,
)
from pdpp_gateway.retrieval.other_streams import OTHER_STREAMS
from pdpp_gateway.retrieval.stream_hints import STREAM_HINTS
from pdpp_gateway.tools.args import SearchArgs

BUDGET: Final = 4_500
MAX_HITS: Final = 8
DETAIL_SHARE: Final = 0.6  # a judged hit shown in detail scores at least this share of the page's best
MAX_EVIDENCE: Final = 2
PREVIEW_CHARS: Final = 260
PASSAGE_CHARS: Final = 3 * PREVIEW_CHARS  # a passage read for the answer: bounded where it was cut
SNIPPET_CHARS: Final = 200
ROW_EXCERPT_CHARS: Final = 60
BARE_ROWS: Final = "(a hit with no text evidence is listed in brief: fetch it by id to read it)"


def render_search(args: SearchArgs, result: ToolResult) -> str:
    """The search text; how the hits were found comes first when the gateway chose it
    (``retrieval``: the question's content words, or fused lists after an empty page; for a
    package, the sources whose answer was fused)."""
    envelope = as_mapping(result.structured.get("data"))
    hits = [h for h in result.structured.get("results") or () if isinstance(h, Mapping)]
    retrieval = as_mapping(result.structured.get(RETRIEVAL))
    meta = as_mapping(envelope.get("meta"))
    package = as_mapping(meta.get("package"))  # empty for one grant's page
    fused = retrieval.get("mode") == "fused"  # no cursor: its lists page differently
    mode = "fused" if retrieval.get("mode") == "fused" else args.mode or "lexical"
    head = f"search {dumps(args.text)} ({mode}): {len(hits)} hit(s), has_more={'true' if envelope.get('has_more') else 'false'}"
    lines = [head + "."]
    if retrieval.get("mode") == "lexical" and isinstance(retrieval.get("searched"), str):
        held = " (every one in a hit)" if hits else ""
        lines.append(f"Searched the question's content words: {dumps(retrieval['searched'])}{held}.")
    elif retrieval.get("mode") == "fused":
        members = package.get("member_count")
        lines.append(
            clip(
                fused_line(retrieval, args.text, bool(hits), members if isinstance(members, int) else 0), 600
            )
        )
        older = older_thread_line(args, retrieval)
        if older is not None:
            lines.append(older)
    if envelope.get("next_cursor"):
        follow = again(args.arguments, cursor=envelope["next_cursor"])
        lines.append(f"next_cursor={envelope['next_cursor']} → next page: {call_text('search', follow)}")
    elif envelope.get("has_more") and fused:
        lines.append(fused_more(args, retrieval))
    elif envelope.get("has_more") and mode == "hybrid":
        lines.append(hybrid_more(args))
    elif not hits and mode == "lexical" and not args.cursor:
        lines.append(nothing_lexical(args, retrieval.get("searched")))
    elif not hits and fused:
        meant = any(as_mapping(s).get("mode") in MEANING_MODES for s in retrieval.get("searched") or ())
        nothing = "these words or is near this meaning" if meant else "these words"
        lines.append(f"No record holds {nothing}; {FIELD_VALUE}")
    lines.extend(stream_hint_line(as_mapping(hint)) for hint in result.structured.get(STREAM_HINTS) or ())
    others = [as_mapping(entry) for entry in result.structured.get(OTHER_STREAMS) or ()]
    if others:
        lines.append(other_streams_line(others, bool(hits)))
    recall = meta.get("recall")
    if isinstance(recall, Mapping) and (
        recall.get("complete") is False or recall.get("ranking_scope") == "candidate_window"
    ):
        lines.append(
            "Recall: ranked over a bounded candidate window, not all matches; more may exist, do not treat this page as exhaustive."
        )
    if package.get("source_mix"):
        mix = "; ".join(
            f"{m.get('connection_id')} ({m.get('connector_key')}{', ' + str(m['display_name']) if m.get('display_name') else ''})={m.get('count')}"
            for m in package["source_mix"][:8]
            if isinstance(m, Mapping)
        )
        lines.append(f"sources: {mix}")
    if package.get("order") not in (None, "relevance"):
        lines.append(package_order_line(package))  # a page ordered by the judge: the fused line says so
    lines.extend(warning_lines(meta.get("warnings"), 400))  # room for a member's reconnect command
    footer = []
    if hits:  # the first hit's block may offer its fetch already: no example then
        offered = _whole_text_line(hits[0], _evidence(hits[0]))
        example = "" if offered else f", e.g. {call_text('fetch', _naming(hits[0]))}"
        footer.append(f"Fetch a hit by its id as shown (connection_id only where shown apart){example}")
    blocks, bare = _blocks(hits)
    used = sum(len(line) + 1 for line in [*lines, *footer]) + (len(BARE_ROWS) + 1 if bare else 0)
    most = _judged_detail(hits) + len(bare)  # a bare row costs nothing more in either form
    fit = partial(
        fit_rows,
        BUDGET - used - len(_id_only_note(len(hits), len(hits), judged=True)) - 1,
        compact=[_hit_row(n, hit) for n, hit in enumerate(hits, 1)],
        max_detailed=most,
        reserve=len(_not_listed(args, len(hits), len(hits))) + 1,
    )
    rows, listed, detailed = fit(blocks)
    if not detailed and blocks:  # a long list: the first hit with its best window only
        rows, listed, detailed = fit([_hit_block(1, hits[0], windows=1), *blocks[1:]])
    lines.extend(rows)
    if any(number <= listed for number in bare):
        lines.append(BARE_ROWS)
    cut = [number for number in range(detailed + 1, listed + 1) if number not in bare]
    if cut:
        judged = detailed >= most and most < MAX_HITS + len(bare)
        lines.append(_id_only_note(cut[0] - 1, listed, judged=judged))
    if listed < len(hits):
        lines.append(_not_listed(args, listed, len(hits)))
    return "\n".join([*lines, *footer])


def _blocks(hits: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[int]]:
    """Each hit's detailed block, but its one-line row for a hit without text evidence
    after one that shows some (a model reads past it to the evidence), with the aimed read
    of its long field when it has one; the numbers of those rows."""
    blocks, rows = [], []
    shown = False
    for number, hit in enumerate(hits, 1):
        evidenced = bool(hit.get("evidence"))
        if shown and not evidenced:
            blocks.append(_hit_row(number, hit) + _near_line(hit))
            rows.append(number)
        else:
            blocks.append(_hit_block(number, hit))
        shown = shown or evidenced
    return blocks, rows


def _near_line(hit: Mapping[str, Any]) -> str:
    """The aimed read of a brief hit's long field, on a line of its own (none without one)."""
    near = hit.get("read_near")
    if not isinstance(near, Mapping):
        return ""
    return "\n    long: read where it speaks of your words with " + call_text(
        str(near.get("tool")), near.get("arguments") or {}
    )


def _judged_detail(hits: Sequence[Mapping[str, Any]]) -> int:
    """How many of a page's first hits are shown in detail at most: on a page ordered by the
    judge (every hit has a ``relevance``), those scoring at least ``DETAIL_SHARE`` of its best
    (at least one); ``MAX_HITS`` on any other page."""
    scores = [hit.get("relevance") for hit in hits]
    judged = [float(score) for score in scores if isinstance(score, int | float)]
    if not judged or len(judged) != len(hits):
        return MAX_HITS
    best = max(judged)
    kept = next((i for i, score in enumerate(judged) if score < DETAIL_SHARE * best), len(judged))
    return max(1, min(MAX_HITS, kept))


def _id_only_note(detailed: int, listed: int, *, judged: bool = False) -> str:
    why = "judged well below the first" if judged else "for the text budget"
    which = f"hit {listed} is" if listed == detailed + 1 else f"hits {detailed + 1}–{listed} are"
    return f"({which} listed by id only, {why}: fetch one by id)"


def _not_listed(args: SearchArgs, listed: int, total: int) -> str:
    where = f"Hits {listed + 1}–{total} ({total - listed}) are not listed in this text (their ids are in structured output results)"
    if args.mode == "hybrid":
        return f"{where}; hybrid search does not page: narrow the query or streams to list them."
    smaller = again(args.arguments, without=("cursor",), limit=max(1, listed))
    if args.cursor:
        return f"{where}; to list them, repeat this call with limit={listed}, then follow its next_cursor."
    return f"{where}; to list them, follow next_cursor from {call_text('search', smaller)}"


def _flat(text: str) -> str:
    """One line: previews keep their words, not their paragraph breaks."""
    return " ".join(text.split())


def _plain(preview: str) -> str:
    """A preview's words alone: one line, no marks, no ``…`` at its ends."""
    return _flat(parse_marks(preview)[0]).strip("… ")


def _connection_part(hit: Mapping[str, Any]) -> str:
    connection = hit.get("connection_id")
    hit_id = str(hit.get("id"))
    return f" connection_id={connection}" if connection and not hit_id.startswith(f"{connection}/") else ""


def _evidence(hit: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [e for e in hit.get("evidence") or () if isinstance(e, Mapping)]


def _whole_text_line(hit: Mapping[str, Any], evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """A hit's ``fetch`` line, ahead of its evidence, when its evidence shows its long text only
    in part (a field ``fetch`` shows): the windows hold the sentences judged best, so when they
    miss the answer the whole text is the next place to look."""
    part = next(
        (e for e in evidence if isinstance(e.get("read"), Mapping) and e.get("field") in TEXT_FIELDS), None
    )
    if part is None:
        return []
    total = part.get("total_chars")
    size = ""
    if isinstance(total, int):
        first = f"; fetch shows its first {FETCH_TEXT_CHARS:,}" if total > FETCH_TEXT_CHARS else ""
        size = f" ({total:,} chars{first})"
    return [f"    its whole text{size}: {call_text('fetch', _naming(hit))}"]


def _fetch_shows(read: Mapping[str, Any]) -> bool:
    """Whether a fetch of the record shows all that ``read`` (a window's read-more) would."""
    arguments = as_mapping(read.get("arguments"))
    offset, limit = arguments.get("offset_chars"), arguments.get("limit_chars")
    return isinstance(offset, int) and isinstance(limit, int) and offset + limit <= FETCH_TEXT_CHARS


def _naming(hit: Mapping[str, Any]) -> dict[str, Any]:
    hit_id = str(hit.get("id"))
    connection = hit.get("connection_id")
    if connection and not hit_id.startswith(f"{connection}/"):
        return {"id": hit_id, "connection_id": connection}
    return {"id": hit_id}


def _hit_row(number: int, hit: Mapping[str, Any]) -> str:
    row = f"[{number}] id={hit.get('id')}{_connection_part(hit)}"
    evidence = [e for e in hit.get("evidence") or () if isinstance(e, Mapping) and e.get("preview")]
    source = str(evidence[0]["preview"]) if evidence else str(hit.get("snippet") or "")
    if not source.strip():
        return row
    return f"{row} {preview_around_mark(_flat(source), ROW_EXCERPT_CHARS)[0]}"


def _origin_line(hit_id: str, origin: Mapping[str, Any]) -> str:
    """Who sent a hit and when (``retrieval.hit_origin``): its own fields, or those of the record
    it belongs to, named with its title and id (fetch reads it whole)."""
    values = " · ".join(f"{name}: {value}" for name, value in as_mapping(origin.get("fields")).items())
    if origin.get("id") == hit_id:
        return clip(f"    {values}", 300)
    title = f" {dumps(origin['title'])}" if origin.get("title") else ""
    return clip(f"    belongs to {origin.get('stream')} {origin.get('id')}{title}: {values}", 400)


def _hit_block(number: int, hit: Mapping[str, Any], windows: int = MAX_EVIDENCE) -> str:
    hit_id = str(hit.get("id"))
    source = hit.get("connector_key") or ""
    if hit.get("display_name"):
        source = f"{source} ({hit['display_name']})" if source else str(hit["display_name"])
    stream = str(hit.get("stream"))
    parts = [f"[{number}] id={hit_id}"]
    if f"/{stream}:" not in hit_id and not hit_id.startswith(f"{stream}:"):
        parts.append(f"stream={stream}")
    if source:
        parts.append(f"source={source}")
    if hit.get("thread_of"):  # a part of a thread (retrieval.threads, retrieval.linked_hits)
        parts.append(f"in thread {hit['thread_of']}")
    origin = hit.get("origin")
    if hit.get("body_of") and as_mapping(origin).get("id") != hit["body_of"]:
        parts.append(f"belongs to {hit['body_of']}")  # the header it was folded with (retrieval.linked_hits)
    title = str(hit.get("title", ""))
    named = made_title_part(stream, str(hit.get("record_id")))  # a title made of source, stream and id
    evidence = _evidence(hit)
    made, _, matched_value = title.partition(" · ")
    shown_fields = {str(e.get("field")) for e in evidence}
    if named in made and evidence and matched_value.split(":", 1)[0] in {"", *shown_fields}:
        # its evidence shows the field it matched in: only its date, if it has one
        when = made.split(named, 1)[1].strip(" /")
        lines = [" ".join([*parts, *([f"at {when}"] if when else [])]) + _connection_part(hit)]
    else:
        lines = [" ".join(parts) + _connection_part(hit), f"    title: {clip(title, 100)}"]
    if isinstance(origin, Mapping):  # its origin line names the record it belongs to
        lines.append(_origin_line(hit_id, origin))
    whole = _whole_text_line(hit, evidence)
    lines.extend(whole)
    previews = [_plain(str(e.get("preview", ""))) for e in evidence]
    snippet = _flat(str(hit.get("snippet") or ""))
    passages = any(e.get("provenance") == "passage" for e in evidence)  # not its opening
    said = _plain(snippet)  # already shown when an evidence preview (or the title) holds it, or it them
    shown = any(said in preview or (preview and preview in said) for preview in previews)
    if said and not passages and not shown and said not in title:
        lines.append(f"    snippet: {preview_around_mark(snippet, SNIPPET_CHARS)[0]}")
    for item in evidence[: windows if number == 1 else 1]:
        passage = item.get("provenance") == "passage"  # bounded already, around its sentence
        preview = preview_around_mark(
            _flat(str(item.get("preview", ""))), PASSAGE_CHARS if passage else PREVIEW_CHARS
        )[0]
        where = ""
        if passage:
            where = f" (passage at char {item.get('at_chars')} of {item.get('total_chars')})"
        lines.append(f"    evidence {item.get('field')}{where}: {preview}")
        read = item.get("read")
        if isinstance(read, Mapping) and not (whole and _fetch_shows(read)):
            lines.append(f"      read more: {call_text(str(read.get('tool')), read.get('arguments') or {})}")
    matched = [str(f) for f in hit.get("matched_fields") or ()]
    near = hit.get("read_near")
    if evidence:
        pass
    elif isinstance(near, Mapping):
        lines.append(
            f"    {', '.join(matched)} is long: read where it speaks of your words with "
            + call_text(str(near.get("tool")), near.get("arguments") or {})
        )
    elif not matched or not set(matched) <= set(TITLE_FIELDS):  # a title match shows in the title
        lines.append(
            f"    no text evidence (matched {', '.join(matched) or 'unproven fields'}); read it with "
            + call_text("fetch", _naming(hit))
        )
    return "\n".join(lines)
