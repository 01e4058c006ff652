"""A local package: several cached grants served as one by ``pdpp-gateway stdio``.

Contract:

- A package is named by repeating ``--provider-url`` (``stdio --provider-url A
  --provider-url B``) or by ``--package NAME``, which reads ``<cache-root>/packages/NAME.json``:
  ``{"providers": ["https://a.example", "https://b.example"]}`` (the provider URLs whose
  grants ``pdpp-gateway connect`` cached, in the package's member order; that order is the
  order merged search pages interleave in). ``package_providers`` returns the normalised
  URLs or raises ``PackageError`` (exit 64, one line naming the file and the fix): a NAME
  with characters outside ``[A-Za-z0-9._-]``, a missing or unreadable file, JSON that is
  not that shape, an invalid URL, a provider named twice, or both ways at once. One
  provider is the single-grant door, exactly as without a package.
- Each member reads with its OWN cached token and is checked at start like a single
  grant (``check_members``: every member at once, each through ``rs.start_probe``): the
  first refused member in package order decides the exit (77 owner or package token,
  78 missing, expired or rejected); a member the RS refused with 401 is checked again
  with renewal once the SDK is up (``recheck``); a member whose RS cannot be asked is
  served and verified before its first read, as the single-grant door does.
- ``MemberFacts`` (grant id, connection ids, stream names, connector key, display name)
  come from the member's own ``/v1/schema`` answer (``facts_from_schema``), else from the
  grant the credential cache recorded (``facts_from_cache``); a member with no known
  streams is taken to hold every stream (``*``), so searches still ask it.
- Standard library only: this runs before the SDK has loaded. Nothing here holds a token
  in a message or a repr.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pdpp_gateway.local import cache_files
from pdpp_gateway.local.credentials import Credential, normalize_provider_url
from pdpp_gateway.local.grant_cache import short_id
from pdpp_gateway.local_verdict import CredentialError, CredentialRejected
from pdpp_gateway.refusals import ExitCode

if TYPE_CHECKING:
    from pdpp_gateway.context import PackageMember, RsReader

PACKAGES_DIR: Final = "packages"
_NAME: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")
EVERY_STREAM: Final = ("*",)


class PackageError(CredentialError):
    """A package that cannot be read; ``message`` is one stderr-ready line (exit 64)."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_package", message)


def package_file(cache_root: Path, name: str) -> Path:
    return cache_root / PACKAGES_DIR / f"{name}.json"


def package_providers(urls: Sequence[str], name: str | None, cache_root: Path) -> list[str]:
    """The members' provider URLs, normalised, in package order."""
    if name is not None and urls:
        raise PackageError("pass either --package or --provider-url, not both.")
    raw = list(urls) if name is None else _read_package(cache_root, name)
    normalised: list[str] = []
    for url in raw:
        provider = normalize_provider_url(url)
        if provider in normalised:
            raise PackageError(f"{provider} is named twice; each provider's grant is one member.")
        normalised.append(provider)
    return normalised


def _read_package(cache_root: Path, name: str) -> list[str]:
    if not _NAME.fullmatch(name) or name.startswith("."):
        raise PackageError(
            f"invalid package name {name!r}: use letters, digits, '.', '_' or '-' (the file "
            f"{package_file(cache_root, 'NAME')} holds it)."
        )
    path = package_file(cache_root, name)
    example = '{"providers": ["https://a.example", "https://b.example"]}'
    data = cache_files.read(path, private=False)  # CacheRefused: a link, a FIFO, another owner, mode not 600
    if data is None:
        raise PackageError(f"no package {name!r}: create {path} holding {example}.")
    try:
        document = json.loads(data)
    except json.JSONDecodeError as error:
        raise PackageError(f"{path} is not JSON (line {error.lineno}); it should hold {example}.") from None
    except (UnicodeDecodeError, RecursionError) as error:
        raise PackageError(f"cannot read {path} ({error}); it should hold {example}.") from None
    providers = document.get("providers") if isinstance(document, dict) else None
    unknown = sorted(set(document) - {"providers"}) if isinstance(document, dict) else []
    if unknown:
        raise PackageError(f"{path} has unknown keys ({', '.join(unknown)}); it should hold {example}.")
    if (
        not isinstance(providers, list)
        or not providers
        or not all(isinstance(url, str) and url.strip() for url in providers)
    ):
        raise PackageError(f"{path} must hold exactly {example}: a non-empty list of provider URLs.")
    return providers


@dataclass(frozen=True, slots=True)
class MemberFacts:
    """What routing needs to know about one member grant."""

    grant_id: str | None
    connection_ids: tuple[str, ...]
    streams: tuple[str, ...]
    connector_key: str | None = None
    display_name: str | None = None

    def member(self, rs: RsReader, provider_url: str) -> PackageMember:
        """The package member reading through ``rs`` (bound to this member's own token)."""
        from pdpp_gateway.context import PackageMember

        return PackageMember(
            rs=rs,
            grant_id=self.grant_id,
            connection_ids=self.connection_ids,
            streams=self.streams,
            connector_key=self.connector_key,
            display_name=self.display_name,
            provider_url=provider_url,
        )


