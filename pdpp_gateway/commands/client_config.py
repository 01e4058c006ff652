"""``pdpp-gateway client-config``: the exact MCP client entry that runs this install's stdio server.

Contract: prints, for ``--client`` (``claude-desktop``, ``claude-code``, ``codex``,
``cursor``, ``vscode``; default: all of them), the entry to paste: JSON for the clients
configured by a file (which file, in a comment line before it), a command line for the
ones configured by a command. The entry starts the gateway by an absolute path (this
install's ``pdpp-gateway`` script, else its Python with ``-m pdpp_gateway``), so it works
from a client's own working directory with a plain ``PATH``. It names ``--provider-url``
(given, else every provider with a cached grant, one server each) and ``--cache-root``
only when the grants are not in the per-user directory the gateway finds by itself (a
``.pdpp`` in the working directory is read only with ``--trust-cwd-cache``, and its entry
names it by its absolute path). Exit 78 when no provider is given and none is cached, or
when a cache file or folder is unsafe (``local.cache_files``). ``connect`` prints the same after
connecting (``entries``, named as here among the providers cached beside it). Each
provider's entry has its own name, from its URL alone (``server_names``: host, port and path,
so two sandboxes on one host never share one, and a name never changes when a second provider
is cached); one that gives no answer
now (``local.provider_probe``, at most a few seconds for all) is printed all the same, with a
line on stderr saying so and what to run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Final

HELP = "Print the MCP client entry (Claude Desktop, Claude Code, Codex, Cursor, VS Code) for this install."
CLIENTS: Final = ("claude-desktop", "claude-code", "codex", "cursor", "vscode")
_FILES: Final = {
    "claude-desktop": "claude_desktop_config.json (Claude Desktop: Settings > Developer > Edit Config)",
    "cursor": "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
    "vscode": ".vscode/mcp.json in the workspace (or the user mcp.json: MCP: Open User Configuration)",
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--client", choices=CLIENTS, help="print only this client's entry (default: all)")
    parser.add_argument(
        "--provider-url", help="the provider to serve (default: every provider with a cached grant)"
    )
    parser.add_argument("--cache-root", help="credential cache root, if not the default one")
    from pdpp_gateway.commands.local_credential import add_trust_cwd_argument

    add_trust_cwd_argument(parser)


def launcher() -> list[str]:
    """The absolute command that runs this install's gateway."""
    script = Path(sys.executable).parent / "pdpp-gateway"
    if script.is_file():
        return [str(script)]
    return [str(Path(sys.executable).absolute()), "-m", "pdpp_gateway"]


def server_args(provider_url: str, cache_root: Path | None) -> list[str]:
    """The stdio server's arguments (``--cache-root`` only off the per-user default)."""
    from pdpp_gateway.local.cache_root import user_cache_root

    args = ["stdio", "--provider-url", provider_url]
    if cache_root is not None and cache_root != user_cache_root():
        args += ["--cache-root", str(cache_root)]
    return args


def entries(servers: dict[str, list[str]], client: str | None = None) -> str:
    """Every asked-for client's entry for ``servers`` (name -> the gateway's arguments)."""
    command, *prefix = launcher()
    blocks = []
    for name in CLIENTS if client is None else (client,):
        if name in ("claude-code", "codex"):
            lines = [
                f"{'claude' if name == 'claude-code' else 'codex'} mcp add {server} -- "
                + shlex.join([command, *prefix, *args])
                for server, args in servers.items()
            ]
            blocks.append(f"# {name}: run\n" + "\n".join(lines))
            continue
        key = "servers" if name == "vscode" else "mcpServers"
        extra = {"type": "stdio"} if name == "vscode" else {}
        document = {
            key: {
                server: {**extra, "command": command, "args": [*prefix, *args]}
                for server, args in servers.items()
            }
        }
        blocks.append(f"# {name}: add to {_FILES[name]}\n{json.dumps(document, indent=2)}")
    return "\n\n".join(blocks)


def run(args: argparse.Namespace) -> int:
    from pdpp_gateway.commands.local_credential import say
    from pdpp_gateway.local import cache_files
    from pdpp_gateway.local.cache_root import cache_root, cached_providers, reading_roots
    from pdpp_gateway.local.credentials import cache_file_for, normalize_provider_url
    from pdpp_gateway.local_verdict import CredentialError
    from pdpp_gateway.refusals import ExitCode

    try:
        if args.provider_url:
            url = normalize_provider_url(args.provider_url)
            root = cache_root(args.cache_root, provider_url=url, trust_cwd=args.trust_cwd_cache)
            cache_files.read(cache_file_for(url, root))  # an unsafe cache is refused here, not at start
            found = [(url, root)]
        else:
            found = cached_providers(reading_roots(args.cache_root, trust_cwd=args.trust_cwd_cache))
    except CredentialError as error:
        say(error.message)
        return error.exit_code
    if not found:
        say("no provider given and none has a cached grant; connect first: pdpp-gateway connect URL")
        return ExitCode.NO_CREDENTIAL
    servers = {
        name: server_args(url, root)
        for name, (url, root) in zip(server_names([url for url, _ in found]), found, strict=True)
    }
    _say_which_are_gone({url: name for name, (url, _) in zip(servers, found, strict=True)})
    print(entries(servers, args.client))
    return 0


def server_names(urls: list[str]) -> list[str]:
    """One entry name per provider, from its URL alone, so a name never changes when another
    provider is cached beside it: ``pdpp-`` and its host, port and path
    (``http://127.0.0.1:7665`` is ``pdpp-127-0-0-1-7665``, ``https://data.example.com`` is
    ``pdpp-data-example-com``), numbered if two still meet."""
    import re
    from urllib.parse import urlsplit

    names: list[str] = []
    for url in urls:
        parts = urlsplit(url)
        where = f"{parts.hostname or 'provider'}-{parts.port or ''}-{parts.path}"
        name = base = "pdpp-" + re.sub(r"[^A-Za-z0-9]+", "-", where).strip("-")
        count = 1
        while name in names:
            count += 1
            name = f"{base}-{count}"
        names.append(name)
    return names


def _say_which_are_gone(named: dict[str, str]) -> None:
    """A line on stderr for each provider that gives no answer now (``local.provider_probe``):
    its entry is printed all the same, with what to run."""
    import asyncio

    from pdpp_gateway.commands.local_credential import say
    from pdpp_gateway.local.provider_probe import PROBE_SECONDS, not_answering

    for url, why in asyncio.run(not_answering(list(named), PROBE_SECONDS)).items():
        say(
            f"{url} is not answering ({why}): the {named[url]} entry below fails until it is back. "
            f"Start it again, or drop its grant: pdpp-gateway connect {url} --forget"
        )
