"""The hosted gateway's public assets: the icon, the "Connect an AI app" page, llms.txt.

Contract: pure functions of the public MCP URL, the provider URL and ``PageFacts`` (what
is true of this deployment), no I/O.

- ``ICON_SVG``: the scalable icon named by ``serverInfo.icons`` and the ``Link`` header.
- ``PageFacts``: ``sign_in`` (the provider's AS offers the code + PKCE flow an OAuth MCP
  client uses; only then do the pages say the app sends the person to sign in),
  ``demo_token`` (the demo's sandbox token for header-only clients; never set elsewhere)
  and ``local.cache_root`` (a non-default credential cache for the terminal lines).
- ``connect_page``: one primary payload, the MCP URL, then exact copy-paste setup for
  Claude Code, Codex, Claude Desktop (``connect``, then ``client-config --client
  claude-desktop``, which prints its entry with this install's absolute paths),
  remote-connector apps (ChatGPT, Claude.ai, ...) and the terminal path (``pdpp-gateway
  connect`` then ``stdio``), and a pointer to ``llms.txt``. Every
  command has a copy button; long lines wrap, so a phone never scrolls sideways. Every
  interpolated value is HTML-escaped.
- ``llms_txt``: the same facts for an agent, plus one line per read tool.
- Every URL either names is absolute and hangs off the public base (the MCP URL without
  ``/mcp``, a proxy's path prefix included); the metadata URL is ``public_urls.metadata_url``.

Neither ever asks for, explains or shows owner credentials: an MCP setup that pasted an
owner bearer would hand an app the person's whole store, which is exactly what a
scoped grant exists to prevent. Neither mentions tool-surface variants: there is one
surface, the same for every client.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Final

from pdpp_gateway.hosted.public_urls import metadata_url
from pdpp_gateway.tools.specs import TOOLS

ICON_SVG: Final = b"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" role="img" aria-label="PDPP gateway">
<rect width="64" height="64" rx="14" fill="#1f3a5f"/>
<path d="M32 10 50 17v13c0 12-7.6 20.6-18 24-10.4-3.4-18-12-18-24V17z" fill="#e8f0fa"/>
<circle cx="32" cy="29" r="6" fill="#1f3a5f"/>
<path d="M29.5 33h5l1.5 11h-8z" fill="#1f3a5f"/>
</svg>
"""

TOOL_LINES: Final = tuple((tool.name, tool.summary) for tool in TOOLS)

_STYLE: Final = """
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1b2430}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.1rem;margin-top:1.8rem}
.primary{background:#eef4fb;border:1px solid #c9d9ec;border-radius:10px;padding:1rem 1.2rem}
#mcp-url{font-size:1.15rem;font-weight:600;overflow-wrap:anywhere}
.cmd{display:flex;gap:.5rem;align-items:flex-start;margin:.6rem 0}
pre{flex:1;min-width:0;margin:0;background:#f5f6f8;border-radius:8px;padding:.7rem 1rem;
white-space:pre-wrap;overflow-wrap:anywhere}
button.copy{font:inherit;font-size:.85rem;padding:.45rem .7rem;border-radius:6px;border:1px solid #9aa7b8;
background:#fff;cursor:pointer}
.note{color:#4a5565;font-size:.92rem}
"""

_COPY_SCRIPT: Final = """<script>
for (const b of document.querySelectorAll("button.copy")) b.addEventListener("click", () =>
  navigator.clipboard.writeText(b.dataset.copy).then(() => {
    b.textContent = "Copied"; setTimeout(() => { b.textContent = "Copy"; }, 1500); }));
</script>"""


@dataclass(frozen=True, slots=True)
class PageFacts:
    sign_in: bool = False
    demo_token: str | None = None
    cache_root: str | None = None
    server_name: str = "pdpp"  # the name the client commands give this server


def reachable_only_here(mcp_url: str) -> bool:
    """Whether the URL's host is loopback or private: no cloud app (ChatGPT, Claude.ai) can
    reach it, only apps on this machine or network."""
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(mcp_url).hostname or "").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


_CLOUD_NEEDS_PUBLIC = (
    "ChatGPT, Claude.ai and other cloud apps connect from the internet, so they need a public HTTPS URL "
    "for this gateway; this one is reachable only from this machine or network. Deploy the gateway on "
    "the provider's public origin (the README's Hosted section), or expose this port through an HTTPS "
    "tunnel and give the app the tunnel's https URL ending in /mcp."
)


def _base(mcp_url: str) -> str:
    return mcp_url.removesuffix("/mcp")


def _block(command: str) -> str:
    return (
        f'<div class="cmd"><pre><code>{escape(command)}</code></pre>'
        f'<button type="button" class="copy" data-copy="{escape(command)}">Copy</button></div>'
    )


def _terminal(provider_url: str, facts: PageFacts) -> tuple[str, str]:
    root = f" --cache-root {facts.cache_root}" if facts.cache_root else ""
    return (
        f"pdpp-gateway connect {provider_url}{root}",
        f"pdpp-gateway stdio --provider-url {provider_url}{root}",
    )


