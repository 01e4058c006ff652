"""The hosted gateway behind a real nginx, as an operator deploys it: TLS ends at the proxy
and the gateway lives under a path prefix (``https://127.0.0.1:<port>/pdpp/mcp``).

Every URL the gateway names is the public one, prefix included: the protected-resource
metadata (served where RFC 9728 puts it for that resource), the 401 challenge, ``/connect``
and ``llms.txt``; whether the prefix comes from ``--public-url`` or from the proxy's
``X-Forwarded-Prefix``. The start-up line says what the gateway advertises. And the SDK's
own ``OAuthClientProvider`` signs in through the proxy with no token and calls a tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.config import SandboxConfig
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.sandbox.runner import start_sandbox
from tests.gateway_process import serve
from tests.hosted.test_oauth_clients import MemoryStorage, Person, sdk_oauth_provider
from tests.nginx_proxy import Nginx, free_port, nginx_proxy

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


async def test_an_oauth_client_signs_in_through_the_proxy_with_the_rs_behind_it(tmp_path: Path) -> None:
    """The layout the guide offers: one public origin, the RS behind ``/`` and the gateway
    behind ``/pdpp/``, both through the guide's nginx; the gateway reaches the RS privately
    (``--rs-internal-url``) and the RS names its public origin (``sandbox --public-url``).
    The SDK's own OAuth client finds the sign-in, signs in and calls a tool, every request of
    it through the proxy: nothing it is told names a private address."""
    port = free_port()
    origin = f"https://127.0.0.1:{port}"
    public = f"{origin}/pdpp"
    async with start_sandbox(SandboxConfig(public_origin=origin)) as rs:
        rs.allow_resource(f"{public}/mcp")
        settings = sandbox_settings(
            rs.url,
            provider_url=origin,
            rs_internal_url=rs.url,
            public_url=public,
            trusted_proxies=("127.0.0.1",),
        )
        async with start_gateway(settings) as url:
            with nginx_proxy(tmp_path, [port_of(url)], port=port, rs=rs.url) as proxy:
                person, storage = Person(ssl=proxy.tls.client_context()), MemoryStorage()
                found = await discovery_through(proxy)
                async with (
                    httpx2.AsyncClient(
                        auth=sdk_oauth_provider(f"{public}/mcp", person, storage),
                        verify=proxy.tls.client_context(),
                        timeout=30,
                    ) as http,
                    Client(
                        streamable_http_client(f"{public}/mcp", http_client=http), mode="legacy", cache=None
                    ) as client,
                ):
                    result = await client.call_tool("schema", {})
    assert found["metadata"]["authorization_servers"] == [origin]
    assert rs.url not in str(found)  # the private address is named nowhere a client reads
    assert result.is_error is False
    assert "SDK OAuth client" in person.pages[0]
    assert storage.tokens is not None
    assert storage.tokens.refresh_token


async def test_an_rs_that_names_its_private_address_is_advertised_at_its_public_origin(
    sandbox: Any, tmp_path: Path
) -> None:
    """An RS reached at ``--rs-internal-url`` that names its authorization server by that
    address (the sandbox without ``--public-url``): the gateway's public metadata names the
    provider's public origin instead, never the private one."""
    port = free_port()
    origin, public = f"https://127.0.0.1:{port}", f"https://127.0.0.1:{port}/pdpp"
    settings = sandbox_settings(
        sandbox.url,
        provider_url=origin,
        rs_internal_url=sandbox.url,
        public_url=public,
        trusted_proxies=("127.0.0.1",),
    )
    async with start_gateway(settings) as url:
        with nginx_proxy(tmp_path, [port_of(url)], port=port, rs=sandbox.url) as proxy:
            found = await discovery_through(proxy)
    assert found["metadata"]["authorization_servers"] == [origin]
    assert sandbox.url not in str(found)


async def discovery_through(proxy: Nginx) -> dict[str, Any]:
    """What a client finds at the public URLs: the metadata, the challenge, the pages."""
    public = proxy.base
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=proxy.tls.client_context())) as http:
        async with http.get(
            f"{proxy.origin}/.well-known/oauth-protected-resource{proxy.prefix}/mcp"
        ) as answer:
            assert answer.status == 200, await answer.text()
            metadata = await answer.json()
        async with http.post(f"{public}/mcp", json=PING, headers={"Accept": "application/json"}) as answer:
            assert answer.status == 401
            challenge = answer.headers["WWW-Authenticate"], answer.headers["Link"], await answer.json()
        for probe in ("metrics", "healthz", "readyz"):  # not public: each replica's own address
            async with http.get(f"{public}/{probe}") as answer:
                assert answer.status == 404, probe
        pages = {}
        for page in ("connect", "llms.txt"):
            async with http.get(f"{public}/{page}") as answer:
                assert answer.status == 200, page
                pages[page] = await answer.text()
    return {"metadata": metadata, "challenge": challenge, "pages": pages}


def assert_named_with_prefix(proxy: Nginx, found: dict[str, Any]) -> None:
    public, metadata_url = proxy.base, f"{proxy.origin}/.well-known/oauth-protected-resource/pdpp/mcp"
    metadata = found["metadata"]
    assert metadata["resource"] == f"{public}/mcp"
    mcp = metadata["pdpp_agent_discovery"]["mcp"]
    assert (mcp["endpoint"], mcp["connect_page"], mcp["llms_txt"]) == (
        f"{public}/mcp",
        f"{public}/connect",
        f"{public}/llms.txt",
    )
    assert mcp["authorization"]["authorization_code_pkce"]["resource"] == f"{public}/mcp"
    header, link, body = found["challenge"]
    assert header == f'Bearer resource_metadata="{metadata_url}"'
    assert body["error"]["data"]["resource_metadata"] == metadata_url
    assert link.startswith(f"<{public}/icon.svg>")
    for page, text in found["pages"].items():
        assert f"{public}/mcp" in text, page
        assert f"{proxy.origin}/mcp" not in text, page  # never the origin without the prefix
    assert metadata_url in found["pages"]["llms.txt"]
    assert f'<link rel="icon" href="{public}/icon.svg"' in found["pages"]["connect"]


@pytest.mark.parametrize("source", ["public-url", "forwarded-prefix"])
async def test_every_url_the_gateway_names_keeps_the_prefix(
    sandbox: Any, tmp_path: Path, source: str
) -> None:
    port = free_port()
    if source == "public-url":
        args = ["--public-url", f"https://127.0.0.1:{port}/pdpp"]
        advertised = f"https://127.0.0.1:{port}/pdpp/mcp (the public URL)"
    else:
        args = ["--allowed-host", f"127.0.0.1:{port}", "--allowed-prefix", "/pdpp"]
        advertised = "under an allowed forwarded prefix (allowed: /pdpp)"
    async with serve("--provider-url", sandbox.url, "--trusted-proxy", "127.0.0.1", *args) as gateway:
        url = await gateway.wait_listening()
        with nginx_proxy(tmp_path, [port_of(url)], port=port) as proxy:
            assert_named_with_prefix(proxy, await discovery_through(proxy))
        assert await gateway.stop() == 0
    listening = next(line for line in gateway.lines if line.get("event") == "listening")
    assert advertised in listening["advertised"]
    assert advertised in listening["msg"]
    paths = {line.get("path") for line in gateway.lines if line.get("logger") == "pdpp_gateway.access"}
    assert "/.well-known/oauth-protected-resource/{prefix}/mcp" in paths  # its pattern, not "other"
