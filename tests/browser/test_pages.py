"""The /connect page and the consent page, as a person sees them on a phone and a laptop.

At 390 and 1280 CSS pixels wide: nothing scrolls sideways, the buttons a person acts on are
there, axe-core (injected from ``tests/browser/node_modules``) reports no serious or
critical accessibility violation, and a screenshot of each is kept (``ARTIFACTS``). Every
copy button puts on the clipboard exactly the command (or URL) shown beside it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from playwright.async_api import Browser, Page

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.hosted.pages import PageFacts
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.browser.conftest import ARTIFACTS, AXE

WIDTHS = [(390, 844), (1280, 800)]
REDIRECT = "http://127.0.0.1:45000/cb"


async def consent_url(sandbox_url: str) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{sandbox_url}/oauth/register",
            json={"client_name": "Browser check", "redirect_uris": [REDIRECT]},
        ) as response,
    ):
        client_id = (await response.json())["client_id"]
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
        "state": "s",
    }
    return f"{sandbox_url}/oauth/authorize?" + urlencode(query)


async def fits_and_is_accessible(page: Page, name: str) -> None:
    width = page.viewport_size["width"] if page.viewport_size else 0
    await page.screenshot(path=ARTIFACTS / f"{name}-{width}.png", full_page=True)
    wide = await page.evaluate("document.documentElement.scrollWidth")
    assert wide <= width, f"{wide}px of content on a {width}px screen ({name})"
    sideways = await page.evaluate(
        "[...document.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1"
        " && getComputedStyle(e).overflowX !== 'visible').map(e => e.tagName)"
    )
    assert sideways == [], f"boxes that scroll sideways on {name}: {sideways}"
    if not AXE.exists():
        pytest.skip("axe-core is not installed (scripts/test runs npm ci in tests/browser)")
    await page.add_script_tag(path=str(AXE))
    violations = await page.evaluate(
        "async () => (await axe.run(document)).violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => `${v.id} (${v.impact}): ${v.nodes.map(n => n.target.join(' ')).join(', ')}`)"
    )
    assert violations == [], f"{name} at {width}px: {violations}"


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=["phone", "laptop"])
async def test_connect_and_consent_pages_fit_and_pass_axe(
    browser: Browser, sandbox: Any, width: int, height: int
) -> None:
    facts = PageFacts(demo_token=sandbox.tokens["client_broad"], cache_root="/home/someone/pdpp-demo-cache")
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True, demo=facts) as url:
        context = await browser.new_context(  # bypass_csp: the pages' CSP would refuse axe's script
            viewport={"width": width, "height": height},
            is_mobile=width < 500,
            has_touch=width < 500,
            bypass_csp=True,
        )
        page = await context.new_page()
        await page.goto(url.removesuffix("/mcp") + "/connect")
        assert await page.locator("button.copy").count() >= 6
        await fits_and_is_accessible(page, "connect")
        await page.goto(await consent_url(sandbox.url))
        assert await page.locator("button").all_inner_texts() == ["Approve", "Deny"]
        await fits_and_is_accessible(page, "consent")
        await context.close()


async def test_every_copy_button_copies_the_command_shown_beside_it(browser: Browser, sandbox: Any) -> None:
    facts = PageFacts(demo_token=sandbox.tokens["client_broad"], cache_root="/home/someone/pdpp-demo-cache")
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True, demo=facts) as url:
        context = await browser.new_context(permissions=["clipboard-read", "clipboard-write"])
        page = await context.new_page()
        await page.goto(url.removesuffix("/mcp") + "/connect")
        buttons = page.locator("button.copy")
        copied: list[tuple[str, str]] = []
        for index in range(await buttons.count()):
            button = buttons.nth(index)
            shown = await button.evaluate(
                "b => (b.parentElement.querySelector('pre code') || document.getElementById('mcp-url')).textContent"
            )
            await page.evaluate("navigator.clipboard.writeText('')")
            await button.click()
            await page.wait_for_function("async () => (await navigator.clipboard.readText()) !== ''")
            copied.append((shown, await page.evaluate("navigator.clipboard.readText()")))
        await context.close()
    assert len(copied) >= 6
    assert all(text == shown for shown, text in copied), [pair for pair in copied if pair[0] != pair[1]]
    assert any(text == url for _, text in copied)  # the MCP URL itself
    assert any(text.startswith("claude mcp add") for _, text in copied)
