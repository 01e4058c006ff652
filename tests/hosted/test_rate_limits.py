"""Per-caller rate limits on /mcp: in one process, then across two ``serve`` processes
sharing a real Redis (limits, revocations, and Redis dying mid-run)."""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

import aiohttp

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.hosted.shared_state import REDIS_DEADLINE
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.hosted.test_serve_command import SECRET, introspection_args, serve
from tests.redis_server import redis_server
from tests.sandbox_fixtures import set_grant_status

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "schema", "arguments": {}}}
LIST = {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def post(
    http: aiohttp.ClientSession, url: str, token: str, message: dict[str, Any] = CALL
) -> tuple[int, dict[str, str], Any]:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    async with http.post(url, json=message, headers=headers) as response:
        return response.status, dict(response.headers), await response.json(content_type=None)


async def test_a_caller_over_its_limit_gets_a_429_that_says_when(sandbox: Any) -> None:
    settings = sandbox_settings(sandbox.url, rate_limit=0.01, rate_burst=3)
    async with start_gateway(settings, public_self=True) as url, aiohttp.ClientSession() as http:
        statuses = [(await post(http, url, sandbox.tokens["client_broad"]))[0] for _ in range(3)]
        assert statuses == [200, 200, 200]
        status, headers, body = await post(http, url, sandbox.tokens["client_broad"])
        assert status == 429
        assert body["id"] == CALL["id"]  # the body was read: the refusal answers its request
        assert int(headers["Retry-After"]) >= 90
        assert body["error"]["code"] == -32029
        assert body["error"]["data"]["code"] == "rate_limited"
        assert f"wait {headers['Retry-After']} s" in body["error"]["message"]
        other, _, _ = await post(http, url, sandbox.tokens["client_narrow"])
        assert other == 200  # another grant has its own bucket
        async with http.get(url.replace("/mcp", "/metrics")) as response:
            metrics = await response.text()
        assert 'outcome="rate_limited"' in metrics


async def test_only_calls_that_read_the_rs_are_counted(sandbox: Any) -> None:
    settings = sandbox_settings(sandbox.url, rate_limit=0.01, rate_burst=2)
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with start_gateway(settings, public_self=True) as url, aiohttp.ClientSession() as http:
        token = sandbox.tokens["client_broad"]
        for _ in range(10):  # listing tools and notifying spend nothing
            assert (await post(http, url, token, LIST))[0] == 200
            assert (await post(http, url, token, notification))[0] == 202
        statuses = [(await post(http, url, token))[0] for _ in range(3)]
    assert statuses == [200, 200, 429]


async def test_no_limit_when_turned_off(sandbox: Any) -> None:
    settings = sandbox_settings(sandbox.url, rate_limit=0, rate_burst=1)
    async with start_gateway(settings, public_self=True) as url, aiohttp.ClientSession() as http:
        statuses = {(await post(http, url, sandbox.tokens["client_broad"]))[0] for _ in range(50)}
    assert statuses == {200}


def shared_args(sandbox: Any, redis_url: str, cache_seconds: str) -> list[str]:
    return [
        *introspection_args(sandbox),
        "--rate-limit",
        "0.001",
        "--rate-burst",
        "5",
        "--redis-url",
        redis_url,
        "--introspection-cache-seconds",
        cache_seconds,
    ]


async def test_two_gateways_share_limits_and_refusals_and_survive_redis_dying(sandbox: Any) -> None:
    env = {"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}
    with redis_server() as redis:
        async with (
            serve(*shared_args(sandbox, redis.url, "1"), env=env) as quick,
            serve(*shared_args(sandbox, redis.url, "60"), env=env) as slow,
            aiohttp.ClientSession() as http,
        ):
            urls = [await quick.wait_listening(), await slow.wait_listening()]
            token = sandbox.tokens["client_broad"]
            statuses = [(await post(http, urls[n % 2], token))[0] for n in range(12)]
            assert statuses.count(200) == 5  # one burst in total across both processes
            assert statuses.count(429) == 7

            # A revocation seen by one replica is honoured by the other.
            narrow = sandbox.tokens["client_narrow"]
            assert (await post(http, urls[1], narrow))[0] == 200  # cached as active for 60 s there
            set_grant_status(sandbox, "client_narrow", "revoked")
            await asyncio.sleep(1.2)  # past the quick replica's 1 s bound
            assert (await post(http, urls[0], narrow))[0] == 401  # the quick one re-checks and publishes
            status, _, body = await post(http, urls[1], narrow)
            assert status == 401
            assert body["error"]["data"]["code"] == "grant_revoked"

            # Redis dies: both keep serving, each limited to its share of the limit, and say so.
            redis.kill()
            fresh = sandbox.tokens["client_work_mail"]
            after = [(await post(http, url, fresh))[0] for url in urls for _ in range(6)]
            # a burst of 5 shared by the 2 processes each counted (heartbeats a second apart,
            # and a second has passed): 2 each, never 5 each, never unlimited
            assert after.count(200) == 4
            for url in urls:
                async with http.get(url.replace("/mcp", "/readyz")) as response:
                    ready = await response.json()
                assert response.status == 200
                assert "per process" in ready["detail"]["rate_limits"]
            for gateway in (quick, slow):
                assert await gateway.stop() == 0
            logs = "".join(quick.raw + slow.raw)
            assert token not in logs
            assert "shared Redis store unavailable" in logs


async def test_a_frozen_redis_is_skipped_after_a_second_and_said_once(sandbox: Any) -> None:
    """A hung Redis (SIGSTOP) answers nothing: calls wait at most its deadline (0.25 s) for a
    second, then none waits for it (the old client waited out a 0.5 s socket timeout on every
    call), and the outage is one log line down and one back once Redis answers steadily again."""
    env = {"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}
    args = [*introspection_args(sandbox), "--rate-limit", "1000", "--rate-burst", "1000"]
    with redis_server() as redis:
        async with (
            serve(*args, "--redis-url", redis.url, env=env) as gateway,
            aiohttp.ClientSession() as http,
        ):
            url = await gateway.wait_listening()
            token = sandbox.tokens["client_broad"]
            assert (await post(http, url, token))[0] == 200
            redis.freeze()
            took = []
            for _ in range(40):
                started = asyncio.get_running_loop().time()
                assert (await post(http, url, token))[0] == 200
                took.append(asyncio.get_running_loop().time() - started)
            async with http.get(url.replace("/mcp", "/readyz")) as response:
                assert "per process" in (await response.json())["detail"]["rate_limits"]
            redis.thaw()
            await asyncio.sleep(3)  # the background probe: three answers in a row, 0.5 s apart
            async with http.get(url.replace("/mcp", "/readyz")) as response:
                assert (await response.json()).get("detail", {}).get("rate_limits") is None
            assert await gateway.stop() == 0
    # a call waits at most the guard's deadline for each of its two Redis uses (its bucket, the
    # shared refusals) for about a second, never the client's socket timeout on every call (40
    # calls would take 20 s); once the outage is declared, none waits
    assert sum(took) < 1.0 + 4 * REDIS_DEADLINE + 1.0, took
    assert statistics.median(took[-20:]) < 0.05, took
    logs = "".join(gateway.raw)
    assert logs.count("shared Redis store unavailable") == 1
    assert logs.count("shared Redis store is back") == 1


async def test_shared_limits_are_back_once_readyz_says_redis_is(sandbox: Any) -> None:
    """Redis goes away and comes back (a new, empty server on the same port): once every
    process's /readyz has dropped the per-process detail, one grant's calls across both, at once,
    share one bucket again, not one each, and /readyz stays so (the pooled connections to the old
    server, met by concurrent calls, are not each an outage of their own)."""
    env = {"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET}
    with redis_server() as redis:
        async with (
            serve(*shared_args(sandbox, redis.url, "60"), env=env) as first,
            serve(*shared_args(sandbox, redis.url, "60"), env=env) as second,
            aiohttp.ClientSession() as http,
        ):
            urls = [await first.wait_listening(), await second.wait_listening()]
            token = sandbox.tokens["client_broad"]
            for _ in range(4):  # warm pools on both: several connections each
                await asyncio.gather(*(post(http, url, token, LIST) for url in urls for _ in range(8)))
            redis.kill()
            await asyncio.gather(*(post(http, url, token, LIST) for url in urls))
            redis.restart()
            for url in urls:  # until each says Redis is in use again
                for _ in range(100):
                    async with http.get(url.replace("/mcp", "/readyz")) as response:
                        if "rate_limits" not in ((await response.json()).get("detail") or {}):
                            break
                    await asyncio.sleep(0.1)
            fresh = sandbox.tokens["client_work_mail"]
            # at once, as calls come under load: each on its own pooled connection, stale or not
            answers = await asyncio.gather(*(post(http, urls[n % 2], fresh) for n in range(16)))
            statuses = [status for status, *_ in answers]
            for url in urls:  # and Redis still counts as back: no stale connection took it down again
                async with http.get(url.replace("/mcp", "/readyz")) as response:
                    assert not (await response.json()).get("detail"), url
            for gateway in (first, second):
                assert await gateway.stop() == 0
    assert statuses.count(200) == 5, statuses  # the shared burst of 5, not 5 per process
