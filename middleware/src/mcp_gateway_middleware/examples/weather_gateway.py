"""An MCP server over two weather-station HTTP APIs, served from aiohttp (or stdio).

Each site (``north``, ``south``, ...) is an HTTP API with its own bearer token:
``GET /stations?q=<text>`` → ``{"stations": [{"code", "name"}]}`` and
``GET /stations/<CODE>/current`` → ``{"temperature_c", "wind_kph"}`` (a 4xx answers
``{"error": {"code", "message", ...}}``). Two tools: ``find_stations`` asks every site and
merges (a site that fails or stalls is named, not fatal); ``current_conditions`` asks the one
site of a station id (``<site>/<CODE>``).

Run it (extras ``http`` and ``mcp``; the sites and their tokens come from the environment, so
no token is ever on a command line): ``WEATHER_SITES='{"north": {"url": "http://...", "token":
"..."}}' python weather_gateway.py --stdio``, or ``--keys keys.json [--port 0]`` for Streamable
HTTP on aiohttp (``keys.json``: ``{"<API key>": "<caller name>"}``; ``cli.run``), which prints
the URL it serves.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from mcp.server import Server
from mcp_gateway_middleware import (
    FanOut,
    LimitCalls,
    Middleware,
    Outcome,
    PreserveErrors,
    RenderContent,
    ToolCall,
    ToolError,
    ToolResult,
    ValidateArguments,
    compose,
    gateway_error,
)
from mcp_gateway_middleware.cli import CallerOf, run
from mcp_gateway_middleware.ratelimit import LocalLimiter, Rate
from mcp_gateway_middleware.sdk import build_server
from mcp_gateway_middleware.specs import ToolSpec, input_schemas
from mcp_gateway_middleware.timeouts import CallTimeout
from mcp_gateway_middleware.upstream import HttpUpstream, session_lifespan

READ_ONLY = {"readOnlyHint": True, "openWorldHint": True}
SPECS = [
    ToolSpec(
        "find_stations",
        "Find weather stations whose name contains the query, on every site.",
        {
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 2, "maxLength": 50}},
            "required": ["query"],
            "additionalProperties": False,
        },
        annotations=READ_ONLY,
    ),
    ToolSpec(
        "current_conditions",
        "Temperature and wind now at one station (its id as find_stations gives it: site/CODE).",
        {
            "type": "object",
            "properties": {"station": {"type": "string", "pattern": "^[a-z]+/[A-Z]{3}$"}},
            "required": ["station"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {"station": {"type": "string"}, "temperature_c": {"type": "number"}},
            "required": ["station", "temperature_c"],
        },
        annotations=READ_ONLY,
    ),
]


@dataclass(frozen=True)
class Seat:
    """A call's context: who calls, the sites, and the one site a routed call reads."""

    caller: str
    sites: dict[str, HttpUpstream]
    site: str | None = None


async def tools(call: ToolCall[Seat]) -> ToolResult:
    seat = call.context
    if call.name == "find_stations":
        assert seat.site is not None  # FanOut routed it
        found = await seat.sites[seat.site].call("GET", "stations", params={"q": call.arguments["query"]})
        return ToolResult({"stations": [f"{seat.site}/{station['code']}" for station in found["stations"]]})
    site, code = call.arguments["station"].split("/")
    if site not in seat.sites:
        raise gateway_error(
            "unknown_site", f"No site {site!r}; the sites are {', '.join(seat.sites)}.", param="station"
        )
    now = await seat.sites[site].call("GET", f"stations/{code}/current")
    return ToolResult({"station": call.arguments["station"], **now})


def every_site(call: ToolCall[Seat]) -> Sequence[ToolCall[Seat]] | None:
    if call.name != "find_stations" or call.context.site is not None:
        return None
    return [replace(call, context=replace(call.context, site=site)) for site in call.context.sites]


def merge(
    call: ToolCall[Seat], sub_calls: Sequence[ToolCall[Seat]], outcomes: Sequence[Outcome]
) -> ToolResult:
    stations = sorted(s for o in outcomes if isinstance(o, ToolResult) for s in o.structured["stations"])
    missing = [
        sub.context.site for sub, o in zip(sub_calls, outcomes, strict=True) if isinstance(o, ToolError)
    ]
    if missing and len(missing) == len(sub_calls):
        raise gateway_error("sites_unavailable", "No site answered; retry later.", type_="api_error")
    return ToolResult({"stations": stations, "unavailable": missing})


def render_stations(call: ToolCall[Seat], result: ToolResult) -> str:
    missing = result.structured["unavailable"]
    text = f"{len(result.structured['stations'])} station(s): {', '.join(result.structured['stations']) or 'none'}."
    return f"{text} Not searched: {', '.join(missing)}." if missing else text


def render_conditions(call: ToolCall[Seat], result: ToolResult) -> str:
    now = result.structured
    return f"{now['station']}: {now['temperature_c']} °C, wind {now.get('wind_kph', '?')} km/h."


def site_api(session: aiohttp.ClientSession, name: str, site: dict[str, str]) -> HttpUpstream:
    bearer = {"Authorization": f"Bearer {site['token']}"}
    return HttpUpstream(session, site["url"], name=f"site {name}", headers=bearer)


# The glue: the upstreams, the pipeline, the server and the way in.
def weather_server(caller_of: CallerOf) -> Server[Any]:
    sites = json.loads(os.environ["WEATHER_SITES"])  # {"<site>": {"url": ..., "token": ...}}
    upstreams = session_lifespan(lambda session: {n: site_api(session, n, s) for n, s in sites.items()})
    limits = LimitCalls[Seat](LocalLimiter(Rate(1, 20), Rate(0, 0)), lambda call: call.context.caller)
    renderers = {"find_stations": render_stations, "current_conditions": render_conditions}
    outer: list[Middleware[Seat]] = [RenderContent(renderers), PreserveErrors(), limits]
    validate = ValidateArguments(input_schemas(SPECS))
    stages: list[Middleware[Seat]] = [*outer, validate, FanOut(every_site, merge), CallTimeout(2.0)]
    seat = lambda ctx: Seat(caller_of(ctx), ctx.lifespan_context)  # noqa: E731 - the call's context
    return build_server("weather-gateway", "1.0.0", SPECS, compose(stages, tools), seat, lifespan=upstreams)


if __name__ == "__main__":
    run(weather_server, description="Serve the weather gateway (stdio or Streamable HTTP).", http="aiohttp")
