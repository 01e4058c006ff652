"""Hosted settings: flags over environment over config file over defaults, checked at start."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from pdpp_gateway.hosted.connections import ConnectionLimits
from pdpp_gateway.settings import SettingsError, load_settings, settings_file


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_flags_beat_env_beat_file_beat_defaults(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        '[gateway]\nprovider_url = "https://file.example"\nport = 7000\nworkers = 3\nlog_level = "DEBUG"\n',
    )
    env = {"PDPP_PROVIDER_URL": "https://env.example", "PORT": "7100"}
    settings = load_settings({"port": 7200}, env, config)
    assert settings.provider_url == "https://env.example"
    assert settings.port == 7200
    assert settings.workers == 3
    assert settings.log_level == "DEBUG"
    assert settings.max_body_bytes == 4 * 1024 * 1024


def test_list_settings_accept_commas_in_env(tmp_path: Path) -> None:
    env = {"PDPP_PROVIDER_URL": "data.example.com", "PDPP_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.4"}
    settings = load_settings({}, env, write(tmp_path, ""))
    assert settings.provider_url == "https://data.example.com"
    assert settings.trusted_proxies == ("10.0.0.0/8", "192.168.1.4")


def test_cache_bound_never_exceeds_sixty_seconds(tmp_path: Path) -> None:
    settings = load_settings(
        {"provider_url": "https://a.example", "introspection_cache_seconds": 600}, {}, write(tmp_path, "")
    )
    assert settings.introspection_cache_seconds == 60


def test_secret_is_not_in_repr(tmp_path: Path) -> None:
    flags = {
        "provider_url": "https://a.example",
        "introspection_url": "https://a.example/introspect",
        "introspection_client_id": "gw",
        "introspection_client_secret": "s3cret-value",
    }
    settings = load_settings(flags, {}, write(tmp_path, ""))
    assert settings.uses_introspection
    assert settings.expected_issuer == "https://a.example"
    assert "s3cret-value" not in repr(settings)


@pytest.mark.parametrize(
    ("flags", "config", "message"),
    [
        ({}, "", "missing provider URL"),
        ({"provider_url": "ftp://x"}, "", "not an http(s) URL"),
        ({"provider_url": "https://a.example", "port": "eighty"}, "", "port must be a number"),
        ({"provider_url": "https://a.example", "trusted_proxies": ["proxy.local"]}, "", "not an IP address"),
        ({"provider_url": "https://a.example", "introspection_url": "https://a.example/i"}, "", "all three"),
        (
            {"provider_url": "https://a.example"},
            "[gateway]\nport_number = 1\n",
            "unknown setting(s) port_number",
        ),
        ({"provider_url": "https://a.example"}, "[gateway\n", "not valid TOML"),
        ({"provider_url": "https://a.example"}, "rate_limit = 5\n", "rate_limit outside the"),
        ({"provider_url": "https://a.example"}, "[server]\nport = 1\n", "server outside the"),
        ({"provider_url": "https://a.example", "package_file": "/nonexistent.json"}, "", "does not exist"),
        (
            {"provider_url": "https://a.example", "public_url": "https://h.example/a b"},
            "",
            "its path must be",
        ),
        (
            {"provider_url": "https://a.example", "public_url": "https://h.example/a/../b"},
            "",
            "its path must be",
        ),
        ({"provider_url": "https://a.example", "allowed_prefixes": ["pdpp"]}, "", "not a path prefix"),
        ({"provider_url": "https://a.example", "allowed_prefixes": ["/"]}, "", "not a path prefix"),
    ],
)
def test_invalid_settings_fail_at_start_with_one_clear_line(
    tmp_path: Path, flags: dict[str, object], config: str, message: str
) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_settings(flags, {}, write(tmp_path, config))


def test_shipped_config_file_is_valid() -> None:
    shipped = Path(__file__).resolve().parents[1] / "config" / "gateway.toml"
    settings = load_settings({"provider_url": "https://a.example"}, {}, shipped)
    assert settings.workers == 1
    assert settings.introspection_cache_seconds == 60


def test_package_file_needs_introspection(tmp_path: Path) -> None:
    packages = tmp_path / "packages.json"
    packages.write_text("{}", encoding="utf-8")
    with pytest.raises(SettingsError, match="needs introspection"):
        load_settings(
            {"provider_url": "https://a.example", "package_file": str(packages)}, {}, write(tmp_path, "")
        )


def test_package_file_flag_beats_env_beats_file(tmp_path: Path) -> None:
    paths = {}
    for source in ("flag", "env", "file"):
        paths[source] = tmp_path / f"{source}.json"
        paths[source].write_text("{}", encoding="utf-8")
    introspection = {
        "PDPP_INTROSPECTION_URL": "https://a.example/introspect",
        "PDPP_INTROSPECTION_CLIENT_ID": "gw",
        "PDPP_INTROSPECTION_CLIENT_SECRET": "s",
    }
    config = write(
        tmp_path, f'[gateway]\nprovider_url = "https://a.example"\npackage_file = "{paths["file"]}"\n'
    )
    env = {**introspection, "PDPP_PACKAGE_FILE": str(paths["env"])}
    assert load_settings({"package_file": str(paths["flag"])}, env, config).package_file == str(paths["flag"])
    assert load_settings({}, env, config).package_file == str(paths["env"])
    assert load_settings({}, introspection, config).package_file == str(paths["file"])


def test_body_timeout_is_positive(tmp_path: Path) -> None:
    flags = {"provider_url": "https://a.example"}
    assert load_settings(flags, {}, write(tmp_path, "")).body_timeout_seconds == 10
    assert (
        load_settings(flags, {"PDPP_BODY_TIMEOUT_SECONDS": "2.5"}, write(tmp_path, "")).body_timeout_seconds
        == 2.5
    )
    with pytest.raises(SettingsError, match="body_timeout_seconds must be at least"):
        load_settings({**flags, "body_timeout_seconds": 0}, {}, write(tmp_path, ""))


@pytest.mark.parametrize(
    ("name", "default"),
    [
        ("idle_timeout_seconds", 10),
        ("header_timeout_seconds", 10),
        ("keepalive_timeout_seconds", 75),
    ],
)
def test_connection_timeouts_default_safe_and_are_positive(tmp_path: Path, name: str, default: float) -> None:
    flags = {"provider_url": "https://a.example"}
    assert getattr(load_settings(flags, {}, write(tmp_path, "")), name) == default
    env = {f"PDPP_{name.upper()}": "2.5"}
    assert getattr(load_settings(flags, env, write(tmp_path, "")), name) == 2.5
    with pytest.raises(SettingsError, match=f"{name} must be at least"):
        load_settings({**flags, name: 0}, {}, write(tmp_path, ""))


def test_connection_ceiling_defaults_below_the_descriptor_limit(tmp_path: Path) -> None:
    flags = {"provider_url": "https://a.example"}
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    automatic = load_settings(flags, {}, write(tmp_path, "[gateway]\nmax_connections = 0\n"))
    assert 0 < ConnectionLimits.from_settings(automatic).resolved_ceiling() < soft
    chosen = load_settings(flags, {"PDPP_MAX_CONNECTIONS": "5"}, write(tmp_path, ""))
    assert ConnectionLimits.from_settings(chosen).resolved_ceiling() == 5
    with pytest.raises(SettingsError, match="max_connections must be at least"):
        load_settings({**flags, "max_connections": -1}, {}, write(tmp_path, ""))


def test_settings_file_is_named_else_the_users_never_the_working_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named, by_env = write(tmp_path, ""), tmp_path / "env.toml"
    by_env.write_text("", encoding="utf-8")
    user = tmp_path / "xdg" / "pdpp-gateway" / "gateway.toml"
    user.parent.mkdir(parents=True)
    user.write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "gateway.toml").write_text("", encoding="utf-8")
    env = {"PDPP_GATEWAY_CONFIG": "env.toml", "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert settings_file(Path("gateway.toml"), env) == named  # a relative name: from where it was typed
    assert settings_file(None, env) == by_env
    assert settings_file(None, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}) == user
    assert settings_file(None, {"HOME": str(tmp_path), "XDG_CONFIG_HOME": "relative/ignored"}) is None
    (tmp_path / ".config").symlink_to(tmp_path / "xdg")
    assert (
        settings_file(None, {"HOME": str(tmp_path)}) == tmp_path / ".config" / "pdpp-gateway" / "gateway.toml"
    )
    assert settings_file(None, {"XDG_CONFIG_HOME": str(tmp_path / "empty")}) is None


@pytest.mark.parametrize(
    ("explicit", "env", "source"),
    [("nope.toml", {}, "--config"), (None, {"PDPP_GATEWAY_CONFIG": "nope.toml"}, "PDPP_GATEWAY_CONFIG")],
)
def test_a_named_settings_file_must_exist(
    tmp_path: Path, explicit: str | None, env: dict[str, str], source: str
) -> None:
    named = Path(explicit) if explicit else None
    with pytest.raises(SettingsError, match=rf"config file .*nope.toml \({source}\) does not exist"):
        load_settings({"provider_url": "https://a.example"}, env, named)


def test_the_file_read_is_recorded_and_its_package_file_is_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "packages.json").write_text("{}", encoding="utf-8")
    config = write(
        tmp_path,
        '[gateway]\nprovider_url = "https://a.example"\npackage_file = "packages.json"\n'
        'introspection_url = "https://a.example/introspect"\nintrospection_client_id = "gw"\n',
    )
    settings = load_settings({}, {"PDPP_INTROSPECTION_CLIENT_SECRET": "s"}, config)
    assert settings.config_file == str(config)
    assert settings.package_file == str(tmp_path / "packages.json")
    assert (
        load_settings(
            {"provider_url": "https://a.example"}, {"XDG_CONFIG_HOME": str(tmp_path / "none")}
        ).config_file
        is None
    )


def test_a_public_url_keeps_its_path_prefix(tmp_path: Path) -> None:
    env = {"PDPP_PUBLIC_URL": "https://Host.example/pdpp/", "PDPP_ALLOWED_PREFIXES": "/a, /b/c/"}
    settings = load_settings({"provider_url": "https://a.example"}, env, write(tmp_path, ""))
    assert settings.public_url == "https://host.example/pdpp"
    assert settings.allowed_prefixes == ("/a", "/b/c")
