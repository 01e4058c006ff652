"""The stdio door's fast start, as a process: early answers, the hand-over, the credential gate.

Each test runs ``python -m pdpp_gateway stdio`` for real against the sandbox RS. The
reference for "the same answers" is the same gateway with ``PDPP_STDIO_EARLY_ANSWERS=0``,
where the SDK answers every frame.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from pdpp_gateway.fast_start.build import envelope
from pdpp_gateway.local.credentials import write_credential
from pdpp_gateway.local_verdict import CredentialError
from pdpp_gateway.rs.bearer_report import KindUnknown
from pdpp_gateway.rs.start_probe import check_at_start
from tests.conftest import run_cli
from tests.frames import INITIALIZED, initialize
from tests.upstreams import Switchboard

MODERN = envelope("2026-07-28")
REQUEST_ID = re.compile(r"req_[0-9a-f]+")
SCHEMA_CALL = {"name": "schema", "arguments": {}}
HANDSHAKE_SESSION = [
    initialize(),
    INITIALIZED,
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/templates/list"},
    {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": SCHEMA_CALL},
    {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
]
MODERN_SESSION = [
    {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": MODERN},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": MODERN},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/templates/list", "params": MODERN},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {**SCHEMA_CALL, **MODERN}},
]


def stdio(cache_root: Path, url: str, frames: list[dict[str, Any]], *, early: bool = True) -> Any:
    return run_cli(
        "stdio",
        "--provider-url",
        url,
        "--cache-root",
        str(cache_root),
        env={"PDPP_STDIO_EARLY_ANSWERS": "1" if early else "0"},
        stdin="".join(json.dumps(frame) + "\n" for frame in frames),
    )


def by_id(stdout: str) -> dict[Any, str]:
    """Each answer line by its id; the RS's per-request id (in tool results) blanked."""
    lines = stdout.splitlines()
    answers = {json.loads(text)["id"]: REQUEST_ID.sub("req_", text) for text in lines}
    assert len(answers) == len(lines), "an id was answered twice"
    return answers


@pytest.mark.parametrize("frames", [HANDSHAKE_SESSION, MODERN_SESSION], ids=["handshake", "2026-07-28"])
def test_the_wire_carries_the_sdks_bytes_with_or_without_early_answers(
    tmp_path: Path, shared_sandbox: Any, frames: list[dict[str, Any]]
) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    fast = stdio(cache_root, shared_sandbox.url, frames)
    sdk = stdio(cache_root, shared_sandbox.url, frames, early=False)
    assert fast.returncode == sdk.returncode == 0, fast.stderr + sdk.stderr
    fast_answers, sdk_answers = by_id(fast.stdout), by_id(sdk.stdout)
    assert sorted(fast_answers) == [frame["id"] for frame in frames if "id" in frame]
    assert fast_answers == sdk_answers
    assert "differs from the SDK" not in fast.stderr
    call_id = next(frame["id"] for frame in frames if frame["method"] == "tools/call")
    assert "structuredContent" in json.loads(fast_answers[call_id])["result"]  # served by the SDK


def test_an_id_reused_after_its_early_answer_gets_the_sdks_own_answer(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    frames = [
        initialize(),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": SCHEMA_CALL},  # id 1 again
    ]
    done = stdio(cache_root, shared_sandbox.url, frames)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(text) for text in done.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [1, 2, 1]
    assert "serverInfo" in replies[0]["result"]  # the early initialize answer, written once
    assert "structuredContent" in replies[2]["result"]  # the tool call, answered by the SDK


@pytest.mark.parametrize("name", ["owner", "package"])
def test_a_refused_credential_writes_no_frame_even_to_early_requests(
    tmp_path: Path, shared_sandbox: Any, name: str
) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens[name])  # no label: the RS decides
    done = stdio(cache_root, shared_sandbox.url, HANDSHAKE_SESSION)
    assert done.returncode == 77, done.stderr
    assert done.stdout == ""
    assert f"pdpp-gateway connect {shared_sandbox.url}" in done.stderr


def test_a_session_answered_entirely_early_ends_without_waiting_for_the_sdk(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    done = stdio(cache_root, shared_sandbox.url, HANDSHAKE_SESSION[:4])
    assert done.returncode == 0, done.stderr
    assert sorted(by_id(done.stdout)) == [1, 2, 3]


# --- the start-up check over the standard library reads the RS as the async probe does ----------


async def check(url: str, token: str) -> str:
    return await anyio.to_thread.run_sync(check_at_start, url, token)


async def test_start_check_verdicts(shared_sandbox: Any) -> None:
    board = Switchboard(shared_sandbox.url)
    async with board.serve() as url:
        assert await check(url, shared_sandbox.tokens["client_broad"]) == "client"
        for name in ("owner", "package"):
            with pytest.raises(CredentialError) as refused:
                await check(url, shared_sandbox.tokens[name])
            assert refused.value.exit_code == 77
        with pytest.raises(CredentialError) as rejected:
            await check(url, "sbx_not_a_token")
        assert rejected.value.exit_code == 78
        assert "sbx_not_a_token" not in rejected.value.message
        board.refuse_compact = True
        board.seen.clear()
        assert await check(url, shared_sandbox.tokens["client_broad"]) == "client"
        assert board.lines() == ["GET /v1/schema?view=compact", "GET /v1/schema"]
        board.refuse_compact, board.down = False, True
        with pytest.raises(KindUnknown) as down:
            await check(url, shared_sandbox.tokens["client_broad"])
        assert down.value.reason == "upstream_unavailable"
