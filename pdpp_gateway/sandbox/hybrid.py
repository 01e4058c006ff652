"""The reference's hybrid search merge: lexical and semantic hits taken in turn, one per record.

Contract: ``round_robin(lexical, semantic)`` takes the two ranked lists in turn (lexical
first), merging hits of one record into one entry that keeps every source's score
(``scores``), its sources (``retrieval_sources``) and matched fields; ``hybrid_shape(hit)`` is
such an entry as the reference sends it: identity, sources, scores and one snippet, no
evidence excerpts or authored time.
"""

from __future__ import annotations

from typing import Any, Final

# What a hybrid hit keeps of its lexical or semantic source hit (the reference's merge).
_HYBRID_KEYS: Final = (
    "object",
    "stream",
    "record_key",
    "connector_id",
    "connection_id",
    "connector_instance_id",
    "display_name",
    "emitted_at",
    "record_url",
)


def round_robin(lexical: list[dict[str, Any]], semantic: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for pair in zip(lexical, semantic, strict=False):
        for hit, kind in ((pair[0], "lexical"), (pair[1], "semantic")):
            _merge(merged, hit, kind)
    for hit in lexical[len(semantic) :]:
        _merge(merged, hit, "lexical")
    for hit in semantic[len(lexical) :]:
        _merge(merged, hit, "semantic")
    return list(merged.values())


def _merge(merged: dict[tuple[str, str, str], dict[str, Any]], hit: dict[str, Any], kind: str) -> None:
    key = (hit["connection_id"], hit["stream"], hit["record_key"])
    entry = merged.setdefault(
        key,
        {
            **{k: v for k, v in hit.items() if k not in ("score", "retrieval_mode", "matched_fields")},
            "matched_fields": [],
            "retrieval_mode": "hybrid",
            "retrieval_sources": [],
            "scores": {},
        },
    )
    entry["retrieval_sources"].append(kind)
    entry["scores"][kind] = hit["score"]
    for field in hit.get("matched_fields") or ():
        if field not in entry["matched_fields"]:
            entry["matched_fields"].append(field)


def hybrid_shape(hit: dict[str, Any]) -> dict[str, Any]:
    """A merged hit as the reference sends it: identity, sources, scores and one snippet."""
    shaped: dict[str, Any] = {key: hit[key] for key in _HYBRID_KEYS if key in hit}
    sources = hit["retrieval_sources"]
    shaped.update(
        matched_fields=hit["matched_fields"],
        retrieval_mode="hybrid",
        retrieval_sources=[kind for kind in ("lexical", "semantic") if kind in sources],
        scores=hit["scores"],
    )
    if hit.get("snippet"):
        shaped["snippet"] = hit["snippet"]
    return shaped
