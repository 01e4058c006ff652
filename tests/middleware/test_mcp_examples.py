"""The library's two MCP examples, driven by the MCP SDK's own client, as a user would.

``weather_gateway`` (aiohttp: ``sdk_aiohttp.mcp_app``) and ``books_gateway`` (the SDK's ASGI app
behind ``asgi.McpDoor``, served by uvicorn) each run over Streamable HTTP in both protocol eras
(the handshake era, ``mode="legacy"``, and 2026-07-28, the client's default) and over stdio (a
child process started as its docstring says), against fake upstream HTTP APIs that check their
own bearer tokens. What is asserted is what the client sees: tools, answers, typed errors, and
door refusals that arrive as readable JSON-RPC errors.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import os
import runpy
import sys
import tokenize
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import pytest
from aiohttp import web
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_gateway_middleware import asgi, http
from mcp_gateway_middleware.cli import api_keys
from mcp_gateway_middleware.ratelimit import LocalLimiter, Rate
from mcp_gateway_middleware.sdk import asgi_app
from mcp_gateway_middleware.sdk_aiohttp import mcp_app
from multidict import CIMultiDict

from tests.middleware.asgi_server import serving

EXAMPLES = Path(__file__).resolve().parents[2] / "middleware/src/mcp_gateway_middleware/examples"
weather = runpy.run_path(str(EXAMPLES / "weather_gateway.py"), run_name="weather_gateway")
books = runpy.run_path(str(EXAMPLES / "books_gateway.py"), run_name="books_gateway")
ERAS = pytest.mark.parametrize("mode", ["legacy", "auto"])
KEYS = {"ada-key-51": "ada", "bob-key-77": "bob"}


def upstream(token: str, routes: dict[str, Any]) -> web.Application:
    """A fake upstream API: JSON answers by path, refusing any other bearer than ``token``."""

    async def answer(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {token}":
            return web.json_response(
                {"error": {"code": "bad_token", "message": "Unknown token."}}, status=401
            )
        status, body = routes.get(
            request.path, (404, {"error": {"code": "not_found", "message": "No such thing."}})
        )
        if callable(body):
            body = body(request.query)
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    return app


def stations(*found: tuple[str, str]) -> Any:
    return lambda query: {
        "stations": [{"code": c, "name": n} for c, n in found if query["q"].lower() in n.lower()]
    }


@pytest.fixture
async def sites(aiohttp_server: Any) -> dict[str, Any]:
    north = upstream(
        "north-token",
        {
            "/stations": (200, stations(("OSL", "Oslo"), ("BGO", "Bergen"))),
            "/stations/OSL/current": (200, {"temperature_c": -3.5, "wind_kph": 12}),
            "/stations/XYZ/current": (
                404,
                {"error": {"code": "no_station", "message": "No station XYZ.", "nearest": "OSL"}},
            ),
        },
    )
    south = upstream("south-token", {"/stations": (200, stations(("OSA", "Osaka")))})
    servers = {"north": await aiohttp_server(north), "south": await aiohttp_server(south)}
    return {
        name: {"url": str(server.make_url("/")), "token": f"{name}-token"} for name, server in servers.items()
    }


DUNE = {"isbn": "9780441013593", "title": "Dune", "author": "Frank Herbert"}


@pytest.fixture
async def catalogue(aiohttp_server: Any) -> tuple[str, str]:
    app = upstream(
        "shelf-token",
        {
            "/search": (200, lambda query: {"books": [DUNE] if "dune" in query["q"].lower() else []}),
            f"/books/{DUNE['isbn']}": (200, {**DUNE, "copies_free": 2}),
        },
    )
    return str((await aiohttp_server(app)).make_url("/")), "shelf-token"


authenticate = api_keys(KEYS)


def sdk_error(raised: BaseException) -> Any:
    """The ``ErrorData`` of the ``MCPError`` the SDK client raised (inside its task groups)."""
    while isinstance(raised, BaseExceptionGroup):
        raised = raised.exceptions[0]
    assert isinstance(raised, MCPError), repr(raised)
    return raised.error


@contextlib.asynccontextmanager
async def client(url: str, mode: str, key: str | None = "ada-key-51") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as connected,  # type: ignore[arg-type]
    ):
        yield connected


@contextlib.asynccontextmanager
async def weather_http(sites: dict[str, Any], aiohttp_server: Any) -> AsyncIterator[str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WEATHER_SITES", json.dumps(sites))
        server = weather["weather_server"](lambda ctx: http.accepted(ctx.request))
    yield str((await aiohttp_server(mcp_app(server, authenticate=authenticate))).make_url("/mcp"))


@contextlib.asynccontextmanager
async def books_http(catalogue: tuple[str, str], **door: Any) -> AsyncIterator[str]:
    server = books["books_server"](lambda ctx: asgi.accepted(ctx.request))
    with pytest.MonkeyPatch.context() as patch:  # read when the server starts
        patch.setenv("CATALOGUE_URL", catalogue[0])
        patch.setenv("CATALOGUE_TOKEN", catalogue[1])
        async with serving(asgi_app(server, authenticate=authenticate, **door)) as base:
            yield f"{base}/mcp"


@ERAS
async def test_the_weather_gateway_answers_an_sdk_client_over_aiohttp(
    mode: str, sites: Any, aiohttp_server: Any
) -> None:
    async with weather_http(sites, aiohttp_server) as url, client(url, mode) as mcp:
        assert [tool.name for tool in (await mcp.list_tools()).tools] == [
            "find_stations",
            "current_conditions",
        ]
        found = await mcp.call_tool("find_stations", {"query": "os"})
        assert found.structured_content == {"stations": ["north/OSL", "south/OSA"], "unavailable": []}
        now = await mcp.call_tool("current_conditions", {"station": "north/OSL"})
        assert (now.is_error, now.content[0].text) == (False, "north/OSL: -3.5 °C, wind 12 km/h.")  # type: ignore[union-attr]
        missing = await mcp.call_tool("current_conditions", {"station": "north/XYZ"})
        assert (missing.is_error, missing.structured_content) == (True, None)  # no outputSchema clash
        assert missing.content[0].text == "Error no_station: No station XYZ."  # type: ignore[union-attr]
        bad = await mcp.call_tool("current_conditions", {"station": "Oslo"})
        assert bad.content[0].text == (  # type: ignore[union-attr]
            "Error invalid_arguments: argument 'station' must match the pattern '^[a-z]+/[A-Z]{3}$'; 'Oslo' does not."
        )


@ERAS
async def test_a_site_that_fails_leaves_a_partial_answer_that_names_it(
    mode: str, sites: Any, aiohttp_server: Any
) -> None:
    sites["south"]["token"] = "stale-token"  # the south site refuses the gateway's own credential
    async with weather_http(sites, aiohttp_server) as url, client(url, mode) as mcp:
        found = await mcp.call_tool("find_stations", {"query": "os"})
    assert found.structured_content == {"stations": ["north/OSL"], "unavailable": ["south"]}
    assert found.content[0].text == "1 station(s): north/OSL. Not searched: south."  # type: ignore[union-attr]


@ERAS
async def test_the_books_gateway_answers_an_sdk_client_over_the_sdk_s_asgi_app(
    mode: str, catalogue: Any
) -> None:
    async with books_http(catalogue) as url, client(url, mode) as mcp:
        assert [tool.name for tool in (await mcp.list_tools()).tools] == ["search_books", "get_book"]
        found = await mcp.call_tool("search_books", {"query": "Dune"})
        assert found.structured_content == {"books": [DUNE]}
        book = await mcp.call_tool("get_book", {"isbn": DUNE["isbn"]})
        assert book.content[0].text == "Dune by Frank Herbert: 2 copies free."  # type: ignore[union-attr]
        short = await mcp.call_tool("search_books", {"query": "Du"})
        assert short.content[0].text == (  # type: ignore[union-attr]
            "Error invalid_arguments: argument 'query' must be at least 3 characters long, not 2."
        )
        absent = await mcp.call_tool("get_book", {"isbn": "9999999999999"})
        assert absent.content[0].text == "Error not_found: No such thing."  # type: ignore[union-attr]


@ERAS
async def test_each_caller_has_its_own_bucket_per_tool(mode: str, catalogue: Any) -> None:
    async with books_http(catalogue) as url, client(url, mode) as mcp:
        answers = [await mcp.call_tool("get_book", {"isbn": DUNE["isbn"]}) for _ in range(11)]
        assert [answer.is_error for answer in answers] == [False] * 10 + [True]
        assert answers[-1].content[0].text.startswith("Error rate_limited: Too many calls: wait ")  # type: ignore[union-attr]
        assert not (await mcp.call_tool("search_books", {"query": "Dune"})).is_error  # another tool's bucket


@ERAS
@pytest.mark.parametrize("gateway", ["weather", "books"])
async def test_a_refused_key_reaches_the_sdk_client_as_a_readable_error(
    mode: str, gateway: str, sites: Any, catalogue: Any, aiohttp_server: Any
) -> None:
    served = weather_http(sites, aiohttp_server) if gateway == "weather" else books_http(catalogue)
    async with served as url:
        with pytest.raises(BaseException) as raised:  # noqa: PT011 - the SDK wraps it in task groups
            async with client(url, mode, key="wrong-key"):
                pass
    refused = sdk_error(raised.value)
    assert refused.code == -32001
    assert refused.message == "Send a known API key: Authorization: Bearer <key>."
    assert refused.data == {"status": 401, "code": "unknown_key"}


async def test_a_door_s_rate_limit_reaches_the_sdk_client_with_its_wait(catalogue: Any) -> None:
    limiter = LocalLimiter(Rate(0.001, 3), Rate(0, 0))  # three messages: initialize, initialized, tools/list
    async with books_http(catalogue, limiter=limiter) as url, client(url, "legacy") as mcp:
        await mcp.list_tools()
        with pytest.raises(MCPError) as refused:
            await mcp.call_tool("search_books", {"query": "Dune"})
    assert (refused.value.error.code, refused.value.error.data["code"]) == (-32029, "rate_limited")
    assert refused.value.error.data["retry_after_seconds"] >= 1


@ERAS
@pytest.mark.parametrize("gateway", ["weather", "books"])
async def test_each_example_serves_an_sdk_client_over_stdio(
    mode: str, gateway: str, sites: Any, catalogue: Any
) -> None:
    environment = {
        "WEATHER_SITES": json.dumps(sites),
        "CATALOGUE_URL": catalogue[0],
        "CATALOGUE_TOKEN": catalogue[1],
    }
    script = EXAMPLES / f"{gateway}_gateway.py"
    launch = StdioServerParameters(command=sys.executable, args=[str(script), "--stdio"], env=environment)
    call = (
        ("find_stations", {"query": "osaka"}) if gateway == "weather" else ("search_books", {"query": "dune"})
    )
    async with Client(launch, mode=mode, cache=None) as mcp:  # type: ignore[arg-type]
        assert len((await mcp.list_tools()).tools) == 2
        answer = await mcp.call_tool(*call)
    expected = (
        "1 station(s): south/OSA."
        if gateway == "weather"
        else "1 book(s): Dune by Frank Herbert (9780441013593)"
    )
    assert (answer.is_error, answer.content[0].text) == (False, expected)  # type: ignore[union-attr]


@pytest.mark.parametrize("gateway", ["weather", "books"])
async def test_each_example_serves_streamable_http_from_its_command_line(
    gateway: str, sites: Any, catalogue: Any, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KEYS))
    environment = {
        "WEATHER_SITES": json.dumps(sites),
        "CATALOGUE_URL": catalogue[0],
        "CATALOGUE_TOKEN": catalogue[1],
    }
    script = EXAMPLES / f"{gateway}_gateway.py"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        "--keys",
        str(keys),
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", ""), **environment},
    )
    try:
        assert child.stdout is not None
        line = (await asyncio.wait_for(child.stdout.readline(), 60)).decode()
        assert line.startswith(f"{gateway}_server on http://127.0.0.1:"), line
        async with client(line.split(" on ", 1)[1].strip(), "auto") as mcp:
            call = (
                ("find_stations", {"query": "bergen"})
                if gateway == "weather"
                else ("get_book", {"isbn": DUNE["isbn"]})
            )
            answer = await mcp.call_tool(*call)
        assert not answer.is_error
    finally:
        child.terminate()
        await child.wait()


def code_lines(path: Path, only: set[str] | None = None) -> int:
    """Lines of code in ``path`` (no blank line, comment or docstring), or in its top-level
    definitions and statements named by ``only`` (``"__main__"``: the ``if __name__`` block)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(
            node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ) and ast.get_docstring(node):
            docstrings.update(range(node.body[0].lineno, (node.body[0].end_lineno or 0) + 1))
    skipped = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
    lines = {
        line
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type not in skipped
        for line in range(token.start[0], token.end[0] + 1)
    } - docstrings
    if only is not None:
        named = [
            n
            for n in tree.body
            if getattr(n, "name", None) in only or (isinstance(n, ast.If) and "__main__" in only)
        ]
        lines &= {line for n in named for line in range(n.lineno, (n.end_lineno or 0) + 1)}
    return len(lines)


