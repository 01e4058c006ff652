"""Settings of the hosted gateway: one frozen object, parsed once at the edge.

Contract: ``load_settings(flags, env, config_path)`` merges, per setting, the first
source that has it: command-line flags, then ``PDPP_*`` environment variables, then the
``[gateway]`` table of the settings file, then the defaults below. Everything is
validated here, at start-up, so a bad value stops the process with one clear line
(``SettingsError``) instead of failing a request later.

The settings file never depends on the working directory (``settings_file``): the
``--config`` path when given, else ``$PDPP_GATEWAY_CONFIG``, both of which must exist;
else ``$XDG_CONFIG_HOME/pdpp-gateway/gateway.toml`` (``~/.config/...`` when
``XDG_CONFIG_HOME`` is unset) when that file exists; else none. A relative
``package_file`` inside the file is relative to the file's directory. The file read,
as an absolute path, is ``HostedSettings.config_file`` (the serve start-up log names it).

Secrets (the introspection client secret, a Redis URL that may hold a password) are kept
out of ``repr`` so a logged settings object never shows them.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from pdpp_gateway.local.credentials import normalize_provider_url
from pdpp_gateway.local_verdict import CredentialError

CONFIG_ENV: Final = "PDPP_GATEWAY_CONFIG"
USER_CONFIG: Final = Path("pdpp-gateway", "gateway.toml")  # under the XDG config directory
MAX_INTROSPECTION_CACHE_SECONDS: Final = 60.0
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

# setting name -> environment variable
ENV_NAMES: Final[dict[str, str]] = {
    "provider_url": "PDPP_PROVIDER_URL",
    "host": "PDPP_HOST",
    "port": "PORT",
    "rs_internal_url": "PDPP_RS_INTERNAL_URL",
    "public_url": "PDPP_PUBLIC_URL",
    "trusted_proxies": "PDPP_TRUSTED_PROXIES",
    "allowed_hosts": "PDPP_ALLOWED_HOSTS",
    "allowed_prefixes": "PDPP_ALLOWED_PREFIXES",
    "allowed_origins": "PDPP_ALLOWED_ORIGINS",
    "introspection_url": "PDPP_INTROSPECTION_URL",
    "introspection_client_id": "PDPP_INTROSPECTION_CLIENT_ID",
    "introspection_client_secret": "PDPP_INTROSPECTION_CLIENT_SECRET",
    "issuer": "PDPP_ISSUER",
    "package_file": "PDPP_PACKAGE_FILE",
    "introspection_cache_seconds": "PDPP_INTROSPECTION_CACHE_SECONDS",
    "workers": "PDPP_WORKERS",
    "max_body_bytes": "PDPP_MAX_BODY_BYTES",
    "body_timeout_seconds": "PDPP_BODY_TIMEOUT_SECONDS",
    "shutdown_grace_seconds": "PDPP_SHUTDOWN_GRACE_SECONDS",
    "idle_timeout_seconds": "PDPP_IDLE_TIMEOUT_SECONDS",
    "header_timeout_seconds": "PDPP_HEADER_TIMEOUT_SECONDS",
    "keepalive_timeout_seconds": "PDPP_KEEPALIVE_TIMEOUT_SECONDS",
    "max_connections": "PDPP_MAX_CONNECTIONS",
    "rate_limit": "PDPP_RATE_LIMIT",
    "rate_burst": "PDPP_RATE_BURST",
    "global_rate_limit": "PDPP_GLOBAL_RATE_LIMIT",
    "global_rate_burst": "PDPP_GLOBAL_RATE_BURST",
    "redis_url": "PDPP_REDIS_URL",
    "log_level": "PDPP_LOG_LEVEL",
    "server_name": "PDPP_MCP_SERVER_NAME",
}
_LISTS: Final = frozenset({"trusted_proxies", "allowed_hosts", "allowed_prefixes", "allowed_origins"})
# A path segment a public URL or a forwarded prefix may hold: RFC 3986 unreserved characters.
_SEGMENT: Final = re.compile(r"[A-Za-z0-9._~-]+")
MAX_PREFIX_CHARS: Final = 200


class SettingsError(ValueError):
    """A setting is missing or invalid; the message names it and its sources."""


@dataclass(frozen=True, slots=True)
class HostedSettings:
    provider_url: str
    host: str = "127.0.0.1"
    port: int = 8080
    rs_internal_url: str | None = None
    public_url: str | None = None
    trusted_proxies: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    allowed_prefixes: tuple[str, ...] = ()  # path prefixes a trusted proxy may forward (X-Forwarded-Prefix)
    allowed_origins: tuple[str, ...] = ()
    introspection_url: str | None = None
    introspection_client_id: str | None = None
    introspection_client_secret: str | None = field(default=None, repr=False)
    issuer: str | None = None
    package_file: str | None = None  # operator file: grant_package_id -> child grants (token env names)
    introspection_cache_seconds: float = MAX_INTROSPECTION_CACHE_SECONDS
    workers: int = 1
    max_body_bytes: int = 4 * 1024 * 1024
    body_timeout_seconds: float = 10.0  # a request body must arrive within this (else 408)
    shutdown_grace_seconds: float = 30.0
    idle_timeout_seconds: float = 10.0  # a new connection's first request must begin within this
    header_timeout_seconds: float = 10.0  # a request line and headers, from their first byte
    keepalive_timeout_seconds: float = 75.0  # a kept-alive connection's wait for its next request
    max_connections: int = 0  # open at once; 0: the descriptor limit less a headroom
    rate_limit: float = 20.0  # calls per second per caller (grant or package); 0: no limit
    rate_burst: int = 40
    global_rate_limit: float = 0.0  # calls per second for all callers together; 0: no ceiling
    global_rate_burst: int = 0  # 0: twice the global rate
    redis_url: str | None = field(default=None, repr=False)  # shares limits across processes/replicas
    log_level: str = "INFO"
    server_name: str = "pdpp-gateway"
    config_file: str | None = None  # the settings file read (absolute), not a setting itself

    @property
    def upstream_url(self) -> str:
        """Where the gateway sends its ``/v1`` reads (the internal URL when one is set)."""
        return self.rs_internal_url or self.provider_url

    @property
    def caller_rate(self) -> tuple[float, int]:
        """(calls per second, burst) for each caller; a burst never below one call."""
        return self.rate_limit, max(1, self.rate_burst)

    @property
    def global_rate(self) -> tuple[float, int]:
        """(calls per second, burst) for all callers together."""
        burst = self.global_rate_burst or math.ceil(2 * self.global_rate_limit)
        return self.global_rate_limit, max(1, burst)

    @property
    def introspection(self) -> tuple[str, str, str] | None:
        """``(url, client_id, client_secret)`` when all three are set."""
        url, client, secret = (
            self.introspection_url,
            self.introspection_client_id,
            self.introspection_client_secret,
        )
        return (url, client, secret) if url and client and secret else None

    @property
    def uses_introspection(self) -> bool:
        return self.introspection is not None

    @property
    def expected_issuer(self) -> str | None:
        """The ``iss`` introspection answers must carry: configured, else the AS's origin; an
        AS reached at the RS's private address (``rs_internal_url``) issues under the
        provider's public origin, the one its clients sign in at."""
        if self.issuer:
            return self.issuer.rstrip("/")
        if not self.introspection_url:
            return None
        reached = _origin_of(self.introspection_url)
        if self.rs_internal_url and reached == _origin_of(self.rs_internal_url):
            return _origin_of(self.provider_url)
        return reached

    def host_allow_list(self) -> frozenset[str]:
        """Lower-cased ``host`` or ``host:port`` entries a request's Host may name."""
        allowed = {entry.lower() for entry in self.allowed_hosts}
        for url in (self.provider_url, self.public_url):
            if url:
                allowed.add(urlsplit(url).netloc.lower())
        if self.host in LOOPBACK_HOSTS or self.host in {"0.0.0.0", "::"}:
            allowed.update(f"{name}:{self.port}" for name in ("127.0.0.1", "localhost", "[::1]"))
        return frozenset(allowed)

    def origin_allow_list(self) -> frozenset[str]:
        allowed = {origin.rstrip("/").lower() for origin in self.allowed_origins}
        for url in (self.provider_url, self.public_url):
            if url:
                parts = urlsplit(url)
                allowed.add(f"{parts.scheme}://{parts.netloc}".lower())
        if self.host in LOOPBACK_HOSTS:
            allowed.update(f"http://{name}:{self.port}" for name in ("127.0.0.1", "localhost", "[::1]"))
        return frozenset(allowed)


