"""What a package's answer says of one of its members: its name, its tag, its next step.

Contract (plain values; no I/O):

- ``label(member)``: the name a page gives a member: its connection id, else its grant id.
- ``source_tag(member)``: the member's connection entry without its empty keys (the
  ``detail`` of a warning about it, an unavailable connection's entry).
- ``member_step(member, error, provider_url)``: the next step after the member's ``error``
  (``render.errors.next_step``), its reconnect command (``RECONNECT``) naming that member's
  provider and connector where the generic step leaves ``<provider-url>`` for the caller to
  fill; ``None`` when the error has no next step.
"""

from __future__ import annotations

from typing import Any, Final

from mcp_gateway_middleware import ToolError

from pdpp_gateway.context import PackageMember
from pdpp_gateway.render.errors import next_step

RECONNECT: Final = "pdpp-gateway connect"
_PLACEHOLDER: Final = f"{RECONNECT} <provider-url>"


def label(member: PackageMember) -> str:
    entry = member.connection_entry()
    return str(entry["connection_id"] or member.grant_id)


def source_tag(member: PackageMember) -> dict[str, Any]:
    """A member's connection entry without its empty keys."""
    return {key: value for key, value in member.connection_entry().items() if value is not None}


def member_step(member: PackageMember, error: ToolError, provider_url: str) -> str | None:
    """The next step after a member's ``error`` (see the module contract)."""
    step = next_step(error.envelope, error.extra.get("http_status"))
    if step is None or _PLACEHOLDER not in step:
        return step
    command = f"{RECONNECT} {member.provider_url or provider_url}"
    if member.connector_key:
        command += f" --connector {member.connector_key}"
    return step.replace(_PLACEHOLDER, command)