@pytest.mark.parametrize(
    ("gateway", "glue"),
    [
        ("weather", {"site_api", "weather_server", "__main__"}),
        ("books", {"catalogue_api", "books_server", "__main__"}),
    ],
)
def test_each_example_is_under_150_lines_with_at_most_20_of_glue(gateway: str, glue: set[str]) -> None:
    # Glue: opening the upstreams, composing the stages, building the server and serving it; the
    # rest is the gateway's own (its tool specs, tools, routing and merge, renderers) or imports.
    script = EXAMPLES / f"{gateway}_gateway.py"
    assert code_lines(script) < 150
    assert code_lines(script, glue) <= 20


@pytest.mark.parametrize("gateway", ["weather", "books"])
async def test_a_web_page_cannot_reach_a_loopback_gateway_by_dns_rebinding(
    gateway: str, sites: Any, catalogue: Any, aiohttp_server: Any
) -> None:
    served = weather_http(sites, aiohttp_server) if gateway == "weather" else books_http(catalogue)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    sent = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": "Bearer ada-key-51",
    }
    async with served as url, aiohttp.ClientSession() as session:
        for extra, status in [({"Origin": "http://evil.example"}, 403), ({"Host": "evil.example"}, 421)]:
            async with session.post(url, json=hello, headers={**sent, **extra}) as answer:
                assert answer.status == status
        async with session.post(url, json=hello, headers={**sent, "Origin": url.rsplit("/", 1)[0]}) as answer:
            assert answer.status == 200  # its own origin is welcome


