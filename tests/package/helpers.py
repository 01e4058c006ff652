"""Packages of in-memory child grants, called through the real tool pipeline (no socket)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_gateway_middleware import ToolCall, ToolResult

from pdpp_gateway.caller import TokenKind
from pdpp_gateway.context import GatewayContext, PackageMember
from pdpp_gateway.sandbox.config import PRINCIPALS
from pdpp_gateway.sandbox.manifests import CONNECTORS
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.fake_rs import SEARCH_PATHS, FakeCall, FakeRs, hit

PROVIDER = "https://rs.example.test"
PIPELINE = build_pipeline()


def child(
    name: str, hit_count: int, *, stream: str = "messages", log: list[FakeCall] | None = None
) -> FakeRs:
    """A child grant ``grt_<name>`` on connection ``cin_<name>`` whose search answers ``hit_count`` hits."""
    connection = f"cin_{name}"
    hits = [
        hit(stream, f"{name}_{rank:03d}", connection, f"<mark>invoice</mark> {name} {rank}")
        for rank in range(hit_count)
    ]
    records = {
        stream: [{"id": f"{name}_{rank:03d}", "data": {"subject": f"invoice {rank}"}} for rank in range(3)]
    }
    return FakeRs(
        f"grt_{name}", connection_id=connection, connector_key=name, hits=hits, records=records, log=log
    )


def package(*fakes: FakeRs, members: Sequence[PackageMember] | None = None) -> GatewayContext:
    return GatewayContext.for_package(members or [fake.member() for fake in fakes], PROVIDER)


async def call(context: GatewayContext, tool: str, arguments: dict[str, Any]) -> ToolResult:
    return await PIPELINE(ToolCall(tool, arguments, context))


def ids(result: ToolResult) -> list[str]:
    assert not result.is_error, result.text
    return [str(h["id"]) for h in result.structured["results"]]


def error_code(result: ToolResult) -> str:
    assert result.is_error, result.text
    return str(result.structured["error"]["code"])


def hit_ids(fake: FakeRs) -> list[str]:
    """The handles the gateway gives a fake's hits, in the fake's rank order."""
    return [f"{h['connection_id']}/{h['stream']}:{h['record_key']}" for h in fake.hits]


def interleave(*ranked: list[str]) -> list[str]:
    """Round-robin by each list's own rank, lists in the given order (the documented order)."""
    return [
        items[rank]
        for rank in range(max(map(len, ranked), default=0))
        for items in ranked
        if rank < len(items)
    ]


async def page_through(
    context: GatewayContext, arguments: dict[str, Any], *, max_pages: int = 200
) -> list[ToolResult]:
    """Every page of a search, following next_cursor until there is none."""
    pages = [await call(context, "search", arguments)]
    while not pages[-1].is_error and pages[-1].structured["data"].get("next_cursor"):
        assert len(pages) < max_pages, "next_cursor never ends"
        cursor = pages[-1].structured["data"]["next_cursor"]
        pages.append(await call(context, "search", {**arguments, "cursor": cursor}))
    return pages


def mail_and_chat(mail: Any, chat: Any, tokens: dict[str, str], provider_url: str) -> GatewayContext:
    """The sandbox's package of the Work mail and Acme Slack client grants as a local package,
    each member reading through its own ``RsClient`` (``mail``, ``chat``: the same RS, or a proxy)."""
    members = [
        PackageMember(
            rs=mail.bind(tokens["client_work_mail"]),
            grant_id="grt_work_mail",
            connection_ids=("cin_mail_work",),
            streams=("attachments", "message_bodies", "messages", "threads"),
            connector_key="gmail",
        ),
        PackageMember(
            rs=chat.bind(tokens["client_chat"]),
            grant_id="grt_chat",
            connection_ids=("cin_slack_acme",),
            streams=("channels", "messages"),
            connector_key="slack",
        ),
    ]
    return GatewayContext.for_package(members, provider_url, TokenKind.CLIENT)


def life_package(rs: Any, tokens: dict[str, str], provider_url: str) -> GatewayContext:
    """The sandbox's package of four sources (Home mail, Orbit Slack, orbit-labs GitHub, ChatGPT:
    ``package_life``) as a local package, every member reading through ``rs``."""
    keys = {
        connection.connection_id: connector.key
        for connector in CONNECTORS
        for connection in connector.connections
    }
    members = []
    for name in PRINCIPALS["package_life"].members:
        principal = PRINCIPALS[name]
        connections = tuple(
            sorted({cid for grant in principal.streams.values() for cid in grant.connections})
        )
        members.append(
            PackageMember(
                rs=rs.bind(tokens[name]),
                grant_id=principal.grant_id,
                connection_ids=connections,
                streams=tuple(sorted(principal.streams)),
                connector_key=keys[connections[0]],
            )
        )
    return GatewayContext.for_package(members, provider_url, TokenKind.CLIENT)


def members_alone(rs: Any, tokens: dict[str, str], provider_url: str) -> list[GatewayContext]:
    """Each member of ``life_package`` as a grant of its own, in member order."""
    return [
        GatewayContext.for_client(rs.bind(tokens[name]), provider_url)
        for name in PRINCIPALS["package_life"].members
    ]


def searches(fake: FakeRs) -> list[FakeCall]:
    """The search reads a fake RS was asked, in order (not the memoised reads of its
    metadata and schema that a first page of an unpinned search makes beside them)."""
    return [each for each in fake.calls if each.path in SEARCH_PATHS]
