"""The RFC 8252 loopback redirect of ``pdpp-gateway connect``.

Contract: ``LoopbackReceiver`` listens on ``127.0.0.1`` at an ephemeral port; it answers the
browser and hands over ``code`` once ``state`` matched and ``iss`` named the server the
sign-in started with (RFC 9207: required where its metadata says
``authorization_response_iss_parameter_supported``, checked whenever present). Every other
answer finishes the sign-in with a ``ConnectError`` naming what to do; the page the
browser shows says the same in a sentence, never a token.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Final

from aiohttp import web

from pdpp_gateway.local.oauth_flow import ConnectError, Provider
from pdpp_gateway.refusals import ExitCode

_DONE_PAGE: Final = (
    "<!doctype html><meta charset=utf-8><meta name=viewport content='width=device-width,initial-scale=1'>"
    "<title>pdpp-gateway</title><body style='font:16px system-ui;margin:2rem'><h1>{title}</h1><p>{text}</p>"
)


class LoopbackReceiver:
    """``async with LoopbackReceiver(state, provider) as receiver``: ``receiver.redirect_uri``,
    ``await receiver.code()``. A redirect whose ``iss`` names another server, or that lacks
    it where the provider promised it (RFC 9207), is refused like a wrong ``state``."""

    def __init__(self, state: str, provider: Provider) -> None:
        self._state = state
        self._issuer = provider.issuer
        self._iss_required = provider.names_itself
        self._result: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._runner: web.AppRunner | None = None
        self.redirect_uri = ""

    async def __aenter__(self) -> LoopbackReceiver:
        app = web.Application()
        app.router.add_get("/callback", self._callback)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def code(self) -> str:
        return await asyncio.shield(self._result)

    def _finish(self, outcome: str | ConnectError) -> None:
        if self._result.done():
            return
        if isinstance(outcome, ConnectError):
            self._result.set_exception(outcome)
        else:
            self._result.set_result(outcome)

    async def _callback(self, request: web.Request) -> web.Response:
        query = request.query
        if self._result.done():
            return _page("Already answered", "This sign-in already finished; you can close this tab.", 400)
        if not secrets.compare_digest(query.get("state", ""), self._state):
            self._finish(
                ConnectError(
                    "the browser came back with a state that does not match this sign-in (a stale tab or a "
                    "forged redirect); nothing was cached. Run `pdpp-gateway connect` again.",
                    ExitCode.STATE_MISMATCH,
                )
            )
            return _page("Sign-in refused", "This answer does not belong to the running sign-in.", 400)
        iss = query.get("iss")
        if (iss is None and self._iss_required) or (iss is not None and iss.rstrip("/") != self._issuer):
            self._finish(
                ConnectError(
                    f"the browser came back from {(iss or 'an unnamed server')[:100]!r}, not the authorization server "
                    f"{self._issuer} this sign-in started with (RFC 9207); nothing was cached. Run "
                    "`pdpp-gateway connect` again.",
                    ExitCode.STATE_MISMATCH,
                )
            )
            return _page("Sign-in refused", "This answer came from another authorization server.", 400)
        error = query.get("error")
        if error == "access_denied":
            self._finish(
                ConnectError("access was denied on the consent page; nothing was cached.", ExitCode.DENIED)
            )
            return _page("Access denied", "Nothing was shared. You can close this tab.")
        if error or not query.get("code"):
            detail = ": ".join(p for p in (error or "no code", query.get("error_description", "")[:200]) if p)
            self._finish(
                ConnectError(
                    f"the authorization server refused the request ({detail}).", ExitCode.TOKEN_REFUSED
                )
            )
            return _page("Sign-in failed", "The provider refused the request. See the terminal.", 400)
        self._finish(query["code"])
        return _page("Connected", "pdpp-gateway received the grant. You can close this tab.")


def _page(title: str, text: str, status: int = 200) -> web.Response:
    return web.Response(
        text=_DONE_PAGE.format(title=title, text=text),
        status=status,
        content_type="text/html",
        headers={"Cache-Control": "no-store"},
    )
