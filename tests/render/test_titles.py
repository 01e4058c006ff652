"""Titles a person can read, never the ingest time (issue 13), as pure functions.

The reference RS's own answers (``shared/samples/rs``) are the input where they show the
case: every hit there carries ``emitted_at`` 2026-06-01T00:00:00.000Z, the ingest time of
the whole seed, and most carry no ``authored_at``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp_gateway_middleware import ToolResult

from pdpp_gateway.documents import search_results
from pdpp_gateway.render.records import render_records
from pdpp_gateway.tools.args import parse_query_records

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "rs"
PROVIDER = "https://rs.example"


def _capture(name: str) -> dict[str, Any]:
    path = CAPTURES / name
    if not path.is_file():
        pytest.skip(f"reference capture {name} is not on this machine")
    body: dict[str, Any] = json.loads(path.read_text())["body"]
    return body


@pytest.mark.parametrize(
    "name", ["28-search-lexical.json", "31-search-hybrid.json", "32-search-lexical-owner-all-sources.json"]
)
def test_reference_hits_are_titled_by_their_match_not_by_the_ingest_time(name: str) -> None:
    body = _capture(name)
    ingest = {hit["emitted_at"] for hit in body["data"]}
    results = search_results(body, provider_url=PROVIDER)
    for hit, result in zip(body["data"], results, strict=True):
        assert all(moment not in result["title"] for moment in ingest), result["title"]
        assert "<mark>" not in result["title"]
        snippet = hit.get("snippet") or {}
        plain = re.sub(r"</?mark>", "", snippet.get("text", ""))
        if snippet.get("field") in ("subject", "title", "name"):
            assert result["title"] == plain
        else:  # source, stream and id, then the matched field and a window of its value
            assert result["title"].startswith(
                f"{hit['connector_id']} / {hit['stream']} / {hit['record_key']}"
            )
            assert f" · {snippet['field']}: " in result["title"]


def test_record_rows_show_a_title_like_field_and_an_authored_time_only() -> None:
    records = [
        {
            "object": "record",
            "id": f"R{n}",
            "stream": "repositories",
            "connection_id": "cin_github",
            "emitted_at": "2026-06-01T00:00:00.000Z",
            "data": {
                "id": f"R{n}",
                "synced_at": "2026-06-01T00:00:00.000Z",  # bookkeeping, not the record's time
                "full_name": f"octocat/repo-{n}",
                "description": "x" * 600,
                "created_at": f"2025-01-{n + 1:02d}T00:00:00.000Z",
            },
        }
        for n in range(12)
    ]
    page = {"object": "list", "data": records, "has_more": False}
    text = render_records(parse_query_records({"stream": "repositories"}), ToolResult({"data": page}))
    rows = [line for line in text.splitlines() if re.match(r"^\[\d+\] \S+ \"", line)]
    assert rows, text  # some records are in one-line form for the budget
    for row in rows:
        number = int(row[1 : row.index("]")]) - 1
        assert row.endswith(f'"octocat/repo-{number}" 2025-01-{number + 1:02d}T00:00:00.000Z'), row
    assert "2026-06-01" not in "\n".join(rows)
