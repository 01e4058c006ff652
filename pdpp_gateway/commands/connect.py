"""``pdpp-gateway connect PROVIDER_URL``: approve a scoped grant in the browser and cache it.

Contract:

- ``connect URL``: URL is any URL a person has for the provider: its own, or a gateway's
  MCP endpoint on any origin and path (``local.oauth_flow.locate``, which says on stderr which
  provider it found). Then it discovers the provider's authorization server (``local.oauth_flow.discover``),
  registers a public client, opens the consent page in the browser (``--no-browser``:
  prints the URL only) with a loopback redirect, waits at most ``--timeout`` seconds
  with a countdown on stderr, exchanges the code (PKCE S256, ``state`` checked), asks the
  RS what the token is, and writes the credential cache ``stdio`` and the terminal
  commands read (``credentials.write_credential``: 0600 file, atomic). ``--connector``
  and ``--stream`` narrow the request; without them the consent page offers everything.
- A provider keeps one grant per connector (the reference AS issues one client grant per
  source): ``connect URL --connector gmail`` then ``--connector github`` caches both, and
  connecting the same connector again replaces only that grant (``local.grant_cache``).
  ``--connector`` repeats: ``connect URL --connector gmail --connector github`` asks for each
  in turn, one consent each.
- An owner token is never cached (by the token answer's ``pdpp_token_kind`` or by the
  RS's own answer): exit 77. Nor is a multi-source package token (``grant_package_id``,
  what the reference issues when nothing narrows the request): 77, naming ``--connector``.
- ``connect --refresh URL``: a new access token from the cached refresh token, no
  browser (``renewal.renew``, what every local reader uses too). What the authorization
  server issued is written before the RS is asked about it, so an RS that cannot be
  reached leaves a renewed, usable cache and says so (exit 0 with a notice: the stdio
  door checks the token before its first read).
- ``connect --list``: one line per cached grant (provider, connector, grant, connections,
  streams, expiry, whether it can refresh), never a token; a cache file or folder that is
  not safe (``local.cache_files``: a link, a FIFO, another user's, not mode 600) is refused on
  stderr with its fix and the exit is 78, its content never shown.
- ``--list``, ``--forget`` and ``--refresh`` read a ``.pdpp`` in the working directory only
  with ``--trust-cwd-cache`` (or ``PDPP_TRUST_CWD_CACHE=1``: ``local.cache_root``); a new grant is
  never written there. ``--forget URL`` deletes the
  provider's grants and ``--refresh URL`` renews them; with ``--connector`` only that
  connector's, and either says how many.
- Exit codes (README "Connect"): 0, 64 usage, 65 registration refused, 66 consent denied,
  67 timed out, 68 state mismatch, 69 provider or AS unreachable or unusable, 70 the AS
  refused the request or the token exchange, 77 owner credential refused, 78 nothing
  cached (``--forget``, ``--refresh``) or a cache file or folder refused as unsafe. Every failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HELP = "Approve a scoped, read-only grant in the browser and cache it for `stdio` (OAuth code + PKCE)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "provider_url",
        nargs="?",
        help="the provider (RS) URL, e.g. https://pdpp.example.com, or a gateway's MCP endpoint URL",
    )
    parser.add_argument(
        "--cache-root",
        help="credential cache root (env PDPP_CACHE_ROOT; default ~/.local/share/pdpp-gateway, or "
        "$XDG_DATA_HOME/pdpp-gateway)",
    )
    from pdpp_gateway.commands.local_credential import add_trust_cwd_argument

    add_trust_cwd_argument(parser)
    parser.add_argument(
        "--connector",
        action="append",
        metavar="ID",
        help="ask for one connector's grant (its source id or key); repeat it to connect several, one "
        "consent each. With --forget or --refresh: only that connector's grant.",
    )
    parser.add_argument(
        "--stream",
        action="append",
        default=[],
        help="ask for this stream only (repeatable; needs exactly one --connector)",
    )
    parser.add_argument(
        "--purpose",
        default="Read-only access for an AI app through pdpp-gateway",
        help="purpose shown on consent",
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="print the consent URL instead of opening it"
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for approval (default 300)"
    )
    actions = parser.add_mutually_exclusive_group()
    actions.add_argument("--list", action="store_true", help="show cached grants (never their tokens)")
    actions.add_argument(
        "--forget", action="store_true", help="delete the grants cached for PROVIDER_URL (or --connector's)"
    )
    actions.add_argument(
        "--refresh",
        action="store_true",
        help="renew the grants cached for PROVIDER_URL (or --connector's) with their refresh tokens",
    )


def say(message: str) -> None:
    print(f"pdpp-gateway connect: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from pdpp_gateway.local.cache_root import cache_root as reading_root
    from pdpp_gateway.local.cache_root import cached_providers, reading_roots, writing_root
    from pdpp_gateway.local.credentials import normalize_provider_url
    from pdpp_gateway.local.oauth_flow import ConnectError
    from pdpp_gateway.local_verdict import CredentialError
    from pdpp_gateway.refusals import ExitCode

    if args.list:
        return _list(reading_roots(args.cache_root, trust_cwd=args.trust_cwd_cache))
    if not args.provider_url:
        say("missing PROVIDER_URL. Example: pdpp-gateway connect https://pdpp.example.com")
        return ExitCode.USAGE
    connectors: list[str] = list(dict.fromkeys(args.connector or []))
    if args.stream and len(connectors) != 1:
        say(
            "--stream needs exactly one --connector (the connector whose stream it is); "
            "see `pdpp-gateway connect --help`."
        )
        return ExitCode.USAGE
    if not 1 <= args.timeout <= 3600:
        say("--timeout must be between 1 and 3600 seconds.")
        return ExitCode.USAGE
    try:
        if args.forget or args.refresh:  # what is cached, found without asking the provider
            provider_url = normalize_provider_url(args.provider_url)
            root = reading_root(args.cache_root, provider_url=provider_url, trust_cwd=args.trust_cwd_cache)
            if args.forget:
                return _forget(provider_url, root, connectors)
            return asyncio.run(_refresh(provider_url, root, connectors))
        provider_url = asyncio.run(_locate(args.provider_url))
        cache_root = writing_root(args.cache_root)
        asked: list[str | None] = [*connectors] or [None]
        for connector in asked:
            asyncio.run(_connect(args, provider_url, cache_root, connector))
    except (ConnectError, CredentialError) as error:
        say(error.message)
        return error.exit_code
    from pdpp_gateway.commands.client_config import entries, server_args, server_names

    # An MCP client spawns stdio from a directory of its own, with a plain PATH: the entry
    # names the gateway absolutely (and the cache, when it is not the per-user default).
    # Its name is the one client-config gives it among the providers cached beside it, so
    # pasting a second provider's entry never replaces the first's.
    args_for_stdio = server_args(provider_url, cache_root)
    cached = [url for url, _ in cached_providers([cache_root])]
    urls = cached if provider_url in cached else [*cached, provider_url]
    print(f"Next: pdpp-gateway {shlex.join(args_for_stdio)}")
    print("MCP client entries for this install (`pdpp-gateway client-config` prints them again):\n")
    print(entries({server_names(urls)[urls.index(provider_url)]: args_for_stdio}))
    return 0


async def _locate(url: str) -> str:
    """The provider ``url`` leads to (``local.oauth_flow.locate``), said on stderr when it is not
    ``url`` itself (a gateway's MCP endpoint, on whatever origin and path)."""
    import aiohttp

    from pdpp_gateway.local import oauth_flow as flow
    from pdpp_gateway.local.credentials import normalize_url

    async with aiohttp.ClientSession() as session:
        located = await flow.locate(session, url)
    if located.provider_url != normalize_url(url):
        say(
            f"{url} leads to the provider {located.provider_url} (named in {located.metadata_url}); connecting to it"
        )
    return located.provider_url


async def _connect(
    args: argparse.Namespace, provider_url: str, cache_root: Path, connector: str | None
) -> None:
    """One consent, for ``connector``'s grant (``None``: whatever the page offers), cached."""
    import secrets
    import webbrowser

    import aiohttp

    from pdpp_gateway.local import oauth_flow as flow
    from pdpp_gateway.local.loopback import LoopbackReceiver

    async with aiohttp.ClientSession() as session:
        provider = await flow.discover(session, provider_url)
        state = secrets.token_urlsafe(24)
        async with LoopbackReceiver(state, provider) as receiver:
            client = await flow.register(session, provider, receiver.redirect_uri)
            verifier, challenge = flow.pkce_pair()
            narrowing = flow.requested_details(connector, args.stream, args.purpose)
            url = flow.authorization_url(
                provider, client["client_id"], receiver.redirect_uri, state, challenge, narrowing
            )
            what = f"{connector} at {provider_url}" if connector else provider_url
            print(f"Open this URL to approve read access to {what}:\n  {url}", file=sys.stderr, flush=True)
            if not args.no_browser:
                webbrowser.open(url)
            code = await _wait(receiver, args.timeout)
        answer = await flow.exchange_code(
            session, provider, client["client_id"], code, verifier, receiver.redirect_uri
        )
    unchecked = await _refuse_owner(provider_url, answer)
    path = _cache(cache_root, provider, client, answer, connector)
    print(_summary(provider_url, answer, path, connector))
    if unchecked:
        say(
            f"the new token could not be checked with {provider_url} ({unchecked}); it is cached and "
            "will be checked before its first read."
        )


async def _wait(receiver: Any, seconds: float) -> str:
    """The code, with a countdown on stderr (every second on a terminal, else every 30 s)."""
    import asyncio
    import time

    from pdpp_gateway.local.oauth_flow import ConnectError
    from pdpp_gateway.refusals import ExitCode

    deadline = time.monotonic() + seconds
    tty = sys.stderr.isatty()
    next_line = 0.0  # off a terminal: a line now, then one every 30 s
    waiter = asyncio.ensure_future(receiver.code())
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectError(
                    f"no approval arrived within {seconds:.0f} s; nothing was cached. Run the command again "
                    "(--timeout gives more time).",
                    ExitCode.TIMEOUT,
                )
            minutes, rest = divmod(int(left + 0.999), 60)
            line = f"Waiting for approval in the browser: {minutes}:{rest:02d} left (Ctrl-C to stop)"
            if tty:
                print(f"\r{line}", end="", file=sys.stderr, flush=True)
            elif time.monotonic() >= next_line:
                print(line, file=sys.stderr, flush=True)
                next_line = time.monotonic() + 30
            done, _ = await asyncio.wait({waiter}, timeout=min(1.0, left))
            if done:
                return str(waiter.result())
    finally:
        if tty:
            print(file=sys.stderr, flush=True)
        waiter.cancel()


async def _refuse_owner(provider_url: str, answer: dict[str, Any]) -> str | None:
    """No owner (or package) token reaches the cache: by the AS's label, then by the RS's
    answer. Returns why the RS could not be asked (the token is then checked before its
    first read), else ``None``."""
    from pdpp_gateway.caller import BearerFacts, Rejection
    from pdpp_gateway.local.oauth_flow import ConnectError
    from pdpp_gateway.local_verdict import REFUSED_KINDS, CredentialRejected, judge, refused
    from pdpp_gateway.refusals import ExitCode
    from pdpp_gateway.rs.client import RsClient
    from pdpp_gateway.rs.token_kind import KindUnknown, verify_at_start

    kind = str(answer.get("pdpp_token_kind", "")).lower()
    if kind == "mcp_package" or answer.get("grant_package_id"):
        one_source = f"run `pdpp-gateway connect {provider_url} --connector ID` (one source per grant)"
        raise refused(Rejection("mcp_package_token_refused"), provider_url, connect=one_source)
    if kind in REFUSED_KINDS:
        judge(BearerFacts(kind=kind), provider_url)  # raises the table's refusal
    try:
        async with RsClient(provider_url) as rs:
            await verify_at_start(rs.bind(answer["access_token"]), provider_url)
    except CredentialRejected:
        raise ConnectError(
            f"{provider_url} refused the token its authorization server just issued; nothing was cached. "
            "Run the command again, or ask the provider.",
            ExitCode.TOKEN_REFUSED,
        ) from None
    except KindUnknown as unknown:
        return unknown.reason
    return None


def _cache(
    cache_root: Path, provider: Any, client: dict[str, Any], answer: dict[str, Any], connector: str | None
) -> Path:
    from pdpp_gateway.local.credentials import write_credential
    from pdpp_gateway.local.renewal import expiry_of

    now = datetime.now(UTC)
    extra: dict[str, Any] = {
        "token_endpoint": provider.token_endpoint,
        "issued_at": now.isoformat(timespec="milliseconds"),
    }
    if isinstance(answer.get("refresh_token"), str):
        extra["refresh_token"] = answer["refresh_token"]
    details = answer.get("authorization_details")
    return write_credential(
        cache_root,
        provider.url,
        answer["access_token"],
        grant_id=answer.get("grant_id") if isinstance(answer.get("grant_id"), str) else None,
        expires_at=expiry_of(answer, now),
        authorization_server=provider.issuer,
        client=client,
        extra=extra,
        authorization_details=details if isinstance(details, list) else None,
        connector=connector,
    )


async def _refresh(provider_url: str, cache_root: Path, connectors: list[str]) -> int:
    """Renew the provider's grants (or ``connectors``'), each written as soon as the AS
    answers; then each new token is checked with the RS. Says how many were renewed."""
    from pdpp_gateway.local.credentials import load_credentials
    from pdpp_gateway.local.oauth_flow import ConnectError
    from pdpp_gateway.local.renewal import RenewalError, discard, renew
    from pdpp_gateway.local_verdict import CredentialError

    grants = load_credentials(provider_url, cache_root, connectors=connectors)
    failed: RenewalError | None = None
    renewed = 0
    for grant in grants:
        name = f"the {grant.connector} grant" if grant.connector else "the grant"
        try:
            credential = await renew(provider_url, cache_root, grant.connector, stale=None)
        except RenewalError as error:
            say(f"{name}: {error.message}")
            failed = failed or error
            continue
        renewed += 1
        try:
            unchecked = await _refuse_owner(provider_url, {"access_token": credential.access_token})
        except (ConnectError, CredentialError):
            discard(provider_url, cache_root, grant.connector)  # never keep an owner token
            raise
        print(f"Renewed {name} for {provider_url} ({credential.cache_file}).")
        if unchecked:
            say(
                f"the renewed token could not be checked with {provider_url} ({unchecked}); it is saved "
                "and will be checked before its first read."
            )
    if len(grants) > 1:
        print(f"Renewed {renewed} of {len(grants)} grants for {provider_url}.")
    return failed.exit_code if failed is not None else 0


def _grant_lines(details: object) -> tuple[list[str], list[str]]:
    streams: list[str] = []
    connections: list[str] = []
    for entry in details if isinstance(details, list) else ():
        for stream in entry.get("streams", ()) if isinstance(entry, dict) else ():
            if isinstance(stream, dict) and isinstance(stream.get("name"), str):
                streams.append(stream["name"])
                connections.extend(i for i in stream.get("instance_ids", ()) if isinstance(i, str))
    return list(dict.fromkeys(streams)), list(dict.fromkeys(connections))


def _summary(provider_url: str, answer: dict[str, Any], path: Path, connector: str | None) -> str:
    from pdpp_gateway.local.renewal import expiry_of

    streams, connections = _grant_lines(answer.get("authorization_details"))
    expiry = expiry_of(answer, datetime.now(UTC))
    renew = (
        "renewed with its refresh token before it expires"
        if answer.get("refresh_token")
        else f"run `pdpp-gateway connect {provider_url}` again after it expires"
    )
    which = f" ({connector})" if connector else ""
    return (
        f"Connected to {provider_url}{which}: grant {answer.get('grant_id') or '(no id)'}"
        f"{', streams ' + ', '.join(streams) if streams else ''}"
        f"{' on ' + ', '.join(connections) if connections else ''}.\n"
        f"Cached in {path} (mode 600); expires {expiry or 'when the provider says'}, {renew}."
    )


def _list(roots: list[Path]) -> int:
    """One line per grant; an unsafe file or folder is refused on stderr (exit 78), the rest listed."""
    from pdpp_gateway.local import cache_files
    from pdpp_gateway.local.grant_cache import label, read_payload, sections
    from pdpp_gateway.local_verdict import CredentialError

    refused: CredentialError | None = None
    files: list[Path] = []
    for root in roots:
        try:
            files += cache_files.listed(root / "clients")
        except CredentialError as error:
            say(error.message)
            refused = error
    if not files and refused is None:
        where = " or ".join(str(root) for root in roots)
        print(f"No grants cached in {where}. Run `pdpp-gateway connect PROVIDER_URL`.")
        return 0
    for path in files:
        try:
            payload = read_payload(path)
        except CredentialError as error:
            say(error.message)
            refused = error
            continue
        if payload is None:
            print(f"{path}: unreadable")
            continue
        for section in sections(payload):
            found = section.get("credential")
            credential: dict[str, Any] = found if isinstance(found, dict) else {}
            streams, connections = _grant_lines(section.get("authorization_details"))
            print(
                f"{payload.get('provider_url', path.stem)}  connector={label(section)}  "
                f"grant={credential.get('grant_id') or '-'}  "
                f"connections={','.join(connections) or '-'}  streams={','.join(streams) or '-'}  "
                f"expires={credential.get('expires_at') or '-'}  "
                f"refresh={'yes' if credential.get('refresh_token') else 'no'}"
            )
    return refused.exit_code if refused is not None else 0


def _forget(provider_url: str, cache_root: Path, connectors: list[str]) -> int:
    from pdpp_gateway.local.credentials import cache_file_for
    from pdpp_gateway.local.grant_cache import (
        is_for,
        label,
        locked,
        read_payload,
        sections,
        write_grants,
    )
    from pdpp_gateway.refusals import ExitCode

    path = cache_file_for(provider_url, cache_root)
    with locked(path):
        payload = read_payload(path)
        grants = sections(payload) if payload is not None else []
        gone = [g for g in grants if not connectors or any(is_for(g, c) for c in connectors)]
        if not gone:
            what = f"no grant for {', '.join(connectors)}" if connectors else "nothing"
            say(f"{what} cached for {provider_url} in {cache_root}; nothing to forget.")
            return ExitCode.NO_CREDENTIAL
        kept = [g for g in grants if all(g is not f for f in gone)]
        write_grants(path, provider_url, kept)
    names = ", ".join(label(g) for g in gone)
    count = f"{len(gone)} grant{'s' if len(gone) != 1 else ''} ({names})"
    print(
        f"Forgot {count} for {provider_url} ({path}; {len(kept)} left). "
        "Revoke them at the provider too if you no longer trust them."
    )
    return 0
