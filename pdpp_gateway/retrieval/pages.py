"""One RS search page as the answer's envelope, and the reads every retrieval step shares.

Contract: ``SEARCH_PATHS`` names the RS route of each search mode; ``results`` turns an RS
search body into ChatGPT-compatible hits (``documents.search_results``); ``envelope`` and
``answer`` make the structured answer of a page (``data``, ``results``, and ``retrieval``
when the gateway chose how the hits were found); ``naming`` is the arguments naming a hit's
record. ``granted_schema`` and ``meaning_mode`` read the grant's compact schema and the
meaning-based mode the RS publishes through the caller's memo (no RS read in steady state),
each ``None`` when the read fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway import documents
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.ids import handle_arguments
from pdpp_gateway.render.common import RETRIEVAL, as_mapping
from pdpp_gateway.rs.client import RsResponse
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.rs.memo import memoised_read

SEARCH_PATHS: Final = {
    "lexical": "/v1/search",
    "semantic": "/v1/search/semantic",
    "hybrid": "/v1/search/hybrid",
}


def naming(hit: Mapping[str, Any]) -> dict[str, str]:
    connection = hit.get("connection_id")
    return handle_arguments(
        str(hit.get("stream")), str(hit.get("record_id")), connection if isinstance(connection, str) else None
    )


def page_hits(context: GatewayContext, response: RsResponse) -> list[dict[str, Any]]:
    return documents.search_results(response.body, provider_url=context.provider_url)


def envelope(
    context: GatewayContext,
    response: RsResponse,
    results: list[dict[str, Any]],
    retrieval: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    structured: dict[str, Any] = {
        "data": documents.search_envelope(response.body, len(results)),
        "provider_url": context.provider_url,
        "request_id": response.request_id,
        "results": results,
    }
    if retrieval is not None:
        structured[RETRIEVAL] = dict(retrieval)
    return structured


def answer(
    context: GatewayContext,
    response: RsResponse,
    results: list[dict[str, Any]],
    retrieval: Mapping[str, Any] | None = None,
) -> ToolResult:
    return ToolResult(structured=envelope(context, response, results, retrieval))


async def granted_schema(context: GatewayContext) -> Mapping[str, Any] | None:
    """The grant's compact schema, read through the caller's memo (``None`` when it fails:
    the answer then has no stream hints)."""
    try:
        response: RsResponse = await memoised_read(context.rs, "/v1/schema", (("view", "compact"),))
    except RsError:
        return None
    return response.body


async def meaning_mode(context: GatewayContext) -> str | None:
    """The meaning-based search mode the RS publishes (hybrid, else semantic) in its
    protected-resource metadata's ``capabilities``, read through the caller's memo."""
    try:
        response = await memoised_read(context.rs, "/.well-known/oauth-protected-resource", ())
    except RsError:
        return None
    capabilities = as_mapping(response.body.get("capabilities"))
    for mode in ("hybrid", "semantic"):
        if as_mapping(capabilities.get(f"{mode}_retrieval")).get("supported") is True:
            return mode
    return None
