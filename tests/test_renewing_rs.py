"""``RenewingRs`` renews only when the RS refuses the access token itself, never for a read outside the grant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pdpp_gateway.commands import connect
from pdpp_gateway.oauth_flow import ConnectError
from pdpp_gateway.renewing_rs import RenewingRs
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsStatusError


async def test_renewal_is_tried_only_for_a_refused_token(
    sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[str] = []

    async def refused(provider_url: str, cache_root: Path) -> Path:
        attempts.append(provider_url)
        raise ConnectError("nothing to renew with", 78)

    monkeypatch.setattr(connect, "refresh_cached", refused)
    async with RsClient(sandbox.url) as rs:
        narrow = RenewingRs(rs, sandbox.url, sandbox.tokens["client_narrow"], tmp_path)
        with pytest.raises(RsStatusError) as outside:
            await narrow.get_json("/v1/streams/repositories/records")
        assert outside.value.code == "context.stream_not_allowed"
        assert attempts == []  # outside the grant: answered as it is
        unknown = RenewingRs(rs, sandbox.url, "sbx_at_expired_or_unknown", tmp_path)
        with pytest.raises(RsStatusError) as dead:
            await unknown.get_json("/v1/schema")
        assert dead.value.code == "context.active_false"  # the original refusal stands
        assert attempts == [sandbox.url]
