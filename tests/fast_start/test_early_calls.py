"""Tool calls and resource reads answered before the SDK has loaded carry the SDK's bytes,
in both eras.

Each test runs ``python -m pdpp_gateway stdio`` for real against the sandbox RS, once with
early answers and once with ``PDPP_STDIO_EARLY_ANSWERS=0`` (every answer from the SDK), and
compares the answers byte for byte (the RS's per-request id blanked). The early run's debug
log proves which calls the early path answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_gateway_middleware import ToolCall, ToolResult

from pdpp_gateway.fast_start.answers import READ_METHOD, Answer, EarlyCall, EarlyCancel, EarlyResponder, Table
from pdpp_gateway.fast_start.build import envelope
from pdpp_gateway.fast_start.calls import EarlyCalls
from pdpp_gateway.fast_start.wire import Wire
from pdpp_gateway.local.credentials import write_credential
from pdpp_gateway.server import build_server
from pdpp_gateway.wire.envelope import SERVER_INFO_META_KEY
from tests.conftest import gateway_env, run_cli
from tests.frames import INITIALIZED, initialize
from tests.upstreams import Fault, upstream_proxy
from tests.wire.sdk import sdk_answer

REQUEST_ID = re.compile(r"req_[0-9a-f]+")
EARLY = re.compile(r"answered tools/call (\S+) \((\w+)\) before the SDK loaded")
EARLY_READ = re.compile(r"answered resources/read (\S+) before the SDK loaded")
MODERN = envelope("2026-07-28")
# Every result shape a call has: a success of each tool, a refusal by the check ladder, an
# RS refusal, an unknown stream, a handle that is not one.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("schema", {}),
    ("schema", {"stream": "messages"}),
    ("query_records", {"stream": "messages", "limit": 2}),
    ("query_records", {"stream": "messages", "limit": 1000}),
    ("query_records", {"stream": "no_such_stream"}),
    ("aggregate", {"stream": "messages", "metric": "count"}),
    ("search", {"query": "Porto booking"}),
    ("fetch", {"id": "not-a-handle"}),
    ("read_record_field", {"record": "nope", "field": "body"}),
    ("query_records", {"stream": "messages", "filter": {"unknown_field": 1}}),
]


# Every answer a read has: stream metadata, a record, a blob, a record the RS does not have
# (-32002, or -32602 in the 2026 era), a URI no read serves, a segment with traversal.
READS = [
    "pdpp://stream/messages",
    "pdpp://record/cin_mail_work%2Fmessages%3Amsg_work_0003",
    "pdpp://blob/cin_mail_work/blob_receipt_png",
    "pdpp://record/cin_mail_work%2Fmessages%3Anot_there",
    "pdpp://folder/x",
    "pdpp://stream/..%2Fadmin",
]


def reads(first_id: int, modern: bool) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": first_id + index,
            "method": "resources/read",
            "params": {"uri": uri, **(MODERN if modern else {})},
        }
        for index, uri in enumerate(READS)
    ]


def calls(first_id: int, modern: bool) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": first_id + index,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, **(MODERN if modern else {})},
        }
        for index, (name, arguments) in enumerate(CALLS)
    ]


HANDSHAKE = [
    initialize(),
    INITIALIZED,
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    *calls(10, False),
    *reads(40, False),
]
MODERN_SESSION = [
    {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": MODERN},
    *calls(10, True),
    *reads(40, True),
]
# Then what the SDK must answer: the responder stops at the first of them.
SDK_TAIL = [
    {"jsonrpc": "2.0", "id": 90, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
    {"jsonrpc": "2.0", "id": 91, "method": "tools/call", "params": {"name": "schema", "arguments": {}}},
]


def stdio(cache_root: Path, url: str, frames: list[dict[str, Any]], *, early: bool = True) -> Any:
    return run_cli(
        "stdio",
        "--provider-url",
        url,
        "--cache-root",
        str(cache_root),
        "--log-level",
        "DEBUG",
        env={"PDPP_STDIO_EARLY_ANSWERS": "1" if early else "0"},
        stdin="".join(json.dumps(frame) + "\n" for frame in frames),
    )


def by_id(stdout: str) -> dict[Any, str]:
    lines = stdout.splitlines()
    answers = {json.loads(text)["id"]: REQUEST_ID.sub("req_", text) for text in lines}
    assert len(answers) == len(lines), "an id was answered twice"
    return answers


@pytest.mark.parametrize("opening", [HANDSHAKE, MODERN_SESSION], ids=["handshake", "2026-07-28"])
def test_early_calls_answer_with_the_sdks_bytes(
    tmp_path: Path, shared_sandbox: Any, opening: list[Any]
) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    frames = [*opening, *SDK_TAIL]
    fast = stdio(cache_root, shared_sandbox.url, frames)
    sdk = stdio(cache_root, shared_sandbox.url, frames, early=False)
    assert fast.returncode == sdk.returncode == 0, fast.stderr + sdk.stderr
    early_ids = sorted(int(found[0]) for found in EARLY.findall(fast.stderr))
    assert early_ids == list(range(10, 10 + len(CALLS))), "every plain call before the tail is answered early"
    early_reads = sorted(int(found) for found in EARLY_READ.findall(fast.stderr))
    assert early_reads == list(range(40, 40 + len(READS))), "and every plain read"
    assert not EARLY.findall(sdk.stderr)
    assert not EARLY_READ.findall(sdk.stderr)
    fast_answers, sdk_answers = by_id(fast.stdout), by_id(sdk.stdout)
    assert sorted(fast_answers) == sorted(frame["id"] for frame in frames if "id" in frame)
    assert fast_answers == sdk_answers
    results = [json.loads(fast_answers[10 + index]) for index in range(len(CALLS))]
    assert {result["result"]["isError"] for result in results} == {True, False}  # both shapes covered
    if opening is MODERN_SESSION:
        assert all(SERVER_INFO_META_KEY in result["result"]["_meta"] for result in results)
    assert json.loads(fast_answers[90])["error"]["code"] == -32602  # the SDK's own answer
    read = {uri: json.loads(fast_answers[40 + index]) for index, uri in enumerate(READS)}
    assert "text" in read[READS[1]]["result"]["contents"][0]
    assert "blob" in read[READS[2]]["result"]["contents"][0]
    missing = read[READS[3]]["error"]
    assert missing["code"] == (-32602 if opening is MODERN_SESSION else -32002)
    assert missing["data"]["uri"] == READS[3]
    assert {read[uri]["error"]["code"] for uri in READS[4:]} == {-32602}


def test_a_progress_token_goes_to_the_sdk(tmp_path: Path, shared_sandbox: Any) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    with_token = {"name": "schema", "arguments": {}, "_meta": {"progressToken": "p1"}}
    frames = [
        initialize(),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": with_token},
    ]
    fast = stdio(cache_root, shared_sandbox.url, frames)
    sdk = stdio(cache_root, shared_sandbox.url, frames, early=False)
    assert not EARLY.findall(fast.stderr)
    assert by_id(fast.stdout) == by_id(sdk.stdout)


async def test_a_cancelled_early_call_is_never_answered(tmp_path: Path, shared_sandbox: Any) -> None:
    """The client cancels a slow call: nothing is written for it, as the SDK does; the call
    after it is answered."""
    async with upstream_proxy(shared_sandbox.url) as board:
        board.fault = Fault("delay", 30.0)
        cache_root = tmp_path / ".pdpp"
        write_credential(cache_root, board.url, shared_sandbox.tokens["client_broad"])
        slow = {"name": "query_records", "arguments": {"stream": "messages", "limit": 1}}
        frames = [
            initialize(),
            INITIALIZED,
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": slow},
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 7, "reason": "t"},
            },
            {
                "jsonrpc": "2.0",
                "id": 8,
                "method": "tools/call",
                "params": {"name": "schema", "arguments": {}},
            },
        ]
        started = time.monotonic()
        done = await anyio.to_thread.run_sync(lambda: stdio(cache_root, board.url, frames))
    assert done.returncode == 0, done.stderr
    answers = by_id(done.stdout)
    assert sorted(answers) == [1, 8]
    assert time.monotonic() - started < 20.0  # the cancelled read (30 s) did not hold the exit
    assert [found[0] for found in EARLY.findall(done.stderr)] == ["8"]


def responder_after_opening(modern: bool) -> EarlyResponder:
    responder = EarlyResponder(Table.load(), "pdpp-gateway")
    opening = MODERN_SESSION[0] if modern else HANDSHAKE[0]
    assert isinstance(responder.respond(json.dumps(opening) + "\n"), Answer)
    return responder


def call_line(params: Any, request_id: Any = 3) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}) + "\n"


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
def test_a_plain_call_is_taken_early_with_its_arguments(modern: bool) -> None:
    responder = responder_after_opening(modern)
    params = {"name": "search", "arguments": {"query": "ünïcode", "limit": 3}, **(MODERN if modern else {})}
    outcome = responder.respond(call_line(params))
    assert isinstance(outcome, EarlyCall)
    assert (outcome.id_key, outcome.name, outcome.arguments, outcome.modern) == (
        "3",
        "search",
        {"query": "ünïcode", "limit": 3},
        modern,
    )
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    assert responder.respond(json.dumps(cancel) + "\n") == EarlyCancel("3")


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"name": "no_such_tool", "arguments": {}}, "an unknown tool: the SDK's -32602"),
        ({"name": "schema", "arguments": []}, "arguments not an object"),
        ({"name": "schema", "arguments": {}, "extra": 1}, "a parameter the early path does not know"),
        ({"name": "schema", "arguments": {}, "_meta": {"progressToken": 1}}, "a progress token"),
        ({"name": "schema", "arguments": {}, "_meta": {}}, "any _meta in the handshake era"),
        ({"name": "query_records", "arguments": {"limit": float("nan")}}, "NaN, which JSON has not"),
        ({"name": "query_records", "arguments": {"limit": 1e400}}, "a number beyond a double"),
    ],
)
def test_anything_but_a_plain_call_is_left_to_the_sdk(params: dict[str, Any], why: str) -> None:
    responder = responder_after_opening(modern=False)
    line = call_line(params).replace("Infinity", "1e400")
    assert responder.respond(line) is None, why
    assert responder.stopped


def test_a_reused_id_and_a_cancel_of_another_request_are_the_sdks() -> None:
    responder = responder_after_opening(modern=False)
    assert isinstance(
        responder.respond(call_line({"name": "schema"}, 1)), type(None)
    )  # id 1 answered already
    responder = responder_after_opening(modern=False)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert responder.respond(json.dumps(cancel) + "\n") is None  # initialize is not an early call
    responder = responder_after_opening(modern=True)
    assert responder.respond(call_line({"name": "schema", "arguments": {}})) is None  # no envelope


def read_line(params: Any, request_id: Any = 4) -> str:
    return (
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "resources/read", "params": params}) + "\n"
    )


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
def test_a_plain_read_is_taken_early_and_can_be_cancelled(modern: bool) -> None:
    responder = responder_after_opening(modern)
    outcome = responder.respond(read_line({"uri": "pdpp://stream/messages", **(MODERN if modern else {})}))
    assert outcome == EarlyCall("4", READ_METHOD, {"uri": "pdpp://stream/messages"}, outcome.version, modern)  # type: ignore[union-attr]
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}
    assert responder.respond(json.dumps(cancel) + "\n") == EarlyCancel("4")


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"uri": 7}, "a uri that is not a string: the SDK's refusal"),
        ({}, "no uri"),
        ({"uri": "pdpp://stream/messages", "_meta": {"progressToken": 1}}, "a progress token"),
        ({"uri": "pdpp://stream/messages", "extra": True}, "a parameter the early path does not know"),
    ],
)
def test_anything_but_a_plain_read_is_left_to_the_sdk(params: dict[str, Any], why: str) -> None:
    responder = responder_after_opening(modern=False)
    assert responder.respond(read_line(params)) is None, why
    assert responder.stopped


# Installed in the stdio process: when the early answer to request 3 is written, it notes on
# stderr whether anyio or the SDK had been loaded by then.
_WATCH_THE_FIRST_ANSWER = """
import os, sys
_write = os.write
def write(fd, data):
    if b'"id":3,' in bytes(data[:40]):
        loaded = sorted(name for name in ("anyio", "mcp", "pydantic") if name in sys.modules)
        sys.stderr.write(f"LOADED AT THE FIRST ANSWER: {loaded}\\n")
    return _write(fd, data)