async def test_a_malformed_envelope_is_answered_with_its_code_and_the_request_s_id(
    sites: Any, aiohttp_server: Any
) -> None:
    sent = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": "Bearer ada-key-51",
    }
    cases = [
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": [1]}, -32602, 7),
        ({"jsonrpc": "1.0", "id": 8, "method": "ping"}, -32600, 8),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600, None),  # no readable id
        ([{"jsonrpc": "2.0", "id": 9, "method": "ping"}], -32600, None),  # a batch
    ]
    async with weather_http(sites, aiohttp_server) as url, aiohttp.ClientSession() as session:
        for body, code, request_id in cases:
            async with session.post(url, json=body, headers=sent) as answer:
                reply = await answer.json()
                assert (answer.status, reply["error"]["code"], reply["id"]) == (400, code, request_id)


async def test_a_client_that_pipes_its_calls_and_closes_stdin_still_gets_every_answer(sites: Any) -> None:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "pipe", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "find_stations", "arguments": {"query": "osaka"}},
        },
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / "weather_gateway.py"),
        "--stdio",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "WEATHER_SITES": json.dumps(sites)},
    )
    piped = "".join(json.dumps(line) + "\n" for line in lines).encode()
    out, _ = await asyncio.wait_for(process.communicate(piped), 60)  # writes all, then closes stdin
    answers = {answer["id"]: answer for answer in map(json.loads, out.decode().splitlines())}
    assert sorted(answers) == [1, 2]  # the call in flight at end of input was answered, not cancelled
    assert answers[2]["result"]["content"][0]["text"] == "1 station(s): south/OSA."


async def test_a_routing_header_sent_twice_is_refused_as_a_mismatch(sites: Any, aiohttp_server: Any) -> None:
    version = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "pipe", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}
    sent = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer ada-key-51"),
        ("MCP-Protocol-Version", version),
        ("Mcp-Method", "tools/list"),
    ]
    async with weather_http(sites, aiohttp_server) as url, aiohttp.ClientSession() as session:
        async with session.post(url, json=body, headers=CIMultiDict(sent)) as once:
            assert once.status == 200  # the same request, its routing header sent once
        twice = CIMultiDict([*sent, ("Mcp-Method", "tools/list")])
        async with session.post(url, json=body, headers=twice) as answer:
            reply = await answer.json()
    assert (answer.status, reply["id"], reply["error"]["code"]) == (400, 3, -32020)
    assert "appears more than once" in reply["error"]["message"]