def load_settings(
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
) -> HostedSettings:
    """Merge flags > env > settings file > defaults and validate the result."""
    environ = os.environ if env is None else env
    target = settings_file(config_path, environ)
    file_values = _read_config(target) if target is not None else {}
    raw: dict[str, Any] = {}
    for name, env_name in ENV_NAMES.items():
        if flags.get(name) not in (None, [], ()):
            raw[name] = flags[name]
        elif environ.get(env_name, "").strip():
            raw[name] = environ[env_name].strip()
        elif name in file_values:
            raw[name] = file_values[name]
    settings = _validated(raw)
    return replace(settings, config_file=str(target)) if target is not None else settings


def settings_file(explicit: Path | None, env: Mapping[str, str]) -> Path | None:
    """The settings file to read, absolute, or None (see the module contract); a named
    file that does not exist is a ``SettingsError``."""
    named, source = (explicit, "--config") if explicit is not None else (env.get(CONFIG_ENV, ""), CONFIG_ENV)
    if str(named).strip():
        path = Path(str(named).strip()).expanduser().absolute()
        if not path.is_file():
            raise SettingsError(f"config file {path} ({source}) does not exist")
        return path
    user = user_config_dir(env)
    candidate = user / USER_CONFIG if user is not None else None
    return candidate if candidate is not None and candidate.is_file() else None


