"""The global schema index under its byte budgets: structured rows degrade (names, then cut) with
explicit metadata, and the text keeps every stream name through each degradation."""

from __future__ import annotations

import re

import orjson
import pytest
from mcp_gateway_middleware import ToolResult

from pdpp_gateway.render.schema import INDEX_TEXT_BUDGET, render_schema
from pdpp_gateway.schema_view import INDEX_ANNOTATION, INDEX_STRUCTURED_BUDGET, bound_index, index_view
from pdpp_gateway.tools.args import parse_schema
from tests.upstreams import broad_schema, broad_stream_names


@pytest.mark.parametrize(("connectors", "level"), [(2, None), (8, "names"), (40, "capped")])
def test_structured_index_degrades_with_explicit_metadata(connectors: int, level: str | None) -> None:
    index = index_view(broad_schema(connectors, 15))
    bounded = bound_index(index)
    assert len(orjson.dumps(bounded)) <= INDEX_STRUCTURED_BUDGET
    note = bounded.get("index_bounded")
    if level is None:
        assert note is None
        assert bounded == index
        return
    assert note["level"] == level
    assert note["stream_count"] == connectors * 15
    rows = [row for connector in bounded["connectors"] for row in connector["streams"]]
    assert note["streams_listed"] == len(rows)
    assert all(set(row) == {"name"} for row in rows)  # counts and connections go first
    if level == "capped":
        assert len(rows) < connectors * 15
        assert any(c.get("streams_truncated") for c in bounded["connectors"])


@pytest.mark.parametrize("connectors", [2, 8, 40])
def test_text_names_every_stream_at_every_level(connectors: int) -> None:
    index = index_view(broad_schema(connectors, 15))
    result = ToolResult(structured={"data": bound_index(index)}, annotations={INDEX_ANNOTATION: index})
    text = render_schema(parse_schema({}), result)
    assert len(text) <= INDEX_TEXT_BUDGET
    for connector in range(connectors):
        for name in broad_stream_names(connector, 15):
            assert re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text), name
    if connectors == 2:
        assert "(100)" in text  # the richest layout, with record counts, when it fits
