"""Real grants from the sandbox's authorization server, cached as ``pdpp-gateway connect`` caches them.

``approve(sandbox_url, cache_root, connector)`` runs the whole OAuth flow over HTTP (discovery,
registration, the consent page as a person submits it, the code exchange with PKCE) for one
connector and writes the grant with ``connect``'s own writer, so a test starts from the cache
a person would have. ``refreshes(sandbox)`` counts the refresh-token exchanges the AS served.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp

from pdpp_gateway.commands.connect import _cache
from pdpp_gateway.local import oauth_flow as flow
from pdpp_gateway.sandbox.oauth_store import OAUTH
from tests.oauth_browser import ConsentBrowser

REDIRECT = "http://127.0.0.1:9/callback"  # never followed: the code is read off the redirect


async def approve(sandbox_url: str, cache_root: Path, connector: str | None) -> Path:
    """Approve every stream ``connector`` offers and cache the grant; the cache file's path."""
    async with aiohttp.ClientSession() as session:
        provider = await flow.discover(session, sandbox_url)
        client = await flow.register(session, provider, REDIRECT)
        verifier, challenge = flow.pkce_pair()
        state = secrets.token_urlsafe(8)
        narrowing = flow.requested_details(connector, [], "tests")
        url = flow.authorization_url(provider, client["client_id"], REDIRECT, state, challenge, narrowing)
        async with ConsentBrowser() as browser:
            location = await browser.approve(url)
        code = parse_qs(urlsplit(location).query)["code"][0]
        answer = await flow.exchange_code(session, provider, client["client_id"], code, verifier, REDIRECT)
    return _cache(cache_root, provider, client, answer, connector)


def refreshes(sandbox: Any) -> int:
    """How many refresh tokens the sandbox AS has taken (each renewal spends one)."""
    return len(sandbox.app[OAUTH].used_refresh)


def lapse_now(sandbox: Any) -> None:
    """Every access token the sandbox AS issued lapses now (their refresh tokens stay good)."""
    from dataclasses import replace

    store = sandbox.app[OAUTH]
    for token, principal in list(store.access.items()):
        store.access[token] = replace(principal, expires_at=0.0)
