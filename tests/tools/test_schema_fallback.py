"""An RS that does not know ``view=compact``: schema falls back to a local projection of the
full body, and a model sees the same index and stream views either way: for
``schema(stream)`` that is the RS compact body itself (spec 000), so the projection must
rebuild it exactly, which the reference RS's own full and compact captures pin too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.schema_view import compact_projection, stream_view, unwrap_schema
from tests.upstreams import upstream_proxy

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "rs"
SCOPES: list[dict[str, str]] = [
    {},
    {"stream": "messages", "connection_id": "cin_mail_work"},
    {"stream": "issues"},
]


async def schema_views(url: str, token: str) -> list[Any]:
    views = []
    async with mcp_http(url, token) as client:
        for arguments in SCOPES:
            result = await client.call_tool("schema", arguments)
            assert not result.is_error, result.content
            views.append((result.structured_content["data"], result.content[0].text))  # type: ignore[union-attr]
    return views


@pytest.mark.parametrize("token", ["client_broad", "client_narrow"])
async def test_fallback_projection_matches_the_rest_compact_view(shared_sandbox: Any, token: str) -> None:
    bearer = shared_sandbox.tokens[token]
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as direct_url:
        direct = await schema_views(direct_url, bearer)
    async with (
        upstream_proxy(shared_sandbox.url, refuse_compact=True) as proxy,
        start_gateway(sandbox_settings(shared_sandbox.url, rs_internal_url=proxy.url)) as fallback_url,
    ):
        fallback = await schema_views(fallback_url, bearer)
    seen = [entry.path_qs for entry in proxy.seen]
    assert any("view=compact" in path for path in seen)
    assert any(path.startswith("/v1/schema") and "view" not in path for path in seen)
    assert fallback == direct
    for (data, _), query in zip(direct[1:], SCOPES[1:], strict=True):
        assert data == await rest_compact(shared_sandbox.url, bearer, query)  # the RS body, verbatim


async def rest_compact(url: str, token: str, query: dict[str, str]) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{url}/v1/schema",
            params={"view": "compact", **query},
            headers={"Authorization": f"Bearer {token}"},
        ) as answer,
    ):
        return unwrap_schema(await answer.json())


def _capture(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((CAPTURES / name).read_text())["body"]
    return body


@pytest.mark.skipif(not CAPTURES.is_dir(), reason="shared/samples/rs is not beside the repository")
def test_projection_of_the_reference_full_schema_is_its_compact_schema() -> None:
    full = unwrap_schema(_capture("05-schema-full-client.json"))
    compact = unwrap_schema(_capture("06-schema-compact-client.json"))
    assert compact_projection(full) == compact
    assert stream_view(compact, stream="messages") == compact  # a compact body passes through untouched