def facts_from_schema(document: Mapping[str, Any]) -> MemberFacts | None:
    """A member's facts from its ``/v1/schema`` answer (compact or full), ``None`` when it
    names no connector."""
    data = document.get("data")
    body: Mapping[str, Any] = data if isinstance(data, Mapping) else document
    connectors = [c for c in body.get("connectors") or () if isinstance(c, Mapping)]
    if not connectors:
        return None
    bearer = body.get("bearer")
    grant_id = bearer.get("grant_id") if isinstance(bearer, Mapping) else None
    connections: list[tuple[str, str | None]] = []
    streams: list[str] = []
    for connector in connectors:
        for entry in connector.get("granted_connections") or ():
            if isinstance(entry, Mapping) and isinstance(entry.get("connection_id"), str):
                name = entry.get("display_name")
                connections.append((entry["connection_id"], name if isinstance(name, str) else None))
        streams += [
            s["name"]
            for s in connector.get("streams") or ()
            if isinstance(s, Mapping) and _text(s.get("name"))
        ]
    keys = {_text(c.get("connector_key")) or _text(c.get("connector_id")) for c in connectors}
    return MemberFacts(
        grant_id=_text(grant_id),
        connection_ids=tuple(dict.fromkeys(cid for cid, _ in connections)),
        streams=tuple(dict.fromkeys(streams)) or EVERY_STREAM,
        connector_key=keys.pop() if len(keys) == 1 else None,
        display_name=connections[0][1] if len(connections) == 1 else None,
    )


def facts_from_cache(cache_file: Path, connector: str | None = None) -> MemberFacts:
    """A member's facts from the grant ``pdpp-gateway connect`` recorded (its grant for
    ``connector`` when the provider has several; every stream when it recorded none)."""
    from pdpp_gateway.local.grant_cache import is_for, read_payload, sections

    grants = sections(read_payload(cache_file) or {})
    found = [g for g in grants if is_for(g, connector)]
    section: Mapping[str, Any] = found[0] if found else {}
    credential = section.get("credential")
    grant_id = _text(credential.get("grant_id")) if isinstance(credential, Mapping) else None
    streams: list[str] = []
    connections: list[str] = []
    details = section.get("authorization_details")
    for entry in details if isinstance(details, list) else ():
        for stream in entry.get("streams") or () if isinstance(entry, Mapping) else ():
            if isinstance(stream, Mapping) and _text(stream.get("name")):
                streams.append(stream["name"])
                connections += [i for i in stream.get("instance_ids") or () if isinstance(i, str)]
    return MemberFacts(
        grant_id=grant_id or _text(section.get("grant_id")),
        connection_ids=tuple(dict.fromkeys(connections)),
        streams=tuple(dict.fromkeys(streams)) or EVERY_STREAM,
    )


@dataclass(slots=True)
class MemberStart:
    """One cached grant as the start-up check left it."""

    provider_url: str
    credential: Credential = field(repr=False)
    verified: str | None = None  # "client" once the RS confirmed it
    recheck: bool = False  # the RS refused the access token: checked again, with renewal, once the SDK is up
    facts: MemberFacts | None = None

    @property
    def token(self) -> str:
        return self.credential.access_token

    @property
    def cache_file(self) -> Path:
        return self.credential.cache_file

    def describe(self) -> str:
        """The provider, and the connector when the grant names one (``https://p (gmail)``)."""
        connector = self.credential.connector
        return f"{self.provider_url} ({short_id(connector)})" if connector else self.provider_url


Check = Callable[[str, str], tuple[str, dict[str, Any]]]
Say = Callable[[str], None]


def check_members(members: Sequence[MemberStart], check: Check, say: Say, warn: Say | None) -> int | None:
    """Check every member with the RS at once; the exit code of the first refused member in
    package order (after saying why), else ``None`` with each member's verdict filled in.

    ``warn`` is the serving door's: it serves a member whose RS cannot be asked now (and
    rechecks a 401 with renewal). Without it (a one-shot command) both stop the command:
    78 for the 401, 69 for an RS that cannot be asked.
    """
    from pdpp_gateway.rs.bearer_report import KindUnknown

    outcomes: list[tuple[str, dict[str, Any]] | Exception | None] = [None] * len(members)

    def ask(index: int) -> None:
        member = members[index]
        try:
            outcomes[index] = check(member.provider_url, member.token)
        except Exception as error:  # judged below, on the calling thread
            outcomes[index] = error

    if len(members) == 1:
        ask(0)
    else:
        threads = [threading.Thread(target=ask, args=(i,), name=f"check-{i}") for i in range(len(members))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for member, outcome in zip(members, outcomes, strict=True):
        if (
            isinstance(outcome, CredentialRejected)
            and token_lapsed(outcome.status, outcome.code)
            and warn is not None
            and member.credential.refreshable
        ):
            member.recheck = True  # renewable with the cached refresh token
        elif isinstance(outcome, CredentialError):
            say(outcome.message)
            return outcome.exit_code
        elif isinstance(outcome, KindUnknown):
            if warn is None:
                say(
                    f"cannot verify the cached credential with {member.describe()} ({outcome.reason}); "
                    "nothing was read. Retry when the resource server is reachable."
                )
                return ExitCode.UNAVAILABLE
            warn(f"{outcome.reason} ({member.describe()})" if len(members) > 1 else outcome.reason)
        elif isinstance(outcome, tuple):
            member.verified, document = outcome
            member.facts = facts_from_schema(document) if len(members) > 1 else None
        elif isinstance(outcome, Exception):
            raise outcome
    return None


# 401 codes that mean "this access token is no longer good" (not "outside the grant":
# context.stream_not_allowed / instance_mismatch are answered as they are)
TOKEN_REFUSED: Final = frozenset(
    {"context.active_false", "active_false", "authentication_error", "invalid_token", "token_expired"}
)


def token_lapsed(status: int, code: str) -> bool:
    """Whether the RS refused the access token itself, so a renewed one may pass: 401 with a
    token code, or the reference RS's 403 ``grant_expired`` for a lapsed access token."""
    return (status == 401 and code in TOKEN_REFUSED) or (status == 403 and code == "grant_expired")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
