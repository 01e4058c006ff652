"""An OAuth MCP client signs in to the hosted ``/mcp`` with no pre-minted token.

The client is the Python SDK's own ``OAuthClientProvider``: it gets the 401 challenge,
reads the gateway's protected-resource metadata, finds the sandbox AS, registers, sends
the person (``ConsentBrowser``) to the consent page, exchanges the code and lists tools.
"""

from __future__ import annotations

from ssl import SSLContext
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.oauth_browser import ConsentBrowser

REDIRECT = "http://127.0.0.1:45999/callback"  # never listened on: the browser hands the code over


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """Approves (or denies) on the consent page the provider sends them to."""

    def __init__(self, decision: str = "approve", ssl: SSLContext | None = None) -> None:
        self.decision = decision
        self.ssl = ssl  # the proxy's certificate authority, when the pages are behind one
        self.location = ""
        self.pages: list[str] = []

    async def visit(self, url: str) -> None:
        async with ConsentBrowser(self.ssl) as browser:
            status, form, _ = await browser.open(url)
            assert status == 200, form.text[:200]
            self.pages.append(form.text)
            _, location = await browser.submit(form, self.decision)
        assert location
        self.location = location

    async def callback(self) -> AuthorizationCodeResult:
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.location).query).items()}
        return AuthorizationCodeResult(
            code=query.get("code", ""), state=query.get("state"), iss=query.get("iss")
        )


def sdk_oauth_provider(url: str, person: Person, storage: MemoryStorage) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name="SDK OAuth client", redirect_uris=[REDIRECT], token_endpoint_auth_method="none"
    )
    return OAuthClientProvider(url, metadata, storage, person.visit, person.callback)  # type: ignore[arg-type]


async def test_sdk_oauth_client_signs_in_to_hosted_mcp_and_lists_tools(sandbox: Any) -> None:
    person, storage = Person(), MemoryStorage()
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True) as url:
        sandbox.allow_resource(url)
        async with (
            httpx2.AsyncClient(auth=sdk_oauth_provider(url, person, storage), timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client,
        ):
            tools = await client.list_tools()
            result = await client.call_tool("schema", {})
    assert {t.name for t in tools.tools} >= {"schema", "search", "fetch"}
    assert result.is_error is False
    assert "SDK OAuth client" in person.pages[0]
    assert storage.tokens is not None
    assert storage.tokens.refresh_token


async def test_sdk_oauth_client_is_refused_when_the_person_denies(sandbox: Any) -> None:
    person, storage = Person("deny"), MemoryStorage()
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True) as url:
        sandbox.allow_resource(url)
        with pytest.raises(BaseException) as caught:  # noqa: PT011 - the SDK wraps it in task groups
            async with (
                httpx2.AsyncClient(auth=sdk_oauth_provider(url, person, storage), timeout=30) as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client,
            ):
                await client.list_tools()
    assert _flow_errors(caught.value), repr(caught.value)
    assert storage.tokens is None
    assert "error=access_denied" in person.location


def _flow_errors(error: BaseException) -> list[OAuthFlowError]:
    """The SDK's OAuth refusals inside ``error`` (task groups wrap them in exception groups)."""
    if isinstance(error, OAuthFlowError):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        return [found for inner in error.exceptions for found in _flow_errors(inner)]
    return _flow_errors(error.__cause__) if error.__cause__ is not None else []
