"""What the hosted gateway advertises (metadata, icon, connect page, llms.txt) and its probes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.upstreams import serve_app

METADATA = "/.well-known/oauth-protected-resource/mcp"


async def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers or {}) as response:
        return response.status, dict(response.headers), await response.text()


def base(url: str) -> str:
    return url.removesuffix("/mcp")


async def test_mcp_metadata_names_the_public_endpoint_and_client_kinds_only(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url), public_self=True) as url:
        async with aiohttp.ClientSession() as http, http.get(base(url) + METADATA) as response:
            assert response.status == 200
            document = await response.json()
        assert document["resource"] == url
        assert document["pdpp_agent_discovery"]["mcp"]["endpoint"] == url
        assert document["pdpp_token_kinds_supported"] == ["client", "mcp_package"]
        assert document["authorization_servers"] == [shared_sandbox.url]
        assert document["pdpp_core_query_base"] == f"{shared_sandbox.url}/v1"
        # the sandbox's own AS metadata offers code + S256, so that flow is named (for this /mcp)
        flows = document["pdpp_agent_discovery"]["mcp"]["authorization"]
        assert set(flows) == {"authorization_code_pkce"}
        assert (
            flows["authorization_code_pkce"]["authorization_endpoint"]
            == f"{shared_sandbox.url}/oauth/authorize"
        )
        assert flows["authorization_code_pkce"]["resource"] == url
        text = str(document).lower()
        assert "logo_uri" not in text
        assert "profile" not in text
        assert "owner" not in document["pdpp_token_kinds_supported"]


async def test_schema_probe_gateway_does_not_advertise_package_tokens(shared_sandbox: Any) -> None:
    async with start_gateway(
        sandbox_settings(shared_sandbox.url, introspection=False), public_self=True
    ) as url:
        status, _, _ = await get(base(url) + METADATA)
        assert status == 200
        async with aiohttp.ClientSession() as http, http.get(base(url) + METADATA) as response:
            assert (await response.json())["pdpp_token_kinds_supported"] == ["client"]


TRUSTED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "data.example.org"}


async def test_trusted_proxy_forwarded_origin_shapes_metadata_and_challenges(shared_sandbox: Any) -> None:
    settings = sandbox_settings(
        shared_sandbox.url, trusted_proxies=("127.0.0.1",), allowed_hosts=("data.example.org",)
    )
    async with start_gateway(settings) as url:
        async with aiohttp.ClientSession() as http:
            async with http.get(base(url) + METADATA, headers=TRUSTED) as response:
                document = await response.json()
            async with http.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=TRUSTED
            ) as response:
                challenge = response.headers["WWW-Authenticate"]
                link = response.headers["Link"]
        assert document["resource"] == "https://data.example.org/mcp"
        assert challenge == f'Bearer resource_metadata="https://data.example.org{METADATA}"'
        assert link.startswith("<https://data.example.org/icon.svg>")


async def test_untrusted_peer_cannot_choose_the_advertised_origin(shared_sandbox: Any) -> None:
    settings = sandbox_settings(
        shared_sandbox.url, trusted_proxies=("10.9.8.7",), allowed_hosts=("data.example.org",)
    )
    async with start_gateway(settings) as url:
        async with (
            aiohttp.ClientSession() as http,
            http.get(base(url) + METADATA, headers=TRUSTED) as response,
        ):
            document = await response.json()
        assert document["resource"] == f"{shared_sandbox.url}/mcp"
        assert "data.example.org" not in str(document)


async def test_forwarded_host_outside_the_allow_list_is_misdirected(
    shared_sandbox: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pdpp_gateway.access")
    settings = sandbox_settings(shared_sandbox.url, trusted_proxies=("127.0.0.1",))
    async with start_gateway(settings) as url:
        status, _, body = await get(base(url) + METADATA, TRUSTED)
        assert status == 421
        assert "misdirected_request" in body
        # which host arrived, and which ones this gateway serves: the operator's next step
        assert f"does not serve the host {TRUSTED['X-Forwarded-Host']}: it serves " in body
        assert urlsplit(shared_sandbox.url).netloc in body.split("it serves ", 1)[1]
    # the access line of that request says so too, beside its status
    (line,) = [
        r.fields for r in caplog.records if r.name == "pdpp_gateway.access" and r.fields["status"] == 421
    ]  # type: ignore[attr-defined]
    assert line["host"] == TRUSTED["X-Forwarded-Host"]
    assert urlsplit(shared_sandbox.url).netloc in line["served"]


async def test_icon_connect_page_and_llms_txt(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url), public_self=True) as url:
        status, headers, icon = await get(base(url) + "/icon.svg")
        assert status == 200
        assert headers["Content-Type"].startswith("image/svg+xml")
        assert icon.lstrip().startswith("<svg")

        status, headers, page = await get(base(url) + "/connect")
        assert status == 200
        assert headers["Content-Type"].startswith("text/html")
        assert f"claude mcp add --transport http pdpp {url}" in page
        assert f"codex mcp add pdpp --url {url}" in page
        assert f"pdpp-gateway connect {shared_sandbox.url}" in page
        assert "llms.txt" in page
        assert "sends you to the provider to sign in" in page  # the sandbox AS offers code + PKCE
        assert "Bearer" not in page  # no demo token outside the demo

        status, headers, llms = await get(base(url) + "/llms.txt")
        assert status == 200
        assert headers["Content-Type"].startswith("text/plain")
        assert url in llms
        for document in (page, llms):
            lowered = document.lower()
            assert "owner token" not in lowered
            assert "pdpp_owner_token" not in lowered
            assert "owner bearer" not in lowered
            assert "profile" not in lowered


async def test_health_readiness_and_metrics(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as url:
        assert (await get(base(url) + "/healthz"))[0] == 200
        assert (await get(base(url) + "/readyz"))[0] == 200
        async with aiohttp.ClientSession() as http:
            headers = {
                "Authorization": f"Bearer {shared_sandbox.tokens['client_narrow']}",
                "Accept": "application/json",
            }
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "schema", "arguments": {}},
            }
            async with http.post(url, json=call, headers=headers) as response:
                assert response.status == 200
                assert response.headers["Request-Id"].startswith("req_")
        status, headers, metrics = await get(base(url) + "/metrics", {"Host": "internal-probe:9999"})
        assert status == 200
        assert headers["Content-Type"].startswith("text/plain")
        assert (
            'pdpp_gateway_mcp_requests_total{method="tools/call",outcome="ok",tool="schema"} 1.0' in metrics
        )
        assert 'pdpp_gateway_upstream_seconds_count{route="schema",status="2xx"}' in metrics
        assert shared_sandbox.tokens["client_narrow"] not in metrics


@pytest.mark.parametrize("path", ["/readyz"])
async def test_readiness_fails_when_the_rs_is_down(path: str) -> None:
    settings = sandbox_settings("http://127.0.0.1:9", introspection=False)
    async with start_gateway(settings) as url:
        status, _, body = await get(base(url) + path)
        assert status == 503
        assert "resource server" in body


def as_metadata(issuer: str) -> dict[str, Any]:
    """The reference AS's metadata (capture 03), trimmed, under ``issuer``."""
    return {
        "issuer": issuer,
        "introspection_endpoint": f"{issuer}/introspect",
        "authorization_endpoint": f"{issuer}/oauth/authorize",
        "token_endpoint": f"{issuer}/oauth/token",
        "device_authorization_endpoint": f"{issuer}/oauth/device_authorization",
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": [
            "urn:ietf:params:oauth:grant-type:device_code",
            "authorization_code",
            "refresh_token",
        ],
        "pdpp_authorization_details_types_supported": ["https://pdpp.dev/data-access"],
        "pdpp_device_authorization_profiles_supported": [
            {
                "authorization_details_type": "https://pdpp.dev/data-access",
                "normal_mcp_setup": True,
                "pdpp_token_kind": "client",
                "required_parameters": ["client_id", "resource", "authorization_details"],
            },
            {"mcp_owner_bearer_rejected": True, "normal_mcp_setup": False, "pdpp_token_kind": "owner"},
        ],
    }


