"""The floor under ``gateway_bench.py``: the same hop through aiohttp, doing nothing else.

Run by ``gateway_bench.py`` (``python benchmarks/bare_hop.py RS_URL PORT``): an aiohttp
server on uvloop (as ``serve`` runs) whose ``POST /mcp`` reads the JSON-RPC body, sends
the one RS GET the measured ``tools/call`` makes (same path, query and bearer, pooled
keep-alive connection), parses the page and answers a JSON-RPC result carrying it twice
(as ``content[]`` text and as ``structuredContent``), about the size of the gateway's
answer. No checks, no validation, no rendering, no metrics: what any Python gateway on
these libraries pays for the hop alone on this machine, measured in the same run.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import aiohttp
import orjson
import uvloop
from aiohttp import web

RECORDS = "/v1/streams/messages/records"


def bare_app(rs_url: str) -> web.Application:
    app = web.Application()
    upstream = web.AppKey("upstream", aiohttp.ClientSession)

    async def session(app: web.Application) -> AsyncIterator[None]:
        async with aiohttp.ClientSession() as http:
            app[upstream] = http
            yield

    async def post(request: web.Request) -> web.Response:
        message = orjson.loads(await request.read())
        arguments = message["params"]["arguments"]
        query = {"limit": str(arguments["limit"]), "connection_id": arguments["connection_id"]}
        headers = {"Authorization": request.headers["Authorization"], "Accept": "application/json"}
        async with request.app[upstream].get(rs_url + RECORDS, params=query, headers=headers) as answer:
            raw = await answer.read()
        result = {"content": [{"type": "text", "text": raw.decode()}], "structuredContent": orjson.loads(raw)}
        body = orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        return web.Response(body=body, content_type="application/json")

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.cleanup_ctx.append(session)
    app.router.add_post("/mcp", post)
    app.router.add_get("/healthz", healthz)
    return app


if __name__ == "__main__":
    rs_url, port = sys.argv[1], int(sys.argv[2])
    web.run_app(
        bare_app(rs_url),
        host="127.0.0.1",
        port=port,
        access_log=None,
        print=None,
        loop=uvloop.new_event_loop(),
    )
