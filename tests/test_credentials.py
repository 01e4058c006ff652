"""The `pdpp-gateway connect` credential cache: every way it can be unusable fails closed, with the fix."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pdpp_gateway.local.credentials import (
    cache_file_for,
    load_credential,
    normalize_provider_url,
    owner_env_warning,
    write_credential,
)
from pdpp_gateway.local_verdict import CredentialError

URL = "http://localhost:7663"
TOKEN = "tok_cached_secret"


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("pdpp.example.com", "https://pdpp.example.com"),
        ("https://user:pw@pdpp.example.com/?x=1#f", "https://pdpp.example.com"),
        ("http://localhost:7663/", "http://localhost:7663"),
        ("https://host/rs//", "https://host/rs"),
        ("https://pdpp.example.com/mcp", "https://pdpp.example.com"),  # a client's MCP URL: its provider
        ("https://host/rs/mcp/", "https://host/rs"),
    ],
)
def test_provider_url_normalisation(raw: str, normal: str) -> None:
    assert normalize_provider_url(raw) == normal


@pytest.mark.parametrize("raw", ["ftp://host", "https://", "file:///etc/passwd"])
def test_invalid_provider_url_is_a_usage_error(raw: str) -> None:
    with pytest.raises(CredentialError) as caught:
        normalize_provider_url(raw)
    assert (caught.value.code, caught.value.exit_code) == ("invalid_provider_url", 64)


def test_cache_file_name_keeps_the_port(tmp_path: Path) -> None:
    assert cache_file_for("http://localhost:7663", tmp_path) == tmp_path / "clients" / "localhost_7663.json"
    assert cache_file_for("https://[::1]:8443", tmp_path).name == "___1__8443.json"


def test_round_trip_with_private_modes(tmp_path: Path) -> None:
    root = tmp_path / ".pdpp"
    path = write_credential(root, URL, TOKEN, grant_id="grt_1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert (root / ".gitignore").read_text() == "*\n!.gitignore\n"
    credential = load_credential(URL + "/", root)
    assert credential.access_token == TOKEN
    assert credential.grant_id == "grt_1"
    assert TOKEN not in repr(credential)


def _write_raw(root: Path, payload: object) -> Path:
    path = cache_file_for(URL, root)
    path.parent.mkdir(parents=True)
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("payload", "code", "exit_code"),
    [
        ("{not json", "credential_invalid", 78),
        ([1, 2], "credential_invalid", 78),
        ({"provider_url": URL}, "credential_invalid", 78),
        ({"provider_url": URL, "credential": {"access_token": ""}}, "credential_invalid", 78),
        (
            {"provider_url": URL, "credential": {"access_token": TOKEN, "token_type": "DPoP"}},
            "credential_invalid",
            78,
        ),
        (
            {"provider_url": "https://evil.example", "credential": {"access_token": TOKEN}},
            "credential_invalid",
            78,
        ),
        (
            {"provider_url": URL, "credential": {"access_token": TOKEN, "token_kind": "OWNER"}},
            "owner_token_refused",
            77,
        ),
        (
            {"provider_url": URL, "role": "owner", "credential": {"access_token": TOKEN}},
            "owner_token_refused",
            77,
        ),
        (
            {"provider_url": URL, "credential": {"access_token": TOKEN, "token_kind": "mcp_package"}},
            "mcp_package_token_refused",
            77,
        ),
        *(
            (
                {"provider_url": URL, "credential": {"access_token": TOKEN, "expires_at": bad}},
                "credential_invalid",
                78,
            )
            for bad in ("garbage", "", True, "2026-13-45T00:00:00Z", 1e300, float("nan"), [1])
        ),
    ],
)
def test_unusable_credentials_fail_closed(tmp_path: Path, payload: object, code: str, exit_code: int) -> None:
    _write_raw(tmp_path, payload)
    with pytest.raises(CredentialError) as caught:
        load_credential(URL, tmp_path)
    assert (caught.value.code, caught.value.exit_code) == (code, exit_code)
    assert f"pdpp-gateway connect {URL}" in caught.value.message
    assert TOKEN not in caught.value.message


def test_missing_and_expired(tmp_path: Path) -> None:
    with pytest.raises(CredentialError) as missing:
        load_credential(URL, tmp_path)
    assert (missing.value.code, missing.value.exit_code) == ("not_connected", 78)
    past = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    write_credential(tmp_path, URL, TOKEN, expires_at=past)
    with pytest.raises(CredentialError) as expired:
        load_credential(URL, tmp_path)
    assert (expired.value.code, expired.value.exit_code) == ("credential_expired", 78)
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    write_credential(tmp_path, URL, TOKEN, expires_at=future)
    assert load_credential(URL, tmp_path).access_token == TOKEN


@pytest.mark.parametrize(
    ("expires_at", "expected"),
    [
        (1000, datetime(1970, 1, 1, 0, 16, 40, tzinfo=UTC)),
        ("1000", datetime(1970, 1, 1, 0, 16, 40, tzinfo=UTC)),
        (4102444800.5, datetime(2100, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)),
        ("2100-01-01T00:00:00Z", datetime(2100, 1, 1, tzinfo=UTC)),
        (None, None),
    ],
)
def test_expires_at_is_iso_8601_or_epoch_seconds(
    tmp_path: Path, expires_at: object, expected: datetime | None
) -> None:
    _write_raw(
        tmp_path, {"provider_url": URL, "credential": {"access_token": TOKEN, "expires_at": expires_at}}
    )
    if expected is not None and expected <= datetime.now(UTC):
        with pytest.raises(CredentialError) as caught:
            load_credential(URL, tmp_path)
        assert caught.value.code == "credential_expired"
        assert "1970-01-01T00:16:40" in caught.value.message
    else:
        assert load_credential(URL, tmp_path).expires_at == expected


def test_a_world_readable_file_is_refused_with_the_chmod_that_fixes_it(tmp_path: Path) -> None:
    path = write_credential(tmp_path, URL, TOKEN)
    path.chmod(0o644)
    with pytest.raises(CredentialError) as refused:
        load_credential(URL, tmp_path)
    assert refused.value.exit_code == 78
    assert f"chmod 600 {path}" in refused.value.message
    assert TOKEN not in refused.value.message


def test_owner_environment_is_announced_never_echoed() -> None:
    assert owner_env_warning({}) is None
    notice = owner_env_warning({"PDPP_OWNER_TOKEN": "own_secret"})
    assert notice is not None
    assert "ignored" in notice
    assert "own_secret" not in notice