def user_config_dir(env: Mapping[str, str]) -> Path | None:
    """``$XDG_CONFIG_HOME`` when it is an absolute path (the XDG rule), else ``~/.config``."""
    xdg = Path(env.get("XDG_CONFIG_HOME", ""))
    if xdg.is_absolute():
        return xdg
    home = env.get("HOME", "")
    if not home:
        try:
            return Path.home() / ".config"
        except RuntimeError:  # no home directory can be found: no user settings file
            return None
    return Path(home) / ".config"


def _read_config(target: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(target.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise SettingsError(f"config file {target} is not valid TOML: {error}") from None
    outside = sorted(set(document) - {"gateway"})
    if outside:
        raise SettingsError(
            f"config file {target}: {', '.join(outside)} outside the [gateway] table; every setting "
            "goes under [gateway] (for example [gateway] then rate_limit = 10)"
        )
    table = document.get("gateway", {})
    if not isinstance(table, dict):
        raise SettingsError(f"config file {target}: [gateway] must be a table")
    unknown = sorted(set(table) - set(ENV_NAMES))
    if unknown:
        raise SettingsError(f"config file {target}: unknown setting(s) {', '.join(unknown)}")
    package_file = table.get("package_file")
    if isinstance(package_file, str) and package_file:
        table["package_file"] = str(target.parent / Path(package_file).expanduser())
    return table


def _validated(raw: dict[str, Any]) -> HostedSettings:
    if not raw.get("provider_url"):
        raise SettingsError("missing provider URL: pass --provider-url or set PDPP_PROVIDER_URL")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        values[name] = _as_list(value) if name in _LISTS else value
    for name in ("provider_url", "rs_internal_url", "public_url", "introspection_url"):
        if values.get(name):
            values[name] = _url(name, str(values[name]))
    for name in ("port", "workers", "max_body_bytes"):
        if name in values:
            values[name] = _number(name, values[name], int, minimum=1 if name != "port" else 0)
    for name in ("rate_burst", "global_rate_burst", "max_connections"):
        if name in values:
            values[name] = _number(name, values[name], int, minimum=0)
    for name in ("introspection_cache_seconds", "shutdown_grace_seconds", "rate_limit", "global_rate_limit"):
        if name in values:
            values[name] = _number(name, values[name], float, minimum=0)
    for name in (
        "body_timeout_seconds",
        "idle_timeout_seconds",
        "header_timeout_seconds",
        "keepalive_timeout_seconds",
    ):
        if name in values:
            values[name] = _number(name, values[name], float, minimum=0.001)
    cache = values.get("introspection_cache_seconds", MAX_INTROSPECTION_CACHE_SECONDS)
    values["introspection_cache_seconds"] = min(cache, MAX_INTROSPECTION_CACHE_SECONDS)
    if values.get("public_url"):
        path = urlsplit(values["public_url"]).path
        if path and path_prefix(path) is None:
            raise SettingsError(
                f"public_url {values['public_url']!r}: its path must be segments of letters, digits and "
                "'.', '_', '~', '-' (for example https://data.example.com/pdpp)"
            )
    prefixes = []
    for entry in values.get("allowed_prefixes", ()):
        prefix = path_prefix(entry)
        if not prefix:
            raise SettingsError(
                f"allowed prefix {entry!r} is not a path prefix such as /pdpp (segments of letters, "
                "digits and '.', '_', '~', '-')"
            )
        prefixes.append(prefix)
    if prefixes:
        values["allowed_prefixes"] = tuple(dict.fromkeys(prefixes))
    for proxy in values.get("trusted_proxies", ()):
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise SettingsError(f"trusted proxy {proxy!r} is not an IP address or CIDR network") from None
    introspection = [
        values.get(n) for n in ("introspection_url", "introspection_client_id", "introspection_client_secret")
    ]
    if any(introspection) and not all(introspection):
        raise SettingsError(
            "introspection needs all three of --introspection-url, --introspection-client-id and "
            "--introspection-client-secret (or none, to validate bearers through GET /v1/schema)"
        )
    redis_url = values.get("redis_url")
    if redis_url and urlsplit(str(redis_url)).scheme not in {"redis", "rediss", "unix"}:
        raise SettingsError("redis_url must be a redis://, rediss:// or unix:// URL")
    package_file = values.get("package_file")
    if package_file:
        if not Path(str(package_file)).is_file():
            raise SettingsError(f"package file {package_file} does not exist")
        if not all(introspection):
            raise SettingsError(
                "a package file needs introspection (package tokens are only recognised by it)"
            )
    return HostedSettings(**values)


def path_prefix(text: str) -> str | None:
    """A URL path prefix in normal form: ``/a/b`` (no trailing slash; ``""`` for the root),
    or ``None`` when it is not one (a relative path, an empty, ``.`` or ``..`` segment, a
    character outside RFC 3986's unreserved set, a query, or more than ``MAX_PREFIX_CHARS``)."""
    trimmed = text.strip().rstrip("/")
    if not trimmed:
        return ""
    if not trimmed.startswith("/") or len(trimmed) > MAX_PREFIX_CHARS:
        return None
    segments = trimmed[1:].split("/")
    if any(s in {".", ".."} or not _SEGMENT.fullmatch(s) for s in segments):
        return None
    return trimmed


def _as_list(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(str(item).strip() for item in items if str(item).strip())


def _url(name: str, value: str) -> str:
    try:
        return normalize_provider_url(value)
    except CredentialError:
        raise SettingsError(f"{name} {value!r} is not an http(s) URL") from None


def _number(name: str, value: Any, kind: type[int] | type[float], *, minimum: float) -> Any:
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{name} must be a number, got {value!r}") from None
    if number < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {number}")
    return number


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
