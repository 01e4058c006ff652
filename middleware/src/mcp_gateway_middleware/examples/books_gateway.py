"""An MCP server over a library catalogue's HTTP API, on the MCP SDK's ASGI app (or stdio).

The catalogue is one HTTP API with its own bearer token: ``GET /search?q=<text>&limit=<n>`` →
``{"books": [{"isbn", "title", "author"}]}`` and ``GET /books/<isbn>`` → ``{"isbn", "title",
"author", "copies_free"}`` (a 4xx answers ``{"error": {"code", "message", ...}}``). Two tools:
``search_books`` and ``get_book``; each caller may call each tool at its own pace.

Run it (extra ``mcp``; the catalogue's URL and token come from the environment, so no token is
ever on a command line): ``CATALOGUE_URL=http://... CATALOGUE_TOKEN=... python books_gateway.py
--stdio``, or ``--keys keys.json [--port 0]`` for Streamable HTTP on the SDK's ASGI app served
by uvicorn (``keys.json``: ``{"<API key>": "<caller name>"}``; ``cli.run``), which prints the
URL it serves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import aiohttp
from mcp.server import Server
from mcp_gateway_middleware import (
    LimitCalls,
    Middleware,
    PreserveErrors,
    RenderContent,
    ToolCall,
    ToolResult,
    ValidateArguments,
    compose,
)
from mcp_gateway_middleware.cli import CallerOf, run
from mcp_gateway_middleware.ratelimit import LocalLimiter, Rate
from mcp_gateway_middleware.sdk import build_server
from mcp_gateway_middleware.specs import ToolSpec, input_schemas
from mcp_gateway_middleware.timeouts import CallTimeout
from mcp_gateway_middleware.upstream import HttpUpstream, session_lifespan

ISBN = {"type": "string", "pattern": "^[0-9]{13}$", "description": "13 digits, no hyphens"}
BOOK = {
    "type": "object",
    "properties": {"isbn": {"type": "string"}, "title": {"type": "string"}, "author": {"type": "string"}},
    "required": ["isbn", "title", "author"],
}
SPECS = [
    ToolSpec(
        "search_books",
        "Search the catalogue by title or author.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 3, "maxLength": 100},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        output_schema={"type": "object", "properties": {"books": {"type": "array", "items": BOOK}}},
        annotations={"readOnlyHint": True},
    ),
    ToolSpec(
        "get_book",
        "One book by ISBN, with how many copies are free to borrow.",
        {"type": "object", "properties": {"isbn": ISBN}, "required": ["isbn"], "additionalProperties": False},
        output_schema=BOOK,
        annotations={"readOnlyHint": True},
    ),
]


@dataclass(frozen=True)
class Reader:
    """A call's context: who calls, and the catalogue."""

    caller: str
    catalogue: HttpUpstream


async def tools(call: ToolCall[Reader]) -> ToolResult:
    catalogue = call.context.catalogue
    if call.name == "search_books":
        query = {"q": call.arguments["query"], "limit": str(call.arguments.get("limit", 5))}
        return ToolResult({"books": (await catalogue.call("GET", "search", params=query))["books"]})
    return ToolResult(await catalogue.call("GET", f"books/{call.arguments['isbn']}"))


def render_books(call: ToolCall[Reader], result: ToolResult) -> str:
    books = result.structured["books"]
    return f"{len(books)} book(s): " + "; ".join(
        f"{b['title']} by {b['author']} ({b['isbn']})" for b in books
    )


def render_book(call: ToolCall[Reader], result: ToolResult) -> str:
    book = result.structured
    return f"{book['title']} by {book['author']}: {book.get('copies_free', 0)} copies free."


def catalogue_api(session: aiohttp.ClientSession) -> dict[str, HttpUpstream]:
    url, bearer = os.environ["CATALOGUE_URL"], {"Authorization": f"Bearer {os.environ['CATALOGUE_TOKEN']}"}
    return {"catalogue": HttpUpstream(session, url, name="the catalogue", headers=bearer)}


# The glue: the upstream, the pipeline, the server and the way in.
def books_server(caller_of: CallerOf) -> Server[Any]:
    per_tool = LocalLimiter(Rate(1, 10), Rate(0, 0))
    limits = LimitCalls[Reader](per_tool, lambda call: call.context.caller, per_tool=True)
    renderers = {"search_books": render_books, "get_book": render_book}
    outer: list[Middleware[Reader]] = [RenderContent(renderers), PreserveErrors(), limits]
    pipeline = compose([*outer, ValidateArguments(input_schemas(SPECS)), CallTimeout[Reader](5.0)], tools)
    reader = lambda ctx: Reader(caller_of(ctx), ctx.lifespan_context["catalogue"])  # noqa: E731 - the call's context
    lifespan = session_lifespan(catalogue_api)
    return build_server("books-gateway", "1.0.0", SPECS, pipeline, reader, lifespan=lifespan)


if __name__ == "__main__":
    run(books_server, description="Serve the books gateway (stdio, or Streamable HTTP on the SDK's app).")
