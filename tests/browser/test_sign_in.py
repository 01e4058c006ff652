"""Signing in with a real browser: ``pdpp-gateway connect`` and an MCP client's OAuth.

``connect --no-browser`` prints the consent URL; Chromium opens it, the person unticks a
stream and approves (with the mouse, or with the keyboard alone), or denies; what ``connect``
caches, and its exit code, are what the person chose. Then the MCP SDK's own OAuth client
signs in to the gateway's ``/mcp`` with Chromium approving at the consent page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from playwright.async_api import Browser, Page, Route

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.browser.conftest import ARTIFACTS
from tests.commands.test_connect import _connect, _finish
from tests.conftest import run_cli
from tests.hosted.test_oauth_clients import MemoryStorage

GMAIL = "https://registry.pdpp.dev/connectors/gmail#"
REDIRECT = "http://127.0.0.1:45999/callback"  # never listened on: the browser's redirect is caught


def cached_streams(cache: Path) -> list[str]:
    """The streams of the one cached grant, as ``connect --list`` shows them."""
    listed = run_cli("connect", "--list", "--cache-root", str(cache))
    assert listed.returncode == 0, listed.stderr
    (line,) = listed.stdout.splitlines()
    return sorted(line.split("streams=", 1)[1].split()[0].split(","))


async def test_connect_caches_exactly_the_streams_left_ticked(
    browser: Browser, sandbox: Any, tmp_path: Path
) -> None:
    cache = tmp_path / ".pdpp"
    async with _connect(sandbox.url, "--connector", "gmail", "--cache-root", str(cache)) as (process, url):
        page = await browser.new_page()
        await page.goto(url)
        await page.get_by_role("checkbox", name="attachments").uncheck()
        await page.screenshot(path=ARTIFACTS / "connect-consent-unticked.png")
        await page.get_by_role("button", name="Approve").click()
        await page.wait_for_load_state()
        code, out, err = await _finish(process)
    assert code == 0, err
    assert "Connected to" in out
    assert cached_streams(cache) == ["message_bodies", "messages", "threads"]


async def test_denying_in_the_browser_exits_66_and_caches_nothing(
    browser: Browser, sandbox: Any, tmp_path: Path
) -> None:
    cache = tmp_path / ".pdpp"
    async with _connect(sandbox.url, "--cache-root", str(cache)) as (process, url):
        page = await browser.new_page()
        await page.goto(url)
        await page.get_by_role("button", name="Deny").click()
        await page.wait_for_load_state()
        code, _, err = await _finish(process)
    assert code == 66, err
    assert "No grants cached" in run_cli("connect", "--list", "--cache-root", str(cache)).stdout


async def tab_to(page: Page, role: str, name: str) -> None:
    """Press Tab until the element with this accessible role and name has the focus."""
    for _ in range(60):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(
            "() => { const e = document.activeElement;"
            " return [e.type === 'checkbox' ? 'checkbox' : e.tagName.toLowerCase(),"
            " (e.labels && e.labels[0] ? e.labels[0].textContent : e.textContent).trim()]; }"
        )
        if focused == [role, name]:
            return
    raise AssertionError(f"Tab never reached the {role} {name!r}")


async def test_the_keyboard_alone_can_untick_and_approve(
    browser: Browser, sandbox: Any, tmp_path: Path
) -> None:
    cache = tmp_path / ".pdpp"
    async with _connect(sandbox.url, "--connector", "gmail", "--cache-root", str(cache)) as (process, url):
        page = await browser.new_page()
        await page.goto(url)
        await tab_to(page, "checkbox", "threads")
        await page.keyboard.press("Space")
        await tab_to(page, "button", "Approve")
        await page.keyboard.press("Enter")
        await page.wait_for_load_state()
        code, _, err = await _finish(process)
    assert code == 0, err
    assert cached_streams(cache) == ["attachments", "message_bodies", "messages"]


class BrowserPerson:
    """Approves at the consent page in Chromium; the redirect to the client's loopback
    callback is caught in the browser and handed to the SDK."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.location = ""

    async def visit(self, url: str) -> None:
        page = await self.browser.new_page()

        async def caught(route: Route) -> None:
            self.location = route.request.url
            await route.fulfill(status=200, content_type="text/plain", body="signed in")

        await page.route(lambda address: address.startswith(REDIRECT), caught)
        await page.goto(url)
        await page.get_by_role("button", name="Approve").click()
        await page.wait_for_url(lambda address: address.startswith(REDIRECT))
        await page.close()

    async def callback(self) -> AuthorizationCodeResult:
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.location).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


async def test_an_mcp_clients_oauth_sign_in_is_approved_in_the_browser(
    browser: Browser, sandbox: Any
) -> None:
    person, storage = BrowserPerson(browser), MemoryStorage()
    metadata = OAuthClientMetadata(
        client_name="Browser OAuth client", redirect_uris=[REDIRECT], token_endpoint_auth_method="none"
    )
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True) as url:
        sandbox.allow_resource(url)
        provider = OAuthClientProvider(url, metadata, storage, person.visit, person.callback)  # type: ignore[arg-type]
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client,
        ):
            result = await client.call_tool("schema", {})
    assert result.is_error is False
    assert storage.tokens is not None
    assert storage.tokens.refresh_token
