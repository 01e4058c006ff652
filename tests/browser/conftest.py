"""The machine's own Chromium, driven by Playwright, for the pages a person clicks through.

``scripts/test`` installs Debian's ``chromium`` where it can (root with apt); elsewhere these
tests skip and say why. Playwright drives that executable (no browser download): it has
the clipboard, keyboard, viewport and screenshot control these tests need, and it is
maintained with Chromium's DevTools protocol. Screenshots go to ``ARTIFACTS``
(``test-artifacts/browser`` in the checkout, or ``$PDPP_TEST_ARTIFACTS/browser``), kept
after the run for a person to look at.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(os.environ.get("PDPP_TEST_ARTIFACTS") or ROOT / "test-artifacts") / "browser"
AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
# As the machine's own probe starts it: no sandbox as root, no GPU, and nothing that calls
# out to Google's services on a closed network.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine (scripts/test installs Debian's chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield chromium
        finally:
            await chromium.close()