@asynccontextmanager
async def rs_with_authorization_server(*, issuer_suffix: str = "") -> AsyncIterator[str]:
    """An RS whose authorization server (issuer ``<origin>/as``) publishes RFC 8414 metadata."""
    origin = ""

    async def resource(request: web.Request) -> web.Response:
        return web.json_response({"resource": origin, "authorization_servers": [f"{origin}/as"]})

    async def authorization_server(request: web.Request) -> web.Response:
        return web.json_response(as_metadata(f"{origin}/as{issuer_suffix}"))

    app = web.Application()
    app.router.add_get("/.well-known/oauth-protected-resource", resource)
    app.router.add_get("/.well-known/oauth-authorization-server/as", authorization_server)
    async with serve_app(app) as url:
        origin = url  # the handlers read it: they run only once the app is served
        yield origin


async def test_mcp_metadata_carries_the_authorization_flows_the_as_advertises() -> None:
    async with (
        rs_with_authorization_server() as rs,
        start_gateway(sandbox_settings(rs, introspection=False), public_self=True) as url,
        aiohttp.ClientSession() as http,
        http.get(base(url) + METADATA) as response,
    ):
        assert response.status == 200
        document = await response.json()
    assert document["authorization_servers"] == [f"{rs}/as"]
    authorization = document["pdpp_agent_discovery"]["mcp"]["authorization"]
    assert authorization == {
        "authorization_code_pkce": {
            "authorization_endpoint": f"{rs}/as/oauth/authorize",
            "flow": "authorization_code_pkce",
            "pdpp_token_kind": "client",
            "resource": url,
            "resource_parameter": "required",
        },
        "device_code": {
            "authorization_details_type": "https://pdpp.dev/data-access",
            "device_authorization_endpoint": f"{rs}/as/oauth/device_authorization",
            "flow": "device_code",
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "owner_bearer_accepted": False,
            "pdpp_token_kind": "client",
            "required_parameters": ["client_id", "resource", "authorization_details"],
            "resource": url,
            "token_endpoint": f"{rs}/as/oauth/token",
        },
    }


async def test_as_metadata_for_another_issuer_is_not_used() -> None:
    async with (
        rs_with_authorization_server(issuer_suffix="-impostor") as rs,
        start_gateway(sandbox_settings(rs, introspection=False), public_self=True) as url,
        aiohttp.ClientSession() as http,
        http.get(base(url) + METADATA) as response,
    ):
        document = await response.json()
    assert "authorization" not in document["pdpp_agent_discovery"]["mcp"]


async def test_a_misdirected_request_s_icon_keeps_the_public_prefix(shared_sandbox: Any) -> None:
    settings = sandbox_settings(shared_sandbox.url, public_url="https://data.example.org/pdpp")
    async with start_gateway(settings) as url:
        status, headers, body = await get(url, {"Host": "elsewhere.example"})
    assert status == 421
    assert headers["Link"].startswith("<https://data.example.org/pdpp/icon.svg>")
    assert "does not serve the host elsewhere.example" in body
    assert "https://data.example.org/pdpp/mcp" in body
