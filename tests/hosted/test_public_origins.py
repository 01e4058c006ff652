"""Which origins the gateway advertises, which token audiences it accepts, and how it
normalises and bounds what trusted proxies tell it."""

from __future__ import annotations

import socket
from typing import Any

import aiohttp
import pytest

from pdpp_gateway.hosted.app import MAX_SERVERS
from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.hosted.origin import OriginPolicy
from pdpp_gateway.hosted.tokens import IntrospectionValidator
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.settings import HostedSettings
from tests.frames import initialize
from tests.upstreams import proxied_settings, upstream_proxy

METADATA = "/.well-known/oauth-protected-resource/mcp"
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
INITIALIZE = initialize()


def forwarded(host: str, proto: str = "https") -> dict[str, str]:
    return {"X-Forwarded-Proto": proto, "X-Forwarded-Host": host}


async def metadata(url: str, headers: dict[str, str]) -> tuple[int, Any]:
    base = url.removesuffix("/mcp")
    async with aiohttp.ClientSession() as http, http.get(base + METADATA, headers=headers) as response:
        return response.status, await response.json()


async def call(url: str, token: str | None, body: Any = LIST_TOOLS, **headers: str) -> tuple[int, Any]:
    sent = {"Accept": "application/json", **headers}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    async with aiohttp.ClientSession() as http, http.post(url, json=body, headers=sent) as response:
        return response.status, await response.json()


async def test_a_token_for_the_advertised_forwarded_resource_is_accepted(shared_sandbox: Any) -> None:
    async with upstream_proxy(shared_sandbox.url) as proxy:
        settings = proxied_settings(
            shared_sandbox.url,
            proxy,
            introspection=True,
            trusted_proxies=("127.0.0.1",),
            allowed_hosts=("data.example.org",),
        )
        async with start_gateway(settings) as url:
            status, document = await metadata(url, forwarded("Data.Example.ORG:443"))
            assert status == 200
            assert document["resource"] == "https://data.example.org/mcp"
            proxy.audience = document["resource"]
            token = shared_sandbox.tokens["client_broad"]
            status, body = await call(url, token, **forwarded("data.example.org"))
            assert status == 200, body
            proxy.audience = ["https://elsewhere.example", "HTTPS://DATA.EXAMPLE.ORG:443/mcp/"]
            token = shared_sandbox.tokens["client_narrow"]  # a fresh verdict, not the cached one
            status, body = await call(url, token, **forwarded("data.example.org"))
            assert status == 200, body


@pytest.mark.parametrize(
    ("trusted", "audience"),
    [
        (True, "https://evil.example/mcp"),
        (True, "https://data.example.org:9999/mcp"),
        (True, "https://data.example.org.evil.example/mcp"),
        (False, "https://data.example.org/mcp"),  # never advertised without a trusted proxy
    ],
    ids=["foreign", "other-port", "suffix", "not-advertisable"],
)
async def test_audiences_the_gateway_never_advertises_are_refused(
    shared_sandbox: Any, trusted: bool, audience: str
) -> None:
    async with upstream_proxy(shared_sandbox.url, audience=audience) as proxy:
        settings = proxied_settings(
            shared_sandbox.url,
            proxy,
            introspection=True,
            trusted_proxies=("127.0.0.1",) if trusted else (),
            allowed_hosts=("data.example.org",),
        )
        async with start_gateway(settings) as url:
            shared_sandbox.calls.clear()
            status, body = await call(
                url, shared_sandbox.tokens["client_broad"], **forwarded("data.example.org")
            )
            assert status == 401
            assert body["error"]["data"]["code"] == "context.audience_mismatch"
            assert shared_sandbox.calls == []


async def test_forwarded_host_matching_respects_ports_and_case(shared_sandbox: Any) -> None:
    settings = sandbox_settings(
        shared_sandbox.url, trusted_proxies=("127.0.0.1",), allowed_hosts=("data.example.org",)
    )
    async with start_gateway(settings) as url:
        status, _ = await metadata(url, forwarded("data.example.org:9999"))
        assert status == 421
        status, _ = await metadata(url, forwarded("data.example.org:443", proto="http"))
        assert status == 421  # 443 is not http's default port
        status, document = await metadata(url, forwarded("DATA.example.org:80", proto="HTTP"))
        assert status == 200
        assert document["resource"] == "http://data.example.org/mcp"


async def test_wildcard_hosts_are_answered_but_never_advertised(shared_sandbox: Any) -> None:
    """3,000 distinct forwarded hosts once meant 3,000 MCP servers; now an unlisted host
    is served under the provider's origin and builds nothing."""
    settings = sandbox_settings(shared_sandbox.url, trusted_proxies=("127.0.0.1",), allowed_hosts=("*",))
    async with start_gateway(settings) as url:
        token = shared_sandbox.tokens["client_narrow"]
        for n in range(40):
            status, body = await call(url, token, INITIALIZE, **forwarded(f"h{n}.attacker.example"))
            assert status == 200
            assert body["result"]["serverInfo"]["icons"][0]["src"] == f"{shared_sandbox.url}/icon.svg"
        status, document = await metadata(url, forwarded("h1.attacker.example"))
        assert document["resource"] == f"{shared_sandbox.url}/mcp"
        assert await servers_held(url) == 1


