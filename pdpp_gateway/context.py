"""What a tool call needs to reach the RS on the caller's behalf.

Contract: a ``GatewayContext`` is built per caller (once for stdio, per HTTP request
for the hosted door) and travels in ``ToolCall.context``; ``Call`` (``ToolCall[GatewayContext]``),
``CallNext`` and ``Stage`` are the pipeline's types with it, so mypy checks every stage's
use of the context (no stage looks it up at run time; only the hosted door's SDK handlers
fetch it from the aiohttp request the bearer check put it on, ``hosted/app.py``). ``rs`` is already bound to
the caller's own grant token, so tool code cannot pick, swap or broaden a credential.
``provider_url`` is the RS's public origin, used for citation URLs in results (it may
differ from the internal base URL the client talks to).

``caller`` is what ``caller.authenticate`` accepted, and a context is only ever built
for an accepted caller: whether a bearer may read is decided there, at the door, before
any read (the hosted door per request; the local doors at start-up, or, when the RS
could not be asked then, by ``rs.token_kind.KindCheckedRs`` before the first read).

A package caller (an ``mcp_package`` token at the hosted door, or several cached local
grants served as one by ``pdpp-gateway stdio``) has no single grant: its
``caller.members`` are the child grants, each with a client bound to that child's OWN
token (and, for a local package, its own provider URL), and its ``rs`` is unrouted. The
fan-out stage routes or fans a call out to members; a call that reaches the RS without
being routed fails with a typed ``ambiguous_connection`` listing the members, never
with a guessed grant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from mcp_gateway_middleware import Middleware, Next, ToolCall, ToolError

from pdpp_gateway.caller import Caller, TokenKind
from pdpp_gateway.rs.client import RsBlob, RsResponse

MAX_LISTED_CONNECTIONS: Final = 12


class RsReader(Protocol):
    """The read surface a tool may use: GETs with a credential fixed in advance."""

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse: ...

    async def get_bytes(
        self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int
    ) -> RsBlob: ...


@dataclass(frozen=True, slots=True)
class PackageMember:
    """One child grant of a package, with a client bound to the child's own token."""

    rs: RsReader
    grant_id: str | None
    connection_ids: tuple[str, ...]
    streams: tuple[str, ...]  # granted stream names; ("*",) means every stream
    connector_key: str | None = None
    display_name: str | None = None
    # The member's own RS origin when a package spans several providers (a local package
    # of grants cached for different provider URLs): citations of its results use it.
    provider_url: str | None = None

    def connection_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "connection_id": self.connection_ids[0] if self.connection_ids else None,
            "connector_key": self.connector_key,
            "grant_id": self.grant_id,
        }
        if self.display_name:
            entry["display_name"] = self.display_name
        return entry

    def connection_entries(self) -> list[dict[str, Any]]:
        """One entry per connection the member's grant lists (the member's entry when it lists none)."""
        if len(self.connection_ids) <= 1:
            return [self.connection_entry()]
        return [
            {"connection_id": cid, "connector_key": self.connector_key, "grant_id": self.grant_id}
            for cid in self.connection_ids
        ]


def ambiguous_connection(members: Sequence[PackageMember]) -> ToolError:
    """409 ``ambiguous_connection`` listing the connections of ``members`` (those that may
    hold the stream asked for), so each listed choice is one the call can be retried with."""
    entries = [entry for member in members for entry in member.connection_entries()]
    listed = entries[:MAX_LISTED_CONNECTIONS]
    envelope: dict[str, Any] = {
        "type": "api_error",
        "code": "ambiguous_connection",
        "message": "This grant package spans several sources. Pass connection_id to pick one; "
        "schema() lists every granted connection.",
        "param": "connection_id",
        "retry_with": "connection_id",
        "available_connections": listed,
        "available_connection_count": len(entries),
    }
    if len(entries) > len(listed):
        envelope["available_connections_truncated"] = True
    return ToolError(envelope, http_status=409)


@dataclass(frozen=True, slots=True)
class UnroutedRs:
    """The ``rs`` of a package context: refuses every read until a member is chosen."""

    members: tuple[PackageMember, ...]

    def _refuse(self) -> ToolError:
        return ambiguous_connection(self.members)

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        raise self._refuse()

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        raise self._refuse()

    async def memoised(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        raise self._refuse()


@dataclass(frozen=True, slots=True)
class GatewayContext:
    rs: RsReader
    provider_url: str
    caller: Caller[PackageMember]
    # Set when a package call was routed to one member: the member this context reads from.
    source: PackageMember | None = None
    # Set on the member calls of one fanned-out package search's first page when the caller set
    # no limit: the hits of the fused page this member answers, its share of one grant's
    # (``retrieval.fused.FUSED_LIMIT``), so a package's page reads no more than one grant's.
    fused_share: int | None = None

    @property
    def package(self) -> tuple[PackageMember, ...]:
        """The members of a package caller (empty for a single grant)."""
        return self.caller.members

    @classmethod
    def for_caller(
        cls,
        caller: Caller[PackageMember],
        provider_url: str,
        *,
        rs: RsReader | None = None,
    ) -> GatewayContext:
        """The context of an accepted caller: a single grant reads through ``rs`` (bound to
        its token); a package's ``rs`` refuses every read until a member is chosen."""
        if caller.members:
            rs = UnroutedRs(caller.members)
        elif rs is None:
            raise ValueError("a single-grant caller needs its bound reader")
        return cls(rs=rs, provider_url=provider_url, caller=caller)

    @classmethod
    def for_client(cls, rs: RsReader, provider_url: str) -> GatewayContext:
        """A single client grant read through ``rs``."""
        return cls.for_caller(Caller(TokenKind.CLIENT), provider_url, rs=rs)

    @classmethod
    def for_package(
        cls, members: Sequence[PackageMember], provider_url: str, kind: TokenKind = TokenKind.PACKAGE
    ) -> GatewayContext:
        """A package of ``members``: ``kind`` is ``mcp_package`` for a package token,
        ``client`` for a local package of cached client grants."""
        return cls.for_caller(Caller(kind, members=tuple(members)), provider_url)


# A tool call as the gateway's stages see it (the module contract says what mypy checks).
Call = ToolCall[GatewayContext]
CallNext = Next[GatewayContext]
Stage = Middleware[GatewayContext]