def _desktop_entry(provider_url: str, facts: PageFacts) -> str:
    """The command that prints Claude Desktop's exact entry (this install's absolute paths)."""
    root = f" --cache-root {facts.cache_root}" if facts.cache_root else ""
    return f"pdpp-gateway client-config --client claude-desktop --provider-url {provider_url}{root}"


def connect_page(mcp_url: str, provider_url: str, facts: PageFacts = PageFacts()) -> str:
    url = escape(mcp_url)
    name = facts.server_name
    local = reachable_only_here(mcp_url)
    paste = (
        "Paste this MCP server URL into an AI app on this machine:"
        if local
        else ("Paste this MCP server URL into your AI app:")
    )
    if local:
        remote = f'<p class="note">{escape(_CLOUD_NEEDS_PUBLIC)}</p>'
    else:
        remote = f"<p>Add a custom connector (a remote MCP server) with this URL:</p>\n{_block(mcp_url)}"
    llms, icon = (escape(f"{_base(mcp_url)}/{name}") for name in ("llms.txt", "icon.svg"))
    connect, stdio = _terminal(provider_url, facts)
    if facts.sign_in:
        sign_in = "<p>The app sends you to the provider to sign in and approve what it may read.</p>"
    else:
        sign_in = (
            '<p class="note">This provider does not publish an OAuth sign-in for apps yet: use the terminal '
            "path below, or a client that sends a scoped token in a header.</p>"
        )
    header = ""
    if facts.demo_token:
        value = f"Authorization: Bearer {facts.demo_token}"
        header = f"""<h2>Clients that only send a header (this demo)</h2>
<p class="note">A sandbox grant over every stream, for clients without OAuth sign-in.</p>
{_block(value)}
{_block(f'claude mcp add --transport http {name} {mcp_url} --header "{value}"')}
"""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Connect an AI app</title><link rel="icon" href="{icon}" type="image/svg+xml">
<style>{_STYLE}</style></head>
<body>
<h1>Connect an AI app</h1>
<p class="note">Each app gets its own scoped, read-only grant that you approve and can revoke.</p>
<div class="primary"><p>{paste}</p>
<p><code id="mcp-url">{url}</code></p>
<button type="button" class="copy" data-copy="{url}">Copy</button></div>
<h2>Claude Code</h2>
{_block(f"claude mcp add --transport http {name} {mcp_url}")}
<h2>Codex</h2>
{_block(f"codex mcp add {name} --url {mcp_url}")}
<h2>Claude Desktop</h2>
<p>Claude Desktop runs the gateway on this computer over stdio: approve a grant once, then print the
exact entry for its <code>claude_desktop_config.json</code> (Settings &gt; Developer &gt; Edit Config),
which starts the gateway by its full path:</p>
{_block(connect)}
{_block(_desktop_entry(provider_url, facts))}
<h2>ChatGPT, Claude.ai and other remote MCP clients</h2>
{remote}
{sign_in}
{header}<h2>From a terminal</h2>
<p>Approve a grant once in your browser, then run the gateway locally over stdio:</p>
{_block(connect)}
{_block(stdio)}
<h2>For agents</h2>
<p>A plain-text summary of how to connect lives at <a href="{llms}">{llms}</a>.</p>
{_COPY_SCRIPT}
</body></html>
"""


def llms_txt(mcp_url: str, provider_url: str, facts: PageFacts = PageFacts()) -> str:
    tools = "\n".join(f"- `{name}`: {what}" for name, what in TOOL_LINES)
    connect, stdio = _terminal(provider_url, facts)
    if facts.sign_in:
        auth = (
            "a scoped client bearer token from this provider's OAuth flow (authorization code + PKCE; an\n"
            "  OAuth MCP client signs the person in on first use)"
        )
    else:
        auth = "a scoped client bearer token from this provider (no OAuth sign-in for apps is published yet)"
    demo = (
        f"\n- Demo only: header-only clients may send `Authorization: Bearer {facts.demo_token}` (a sandbox grant)."
        if facts.demo_token
        else ""
    )
    name = facts.server_name
    remote = (
        f"- Cloud apps (ChatGPT, Claude.ai, ...): {_CLOUD_NEEDS_PUBLIC}"
        if reachable_only_here(mcp_url)
        else "- Remote-connector apps (ChatGPT, Claude.ai, ...): add a custom connector with the URL above."
    )
    return f"""# PDPP gateway

> Read-only, grant-scoped MCP access to a person's data held by this PDPP provider.

## Endpoint

- MCP server URL: {mcp_url}
- Transport: Streamable HTTP; POST one JSON-RPC message, get one JSON response (stateless, no sessions).
- Auth: {auth}. Protected-resource metadata:
  {metadata_url(_base(mcp_url))}{demo}

## Connect

- Claude Code: `claude mcp add --transport http {name} {mcp_url}`
- Codex: `codex mcp add {name} --url {mcp_url}`
{remote}
- From a terminal: `{connect}`, then `{stdio}`.

## Tools (all read-only)

{tools}
"""
