"""Text for ``search``: hits with complete ids, sources, and proven evidence.

Contract: a summary line (hit count, has_more, next_cursor verbatim, mode), recall and
source-mix disclosures when the RS sent them, then up to ``MAX_HITS`` hits, each with
its complete id (never cut), stream, source label, title and snippet. ``connection_id``
appears separately only for a hit whose id could not embed it. A hit proven in a text
field shows up to ``MAX_EVIDENCE`` bounded previews with the exact
``read_record_field`` arguments; a hit matched only on metadata shows no invented body
window, only how to read it. Bounded by ``BUDGET`` characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from middleware import ToolCall, ToolResult
from pdpp_gateway.render.common import as_mapping, call_text, clip, dumps

BUDGET: Final = 3_600
MAX_HITS: Final = 8
MAX_EVIDENCE: Final = 2


def render_search(call: ToolCall, result: ToolResult) -> str:
    envelope = as_mapping(result.structured.get("data"))
    hits = [h for h in result.structured.get("results") or () if isinstance(h, Mapping)]
    mode = call.arguments.get("mode", "lexical")
    head = f"search {dumps(call.arguments.get('query'))} ({mode}): {len(hits)} hit(s), has_more={'true' if envelope.get('has_more') else 'false'}"
    lines = [head + "."]
    if envelope.get("next_cursor"):
        lines.append(f"next_cursor={envelope['next_cursor']} (pass as cursor with the same query for more)")
    meta = as_mapping(envelope.get("meta"))
    recall = meta.get("recall")
    if isinstance(recall, Mapping) and (
        recall.get("complete") is False or recall.get("ranking_scope") == "candidate_window"
    ):
        lines.append(
            "Recall: ranked over a bounded candidate window, not all matches; more may exist, do not treat this page as exhaustive."
        )
    package = meta.get("package")
    if isinstance(package, Mapping) and package.get("source_mix"):
        mix = "; ".join(
            f"{m.get('connection_id')} ({m.get('connector_key')}{', ' + str(m['display_name']) if m.get('display_name') else ''})={m.get('count')}"
            for m in package["source_mix"][:8]
            if isinstance(m, Mapping)
        )
        lines.append(f"sources: {mix}")
    for warning in meta.get("warnings") or ():
        if isinstance(warning, Mapping):
            lines.append(clip(f"warning {warning.get('code')}: {warning.get('message', '')}", 240))
    used = sum(len(line) + 1 for line in lines)
    shown = 0
    for number, hit in enumerate(hits[:MAX_HITS], 1):
        block = _hit_block(number, hit)
        if used + len(block) + 200 > BUDGET and shown:
            break
        lines.append(block)
        used += len(block) + 1
        shown += 1
    if len(hits) > shown:
        lines.append(f"({len(hits) - shown} more hit(s) with their ids in structured output results)")
    if hits:
        lines.append(
            'Fetch a hit with fetch {"id": <id as shown>}: ids are self-contained; pass connection_id only where it is shown separately.'
        )
    return "\n".join(lines)


def _flat(text: str) -> str:
    """One line: previews keep their words, not their paragraph breaks."""
    return " ".join(text.split())


def _hit_block(number: int, hit: Mapping[str, Any]) -> str:
    hit_id = str(hit.get("id"))
    source = hit.get("connector_key") or ""
    if hit.get("display_name"):
        source = f"{source} ({hit['display_name']})" if source else str(hit["display_name"])
    parts = [f"[{number}] id={hit_id}", f"stream={hit.get('stream')}"]
    if source:
        parts.append(f"source={source}")
    connection = hit.get("connection_id")
    if connection and not hit_id.startswith(f"{connection}/"):
        parts.append(f"connection_id={connection}")
    lines = [" ".join(parts), f"    title: {clip(str(hit.get('title', '')), 100)}"]
    evidence = [e for e in hit.get("evidence") or () if isinstance(e, Mapping)]
    previews = {_flat(str(e.get("preview", ""))) for e in evidence}
    if hit.get("snippet") and _flat(str(hit["snippet"])) not in previews:
        lines.append(f"    snippet: {clip(_flat(str(hit['snippet'])), 200)}")
    for item in evidence[:MAX_EVIDENCE]:
        lines.append(f"    evidence {item.get('field')}: {clip(_flat(str(item.get('preview', ''))), 260)}")
        read = item.get("read")
        if isinstance(read, Mapping):
            lines.append(f"      read more: {call_text(str(read.get('tool')), read.get('arguments') or {})}")
    if not evidence:
        matched = ", ".join(str(f) for f in hit.get("matched_fields") or ()) or "unproven fields"
        lines.append(
            f"    no text evidence (matched {matched}); read it with " + call_text("fetch", {"id": hit_id})
        )
    return "\n".join(lines)
