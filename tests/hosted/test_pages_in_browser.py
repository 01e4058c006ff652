"""The connect and consent pages in a real headless Chromium at a phone's width.

Skipped where no Chromium is installed. Chromium is driven over its DevTools protocol
(aiohttp's WebSocket client): each page is loaded at 390x844 CSS pixels with touch
emulation and must not be wider than the screen (no sideways scrolling), and must show
what a person acts on (the copy buttons; the Approve and Deny buttons). Screenshots are
written under the test's tmp directory for a person to look at.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from pdpp_gateway.hosted.embedded import sandbox_settings, start_gateway
from pdpp_gateway.hosted.pages import PageFacts

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")


class Tab:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        await self._ws.send_str(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads((await asyncio.wait_for(self._ws.receive(), 30)).data)
            if message.get("id") == ident:
                assert "error" not in message, message
                return dict(message.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        answer = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer["result"].get("value")

    async def open(self, url: str) -> None:
        await self.call("Page.navigate", url=url)
        for _ in range(100):
            if await self.evaluate("document.readyState") == "complete":
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"{url} did not load")


@asynccontextmanager
async def phone(tmp_path: Path) -> AsyncIterator[Tab]:
    assert CHROMIUM is not None
    process = await asyncio.create_subprocess_exec(
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        f"--user-data-dir={tmp_path / 'profile'}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        endpoint = ""
        while not endpoint:
            line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
            assert line, "Chromium exited before opening DevTools"
            if "DevTools listening on " in line:
                endpoint = line.split("DevTools listening on ", 1)[1].strip()
        http_base = endpoint.split("/devtools/")[0].replace("ws://", "http://")
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{http_base}/json/list") as response:
                pages = [t for t in await response.json() if t.get("type") == "page"]
            async with session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                tab = Tab(ws)
                await tab.call(
                    "Emulation.setDeviceMetricsOverride",
                    width=390,
                    height=844,
                    deviceScaleFactor=2,
                    mobile=True,
                )
                await tab.call("Emulation.setTouchEmulationEnabled", enabled=True)
                yield tab
    finally:
        process.kill()
        await process.wait()


async def _fits_the_screen(tab: Tab, shot: Path) -> None:
    wide = await tab.evaluate("document.documentElement.scrollWidth")
    screen = await tab.evaluate("window.innerWidth")
    png = base64.b64decode((await tab.call("Page.captureScreenshot", format="png"))["data"])
    await asyncio.to_thread(shot.write_bytes, png)
    assert wide <= screen, f"{wide}px of content on a {screen}px screen ({shot})"
    sideways = await tab.evaluate(
        "[...document.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1"
        " && getComputedStyle(e).overflowX !== 'visible').map(e => e.tagName)"
    )
    assert sideways == [], f"boxes that scroll sideways: {sideways} ({shot})"


async def test_connect_and_consent_pages_fit_a_phone(sandbox: Any, tmp_path: Path) -> None:
    facts = PageFacts(demo_token=sandbox.tokens["client_broad"], cache_root="/home/someone/pdpp-demo-cache")
    async with (
        start_gateway(sandbox_settings(sandbox.url), public_self=True, demo=facts) as url,
        aiohttp.ClientSession() as session,
    ):
        async with session.post(
            f"{sandbox.url}/oauth/register",
            json={"client_name": "Phone check", "redirect_uris": ["http://127.0.0.1:45000/cb"]},
        ) as response:
            client_id = (await response.json())["client_id"]
        consent = f"{sandbox.url}/oauth/authorize?" + urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": "http://127.0.0.1:45000/cb",
                "code_challenge": "x" * 43,
                "code_challenge_method": "S256",
                "state": "s",
            }
        )
        async with phone(tmp_path) as tab:
            await tab.open(url.removesuffix("/mcp") + "/connect")
            await _fits_the_screen(tab, tmp_path / "connect.png")
            assert await tab.evaluate("document.querySelectorAll('button.copy').length") >= 8
            await tab.open(consent)
            await _fits_the_screen(tab, tmp_path / "consent.png")
            labels = await tab.evaluate("[...document.querySelectorAll('button')].map(b => b.textContent)")
            assert labels == ["Approve", "Deny"]