async def test_per_origin_servers_are_bounded(shared_sandbox: Any) -> None:
    hosts = tuple(f"mcp{n}.example.org" for n in range(MAX_SERVERS + 8))
    settings = sandbox_settings(shared_sandbox.url, trusted_proxies=("127.0.0.1",), allowed_hosts=hosts)
    async with start_gateway(settings) as url:
        token = shared_sandbox.tokens["client_narrow"]
        for host in hosts:
            status, body = await call(url, token, INITIALIZE, **forwarded(host))
            assert status == 200
            assert body["result"]["serverInfo"]["icons"][0]["src"] == f"https://{host}/icon.svg"
        assert await servers_held(url) == MAX_SERVERS


def _ipv6_bind_fails() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::", 0))
    except OSError:
        return True
    return False


@pytest.mark.skipif(_ipv6_bind_fails(), reason="this host cannot bind an IPv6 socket on '::'")
async def test_ipv4_mapped_peer_matches_an_ipv4_trusted_proxy(shared_sandbox: Any) -> None:
    settings = sandbox_settings(
        shared_sandbox.url, host="::", trusted_proxies=("127.0.0.0/8",), allowed_hosts=("data.example.org",)
    )
    async with start_gateway(settings) as url:
        port = url.rsplit(":", 1)[1].split("/", 1)[0]
        mapped = f"http://127.0.0.1:{port}/mcp"  # the dual-stack socket sees ::ffff:127.0.0.1
        status, document = await metadata(mapped, forwarded("data.example.org"))
        assert status == 200
        assert document["resource"] == "https://data.example.org/mcp"


async def servers_held(url: str) -> float:
    async with aiohttp.ClientSession() as http, http.get(url.replace("/mcp", "/metrics")) as response:
        text = await response.text()
    values = [line.split()[-1] for line in text.splitlines() if line.startswith("pdpp_gateway_mcp_servers ")]
    assert values, text
    return float(values[0])


async def test_a_provider_url_with_a_path_is_an_accepted_audience() -> None:
    """``https://rs.example/pdpp`` fronts the RS resource at that path: a token issued for
    it (bare or its ``/mcp`` URL, in any normal-form spelling) is accepted, as before the
    audiences were derived from origins."""
    settings = HostedSettings(
        provider_url="https://rs.example/pdpp", introspection_url="https://as.example/i"
    )
    audiences = OriginPolicy.from_settings(settings).audiences()
    assert {"https://rs.example", "https://rs.example/pdpp", "https://rs.example/pdpp/mcp"} <= audiences
    async with aiohttp.ClientSession() as session:
        validator = IntrospectionValidator(
            session, "https://as.example/i", "c", "s", issuer=None, audiences=audiences
        )
    accepted: list[Any] = [
        "https://rs.example/pdpp",
        "HTTPS://RS.EXAMPLE:443/pdpp/mcp/",
        ["https://elsewhere.example", "https://rs.example/pdpp/"],
    ]
    for aud in accepted:
        assert validator._judge({"active": True, "aud": aud}).active, aud
    assert validator._judge({"active": True, "aud": "https://rs.example/other"}).reason == "audience_mismatch"


async def test_a_public_url_with_a_path_names_every_url_under_it(shared_sandbox: Any) -> None:
    """The gateway behind ``https://data.example.org/pdpp``: the metadata sits where RFC 9728
    puts it for ``/pdpp/mcp`` (and at the prefix-less path a stripping proxy forwards), the
    challenge points there, and a token for that resource is an accepted audience."""
    public = "https://data.example.org/pdpp"
    async with upstream_proxy(shared_sandbox.url, audience=f"{public}/mcp") as proxy:
        settings = proxied_settings(shared_sandbox.url, proxy, introspection=True, public_url=public)
        async with start_gateway(settings) as url:
            origin = url.removesuffix("/mcp")
            async with aiohttp.ClientSession() as http:
                for path in ("/.well-known/oauth-protected-resource/pdpp/mcp", METADATA):
                    async with http.get(origin + path) as response:
                        assert response.status == 200, path
                        assert (await response.json())["resource"] == f"{public}/mcp"
                async with http.get(f"{origin}/.well-known/oauth-protected-resource/other/mcp") as response:
                    assert response.status == 404
                    assert "https://data.example.org/.well-known/oauth-protected-resource/pdpp/mcp" in (
                        await response.text()
                    )
            status, body = await call(url, None)
            assert status == 401
            assert body["error"]["data"]["resource_metadata"] == (
                "https://data.example.org/.well-known/oauth-protected-resource/pdpp/mcp"
            )
            status, body = await call(url, shared_sandbox.tokens["client_broad"])
            assert status == 200, body


async def test_a_forwarded_prefix_is_advertised_only_when_allowed(
    shared_sandbox: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings = sandbox_settings(
        shared_sandbox.url,
        trusted_proxies=("127.0.0.1",),
        allowed_hosts=("data.example.org",),
        allowed_prefixes=("/pdpp",),
    )
    async with start_gateway(settings) as url:
        headers = forwarded("data.example.org")
        status, document = await metadata(url, {**headers, "X-Forwarded-Prefix": "/pdpp/"})
        assert (status, document["resource"]) == (200, "https://data.example.org/pdpp/mcp")
        for prefix in ("/other", "/pdpp/../admin", "/x", "/x"):
            status, document = await metadata(url, {**headers, "X-Forwarded-Prefix": prefix})
            assert (status, document["resource"]) == (200, "https://data.example.org/mcp"), prefix
    warned = [r.getMessage() for r in caplog.records if "not an allowed prefix" in r.getMessage()]
    assert len(warned) == 3  # once per prefix
    assert "--allowed-prefix" in warned[0]
    assert OriginPolicy.from_settings(settings).audiences() >= {
        "https://data.example.org/pdpp/mcp",
        "https://data.example.org/mcp",
    }
