"""``pdpp-gateway connect`` with whatever URL a person has: a gateway's MCP endpoint on another
origin than its RS (the demo's), a URL under the provider, or one that leads nowhere.

The gateway is a real hosted gateway in front of the sandbox; ``connect`` runs as a real
subprocess and the consent page is submitted as a person would (``test_connect``'s helpers).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp import Client

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.local.credentials import load_credential
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.commands.test_connect import _connect, _finish, _follow
from tests.conftest import run_cli, stdio_params
from tests.grants import approve
from tests.oauth_browser import ConsentBrowser


async def test_connect_takes_a_gateways_mcp_url_on_its_own_origin_and_says_which_provider(
    sandbox: Any, sandbox_factory: Any, tmp_path: Path
) -> None:
    """The demo's case: the gateway on one port, the RS on another. The gateway's RFC 9728
    metadata for ``/mcp`` names the RS; the grant is the RS's, and stdio then serves it.
    Another provider is cached already, on the same host: the printed entry has a name of
    its own (host and port), so pasting it keeps the other one's."""
    cache = tmp_path / ".pdpp"
    await approve((await sandbox_factory()).url, cache, "github")
    said: list[str] = []
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True) as gateway:
        origin = gateway.removesuffix("/mcp")
        async with (
            _connect(gateway, "--connector", "gmail", "--cache-root", str(cache), said=said) as (
                process,
                url,
            ),
            ConsentBrowser() as browser,
        ):
            _, location = await browser.submit((await browser.open(url))[1], "approve")
            assert location
            await _follow(browser, location)
            code, out, err = await _finish(process)
    assert code == 0, "".join(said) + err
    found = "".join(said)
    assert f"leads to the provider {sandbox.url}" in found
    assert f"{origin}/.well-known/oauth-protected-resource/mcp" in found
    assert f"Connected to {sandbox.url} (gmail)" in out
    assert f"--provider-url {sandbox.url}" in out  # the client entry is the RS's, not the gateway's
    assert f'"pdpp-127-0-0-1-{sandbox.url.rsplit(":", 1)[1]}": {{' in out
    assert load_credential(sandbox.url, cache).connector == "gmail"
    async with Client(stdio_params(sandbox.url, cache), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        assert (await client.call_tool("schema", {})).is_error is False


async def test_connect_falls_back_to_the_origins_root_metadata(sandbox: Any, tmp_path: Path) -> None:
    """A URL under the provider with no metadata of its own (its query base, ``/v1``): the
    origin's root document names the provider."""
    said: list[str] = []
    async with _connect(f"{sandbox.url}/v1/", "--cache-root", str(tmp_path), said=said) as (_, url):
        assert (
            f"leads to the provider {sandbox.url} (named in {sandbox.url}/.well-known/oauth-protected-resource)"
            in ("".join(said))
        )
        assert url.startswith(f"{sandbox.url}/")  # its authorization server's consent page


async def test_a_url_that_leads_to_no_provider_names_both_places_it_looked(
    sandbox: Any, tmp_path: Path
) -> None:
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True) as gateway:
        origin = gateway.removesuffix("/mcp")
        done = await asyncio.to_thread(
            run_cli, "connect", f"{origin}/elsewhere", "--no-browser", "--cache-root", str(tmp_path)
        )
    assert done.returncode == 69
    assert len(done.stderr.strip().splitlines()) == 1
    assert f"{origin}/.well-known/oauth-protected-resource/elsewhere" in done.stderr
    assert f"{origin}/.well-known/oauth-protected-resource. " in done.stderr  # then the root
    assert not (tmp_path / "clients").exists()
