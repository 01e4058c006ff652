"""A person at a browser, for OAuth tests: opens the consent page, reads the form, submits it.

``ConsentBrowser`` keeps cookies like a browser (the consent form's CSRF cookie) and never
follows redirects by itself, so a test sees where the authorization server sends the
person. ``ConsentForm`` is what the page shows: the action, hidden fields, the stream
checkboxes (ticked or not) and the decision buttons.
"""

from __future__ import annotations

import ssl as ssl_module
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

import aiohttp


@dataclass
class ConsentForm:
    url: str
    action: str = ""
    hidden: dict[str, str] = field(default_factory=dict)
    streams: dict[str, bool] = field(default_factory=dict)  # checkbox value -> ticked
    buttons: list[str] = field(default_factory=list)
    text: str = ""


class _FormParser(HTMLParser):
    def __init__(self, form: ConsentForm) -> None:
        super().__init__()
        self.form = form

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.form.action = urljoin(self.form.url, values.get("action", ""))
        elif tag == "input" and values.get("type") == "hidden":
            self.form.hidden[values["name"]] = values.get("value", "")
        elif tag == "input" and values.get("type") == "checkbox":
            self.form.streams[values["value"]] = "checked" in values
        elif tag == "button" and values.get("name") == "decision":
            self.form.buttons.append(values.get("value", ""))


class ConsentBrowser:
    def __init__(self, ssl: ssl_module.SSLContext | None = None) -> None:
        connector = aiohttp.TCPConnector(ssl=ssl) if ssl is not None else None
        self.session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True), connector=connector)

    async def __aenter__(self) -> ConsentBrowser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()

    async def open(self, url: str) -> tuple[int, ConsentForm, str | None]:
        """GET the authorize URL: (status, the parsed page, the redirect Location if any)."""
        async with self.session.get(url, allow_redirects=False) as response:
            text = await response.text()
            form = ConsentForm(url=str(response.url), text=text)
            _FormParser(form).feed(text)
            return response.status, form, response.headers.get("Location")

    async def submit(
        self, form: ConsentForm, decision: str = "approve", streams: list[str] | None = None
    ) -> tuple[int, str | None]:
        """Post the form as a person would: ticked boxes (or ``streams``) and one button."""
        chosen = [v for v, ticked in form.streams.items() if ticked] if streams is None else streams
        data = [*form.hidden.items(), *(("stream", v) for v in chosen), ("decision", decision)]
        async with self.session.post(form.action, data=data, allow_redirects=False) as response:
            await response.read()
            return response.status, response.headers.get("Location")

    async def approve(self, url: str, streams: list[str] | None = None) -> str:
        """Open, approve, and return where the person is sent (the app's redirect URI)."""
        status, form, _ = await self.open(url)
        assert status == 200, form.text[:300]
        status, location = await self.submit(form, "approve", streams)
        assert status == 302, status
        assert location
        return location