os.write = write
"""


def test_the_first_answer_loads_neither_anyio_nor_the_sdk(tmp_path: Path, shared_sandbox: Any) -> None:
    """The first tool answer is written before anyio (whose asyncio backend alone costs about
    35 ms to load) or the SDK is imported: the session runs on asyncio's own primitives."""
    watch = tmp_path / "watch"
    watch.mkdir()
    (watch / "sitecustomize.py").write_text(_WATCH_THE_FIRST_ANSWER)
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    frames = [
        initialize(),
        INITIALIZED,
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "schema", "arguments": {}}},
    ]
    done = run_cli(
        "stdio",
        "--provider-url",
        shared_sandbox.url,
        "--cache-root",
        str(cache_root),
        env={"PYTHONPATH": f"{watch}{os.pathsep}{gateway_env()['PYTHONPATH']}"},
        stdin="".join(json.dumps(frame) + "\n" for frame in frames),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["id"] == 3
    assert "LOADED AT THE FIRST ANSWER: []" in done.stderr, done.stderr


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
def test_an_early_call_that_raises_is_answered_as_the_sdk_answers_it(modern: bool) -> None:
    """A defect in the pipeline: the early path answers what the SDK answers over stdio for
    the same exception (``{"code": 0, "message": <its text>}`` in the handshake era, the
    runner's ``-32603`` in the 2026-07-28 era)."""
    broken = RuntimeError('the pipeline broke: "quoted", ünïcode, a\nnewline')

    async def pipeline(call: ToolCall[Any]) -> ToolResult:
        raise broken

    async def early(write_end: int) -> None:
        async with asyncio.TaskGroup() as group:
            calls = EarlyCalls(
                group, pipeline, None, Wire(write_end), server_info={}, changed=threading.Event()
            )  # type: ignore[arg-type]
            calls.submit(EarlyCall("7", "schema", {}, "2026-07-28" if modern else "2025-11-25", modern))
            await asyncio.sleep(0)  # the call starts in the group, which then waits for it

    read_end, write_end = os.pipe()
    try:
        asyncio.run(early(write_end))
        answer = os.read(read_end, 65536)
    finally:
        os.close(read_end)
        os.close(write_end)
    server = build_server(lambda ctx: None, pipeline=pipeline)  # type: ignore[arg-type, return-value]
    assert answer == sdk_answer(server, "tools/call", {"name": "schema", "arguments": {}}, modern=modern)
    assert json.loads(answer)["error"]["code"] == (-32603 if modern else 0)
