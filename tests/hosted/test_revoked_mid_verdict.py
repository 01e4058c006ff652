"""A grant revoked while its verdict is cached: the first RS refusal answers the door's 401 with
its challenge (an OAuth client signs in again), and from then on the token is refused before any
read, on every replica that shares Redis (``hosted.refused_tokens``)."""

from __future__ import annotations

from typing import Any

import aiohttp

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.hosted.test_rate_limits import post, shared_args
from tests.hosted.test_serve_command import SECRET, serve
from tests.redis_server import redis_server
from tests.sandbox_fixtures import set_grant_status


def _reads(sandbox: Any) -> list[str]:
    """The RS reads made so far: data routes and introspection alike."""
    return [call.path for call in sandbox.calls]


async def test_a_grant_revoked_inside_its_verdict_is_a_401_challenge_then_no_more_reads(sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(sandbox.url, introspection_cache_seconds=60)) as url:
        token = sandbox.tokens["client_work_mail"]
        async with aiohttp.ClientSession() as http:
            assert (await post(http, url, token))[0] == 200  # admitted, its verdict cached for a minute
            set_grant_status(sandbox, "client_work_mail", "revoked")
            sandbox.calls.clear()
            status, headers, body = await post(http, url, token)
            assert status == 401
            assert headers["WWW-Authenticate"].startswith('Bearer resource_metadata="')
            assert body["error"]["data"]["code"] == "grant_revoked"
            assert _reads(sandbox) == ["/v1/schema"]  # the one read the RS refused
            sandbox.calls.clear()
            status, _, body = await post(http, url, token)
    assert status == 401
    assert body["error"]["data"]["code"] == "grant_revoked"
    assert _reads(sandbox) == []  # learned: neither a data read nor an introspection


async def test_a_refusal_one_replica_meets_is_honoured_by_the_other_without_a_read(sandbox: Any) -> None:
    env = {"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}
    with redis_server() as redis:
        async with (
            serve(*shared_args(sandbox, redis.url, "60"), "--rate-limit", "100", env=env) as first,
            serve(*shared_args(sandbox, redis.url, "60"), "--rate-limit", "100", env=env) as second,
            aiohttp.ClientSession() as http,
        ):
            urls = [await first.wait_listening(), await second.wait_listening()]
            token = sandbox.tokens["client_narrow"]
            for url in urls:  # both cache it as active for a minute
                assert (await post(http, url, token))[0] == 200
            set_grant_status(sandbox, "client_narrow", "revoked")
            assert (await post(http, urls[0], token))[0] == 401  # its read is refused: it publishes
            sandbox.calls.clear()
            status, headers, body = await post(http, urls[1], token)
            assert status == 401
            assert "WWW-Authenticate" in headers
            assert body["error"]["data"]["code"] == "grant_revoked"
            assert _reads(sandbox) == []
            for gateway in (first, second):
                assert await gateway.stop() == 0
