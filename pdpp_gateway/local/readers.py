"""The local caller's readers, built in one place for stdio and every terminal command.

Contract: ``caller_context(stack, members, cache_root)`` opens one RS client per member
(closed with ``stack``) and reads through ``RenewingRs`` (the access token renewed ahead of
its expiry and once after the RS refuses it as lapsed) wrapped by ``KindCheckedRs`` (the
token's kind asked of the RS before the first read, unless the start-up check confirmed
it). It returns the caller's ``GatewayContext``: one grant's client context, or, for
several grants (of one provider or of several), a package context that routes and merges
between them exactly as the hosted door does for an ``mcp_package`` caller. A member's
routing facts come from its start-up schema answer, else its own compact schema read now
(``read_facts``), else what the credential cache recorded.

``recheck`` (the stdio door's) is called for a member the RS refused at start: it checks
that member again through its renewing reader and returns the verified kind, or ``None``
when the RS cannot be asked now; it raises ``CredentialError`` when the grant cannot be
renewed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from mcp_gateway_middleware import ToolError

from pdpp_gateway.caller import TokenKind
from pdpp_gateway.context import GatewayContext, PackageMember, RsReader
from pdpp_gateway.local.package import MemberFacts, MemberStart, facts_from_cache, facts_from_schema
from pdpp_gateway.local.renewing_rs import RenewingRs
from pdpp_gateway.rs.bearer_report import COMPACT_QUERY, SCHEMA_PATH
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.rs.token_kind import START_PROBE_SECONDS, KindCheckedRs

Recheck = Callable[[RsReader, str], Awaitable[str | None]]


async def caller_context(
    stack: contextlib.AsyncExitStack,
    members: Sequence[MemberStart],
    cache_root: Path,
    *,
    recheck: Recheck | None = None,
) -> GatewayContext:
    readers: list[tuple[MemberStart, RsReader]] = []
    for member in members:
        rs = await stack.enter_async_context(RsClient(member.provider_url))
        renewing = RenewingRs(rs, member.credential, cache_root)
        kind = member.verified
        if member.recheck and recheck is not None:
            kind = await recheck(renewing, member.provider_url)
        readers.append((member, KindCheckedRs(renewing, member.provider_url, verified_kind=kind)))
    if len(readers) == 1:
        member, reader = readers[0]
        return GatewayContext.for_client(reader, member.provider_url)
    package: list[PackageMember] = []
    for member, reader in readers:
        facts = (
            member.facts
            or await read_facts(reader)
            or facts_from_cache(member.cache_file, member.credential.connector)
        )
        package.append(facts.member(reader, member.provider_url))
    return GatewayContext.for_package(package, members[0].provider_url, TokenKind.CLIENT)


async def read_facts(reader: RsReader) -> MemberFacts | None:
    """A member's facts from its own compact schema, or ``None`` when the RS does not answer
    in time (the member's first read then verifies its token again)."""
    try:
        async with asyncio.timeout(START_PROBE_SECONDS) as bound:
            response = await reader.get_json(SCHEMA_PATH, COMPACT_QUERY)
    except (RsError, ToolError):
        return None
    except TimeoutError:
        if not bound.expired():
            raise
        return None
    return facts_from_schema(response.body)
