"""Sandbox configuration, grants and tokens: one fixture config for every kind of caller.

Contract: ``SandboxConfig`` is frozen and parsed once. ``TOKENS`` maps token NAMES to
fixed, deterministic token strings (sandbox material, safe to print); ``PRINCIPALS``
says what each token is: a client grant (streams → granted connections and fields),
the owner, or an ``mcp_package`` bundling child client tokens.

Grant statuses can change while the sandbox runs (``app[STATUS_OVERRIDES]``: token name →
status), so tests can revoke a grant and watch a gateway notice.

Sandbox extensions, documented because gateways read them:
- a client grant may span several connectors (``client_broad``); introspection then
  reports one ``authorization_details`` entry per connector;
- introspecting a package token returns ``package.members``: each child's own
  ``access_token``, ``grant_id``, ``connection_ids``, ``streams`` and
  ``source {id, connector_key, display_name}`` (the gateway's package resolver reads it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final, Literal

TokenKind = Literal["client", "owner", "mcp_package"]
GrantStatus = Literal["active", "revoked", "expired"]


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    db_path: str | None = None  # None: in-memory
    reference_client_rules: bool = False  # refuse client filter/expand/view like the reference RS
    public_origin: str | None = None  # default: each request's own origin
    introspection_client_id: str = "pdpp-gateway"
    introspection_client_secret: str = field(default="sandbox-introspection-secret", repr=False)
    bulk_records: int = 0
    oauth_resources: tuple[str, ...] = ()  # RFC 8707 resources the AS also issues tokens for
    access_token_ttl: int = 3600  # seconds an access token the sandbox AS issues lives (the reference: 600)
    # appended to every connection id (the fixture's are fixed, "cin_mail_work"): two sandboxes
    # with different suffixes never share a connection id, as two real providers never do
    connection_suffix: str = ""
    # where its authorization server's clients and grants last across restarts (``oauth_state``);
    # None: in memory only, as the tests' sandboxes keep them
    state_file: str | None = None


@dataclass(frozen=True, slots=True)
class StreamGrant:
    connections: tuple[str, ...]
    fields: tuple[str, ...] | None = None  # None: every field


@dataclass(frozen=True, slots=True)
class Principal:
    kind: TokenKind
    client_id: str = "sbx_client"
    grant_id: str | None = None
    streams: dict[str, StreamGrant] = field(default_factory=dict)
    status: GrantStatus = "active"
    members: tuple[str, ...] = ()  # package: child token NAMES
    package_id: str | None = None
    audience: str | None = None  # introspection ``aud``; None: this RS
    expires_at: float | None = None  # epoch seconds; None: the fixture's rolling hour


WORK, PERSONAL = "cin_mail_work", "cin_mail_personal"
_MAIL_ALL = StreamGrant((WORK, PERSONAL))
_BROAD: Final = {
    "messages": StreamGrant((WORK, PERSONAL, "cin_slack_acme")),
    "threads": _MAIL_ALL,
    "message_bodies": _MAIL_ALL,
    "attachments": _MAIL_ALL,
    "channels": StreamGrant(("cin_slack_acme",)),
    "repositories": StreamGrant(("cin_github",)),
    "issues": StreamGrant(("cin_github",)),
    "top_artists": StreamGrant(("cin_spotify",)),
    "saved_tracks": StreamGrant(("cin_spotify",)),
    "recently_played": StreamGrant(("cin_spotify",)),
    "pay_statements": StreamGrant(("cin_northstar",)),
    "events": StreamGrant(("cin_bulk",)),
}
_NARROW: Final = {
    "messages": StreamGrant((WORK,), ("id", "subject", "from_name", "received_at", "snippet", "is_seen")),
}
_WORK_MAIL: Final = {
    name: StreamGrant((WORK,)) for name in ("messages", "threads", "message_bodies", "attachments")
}
_CHAT: Final = {"channels": StreamGrant(("cin_slack_acme",)), "messages": StreamGrant(("cin_slack_acme",))}
# The corpus nobody tuned to (``corpus``): one grant per source, and one grant over all four.
_HOME_MAIL: Final = {
    name: StreamGrant(("cin_mail_home",)) for name in ("messages", "threads", "message_bodies", "attachments")
}
_ORBIT_CHAT: Final = {name: StreamGrant(("cin_slack_orbit",)) for name in ("channels", "messages")}
_ORBIT_CODE: Final = {
    name: StreamGrant(("cin_github_orbit",)) for name in ("repositories", "issues", "issue_comments")
}
_ASSISTANT: Final = {name: StreamGrant(("cin_chatgpt",)) for name in ("conversations", "messages")}
_LIFE: Final = {
    **_HOME_MAIL,
    **_ORBIT_CHAT,
    **_ORBIT_CODE,
    **_ASSISTANT,
    "messages": StreamGrant(("cin_mail_home", "cin_slack_orbit", "cin_chatgpt")),
}

PRINCIPALS: Final[dict[str, Principal]] = {
    "client_narrow": Principal("client", "sbx_app_narrow", "grt_narrow", _NARROW),
    "client_broad": Principal("client", "sbx_app_broad", "grt_broad", _BROAD),
    "client_work_mail": Principal("client", "sbx_app_pkg", "grt_work_mail", _WORK_MAIL),
    "client_chat": Principal("client", "sbx_app_pkg", "grt_chat", _CHAT),
    "client_expired": Principal("client", "sbx_app_old", "grt_expired", _WORK_MAIL, status="expired"),
    "client_revoked": Principal("client", "sbx_app_old", "grt_revoked", _WORK_MAIL, status="revoked"),
    "client_foreign": Principal(
        "client", "sbx_app_other", "grt_foreign", _WORK_MAIL, audience="https://other-rs.example"
    ),
    "owner": Principal("owner", "sbx_owner_cli"),
    "package": Principal(
        "mcp_package", "sbx_app_pkg", members=("client_work_mail", "client_chat"), package_id="gpk_demo"
    ),
    "client_home_mail": Principal("client", "sbx_app_life", "grt_home_mail", _HOME_MAIL),
    "client_orbit_chat": Principal("client", "sbx_app_life", "grt_orbit_chat", _ORBIT_CHAT),
    "client_orbit_code": Principal("client", "sbx_app_life", "grt_orbit_code", _ORBIT_CODE),
    "client_assistant": Principal("client", "sbx_app_life", "grt_assistant", _ASSISTANT),
    "client_life": Principal("client", "sbx_app_life_one", "grt_life", _LIFE),
    "package_life": Principal(
        "mcp_package",
        "sbx_app_life",
        members=("client_home_mail", "client_orbit_chat", "client_orbit_code", "client_assistant"),
        package_id="gpk_life",
    ),
}

TOKENS: Final[dict[str, str]] = {name: f"sbx_{name}_7c1e94b2" for name in PRINCIPALS}
TOKEN_NAMES: Final[dict[str, str]] = {token: name for name, token in TOKENS.items()}

DESCRIPTIONS: Final[dict[str, str]] = {
    "client_narrow": "client grant: Work mail 'messages' only, six fields",
    "client_broad": "client grant: every stream of every connector, both mail connections",
    "client_work_mail": "client grant: the Work mail connection (package child)",
    "client_chat": "client grant: Acme Slack (package child)",
    "client_expired": "client grant that has expired (403 grant_expired)",
    "client_revoked": "client grant the person revoked (403 grant_revoked)",
    "client_foreign": "client token issued for another resource (introspection aud mismatch)",
    "owner": "owner token: the whole store (refused by the gateway)",
    "package": "mcp_package token: Work mail + Acme Slack child grants",
    "client_home_mail": "client grant: the Home mail connection (package_life child)",
    "client_orbit_chat": "client grant: Orbit Labs Slack (package_life child)",
    "client_orbit_code": "client grant: orbit-labs GitHub issues and comments (package_life child)",
    "client_assistant": "client grant: ChatGPT conversations (package_life child)",
    "client_life": "client grant: Home mail, Orbit Labs Slack and GitHub, ChatGPT in one grant",
    "package_life": "mcp_package token: Home mail + Orbit Labs Slack + orbit-labs GitHub + ChatGPT",
}


def with_suffix(principal: Principal, suffix: str) -> Principal:
    """``principal`` with ``suffix`` appended to every connection id it grants."""
    if not suffix:
        return principal
    streams = {
        name: replace(grant, connections=tuple(c + suffix for c in grant.connections))
        for name, grant in principal.streams.items()
    }
    return replace(principal, streams=streams)
