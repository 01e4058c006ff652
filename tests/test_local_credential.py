"""The one-shot local commands (search, read-field, call, resource) ask the RS what the cached
token is before reading: a cache label can be missing or wrong."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from pdpp_gateway.local.credentials import write_credential
from tests.conftest import run_cli


@pytest.mark.parametrize("name", ["owner", "package"])
def test_search_with_an_unlabelled_owner_or_package_token_reads_nothing(
    tmp_path: Path, shared_sandbox: Any, name: str
) -> None:
    cache_root = tmp_path / ".pdpp"
    token = shared_sandbox.tokens[name]
    write_credential(cache_root, shared_sandbox.url, token)
    shared_sandbox.calls.clear()
    done = run_cli("search", "invoice", "--provider-url", shared_sandbox.url, "--cache-root", str(cache_root))
    assert done.returncode == 77, done.stderr
    assert f"pdpp-gateway connect {shared_sandbox.url}" in done.stderr
    assert token not in done.stdout + done.stderr
    assert {call.path for call in shared_sandbox.calls} == {"/v1/schema"}


def test_search_with_a_client_token_is_verified_then_reads(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    shared_sandbox.calls.clear()
    done = run_cli(
        "search",
        "invoice",
        "--mode",
        "lexical",
        "--provider-url",
        shared_sandbox.url,
        "--cache-root",
        str(cache_root),
    )
    assert done.returncode == 0, done.stderr
    assert [call.path for call in shared_sandbox.calls] == ["/v1/schema", "/v1/search"]


def test_an_unreachable_rs_stops_a_one_shot_command_before_reading(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, url, "tok_for_a_dead_rs")
    done = run_cli("search", "invoice", "--provider-url", url, "--cache-root", str(cache_root))
    assert done.returncode == 69
    assert "nothing was read" in done.stderr
    assert "Traceback" not in done.stderr
