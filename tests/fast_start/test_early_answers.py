"""Early answers are the SDK's answers, byte for byte, or they are not given at all.

The SDK side is produced at test time by the gateway's real ``Server`` (``build.sdk_frames``),
so these tests cannot drift from what the SDK would write today.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

import pytest

from pdpp_gateway.fast_start.answers import (
    ANSWERS_PATH,
    MAX_EARLY_LINES,
    SILENT,
    Answer,
    EarlyResponder,
    Table,
    sdk_installed,
)
from pdpp_gateway.fast_start.build import build_table, envelope, render, sdk_frames

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


def line(message: dict[str, Any]) -> str:
    return json.dumps(message) + "\n"


def initialize(version: str = "2025-11-25", request_id: object = 1, **params: Any) -> str:
    body = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    body.update(params)
    return line({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": body})


def request(request_id: object, method: str, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return line(message)


def early(lines: list[str], name: str = "pdpp-gateway") -> list[Answer | None]:
    responder = EarlyResponder(Table.load(), name)
    outcomes: list[Answer | None] = []
    for text in lines:
        outcome = responder.respond(text)
        outcomes.append(outcome if isinstance(outcome, Answer) else None)
    return outcomes


def assert_same_as_sdk(lines: list[str], *, name: str = "pdpp-gateway", answered: int) -> None:
    """Every early answer equals the SDK's answer to the same id; exactly ``answered`` were given."""
    sdk = {
        json.dumps(json.loads(frame)["id"]): (frame + "\n").encode() for frame in sdk_frames(lines, name=name)
    }
    given = [answer for answer in early(lines, name) if answer is not None]
    assert len(given) == answered
    for answer in given:
        assert answer.frame == sdk[answer.id_key], answer.method


def test_answers_json_is_what_the_sdk_builds_today() -> None:
    assert ANSWERS_PATH.read_bytes() == render(build_table()), (
        "answers.json is stale: run `python -m pdpp_gateway.fast_start.build`"
    )


@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, "1999-01-01", "2026-07-28"])
def test_handshake_era_answers_match_the_sdk(version: str) -> None:
    lines = [
        initialize(version),
        INITIALIZED + "\n",
        request(2, "tools/list"),
        request(3, "resources/templates/list", {}),
        request(4, "ping"),
    ]
    assert_same_as_sdk(lines, answered=4)


def test_modern_era_answers_match_the_sdk() -> None:
    lines = [
        request(1, "server/discover", envelope("2026-07-28")),
        request(2, "tools/list", envelope("2026-07-28")),
        request("three", "resources/templates/list", envelope("2026-07-28")),
    ]
    assert_same_as_sdk(lines, answered=3)


@pytest.mark.parametrize(
    "name", ["my gateway", 'quote " and \\ backslash', "ünïcödé ✓ 数据", "tab\tnew\nline\x01\x7f", ""]
)
def test_any_server_name_is_written_as_the_sdk_writes_it(name: str) -> None:
    assert_same_as_sdk([initialize(), request(2, "tools/list")], name=name, answered=2)
    assert_same_as_sdk([request(1, "server/discover", envelope("2026-07-28"))], name=name, answered=1)


@pytest.mark.parametrize(
    "capabilities",
    [
        {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}, "url": {}}},
        {"experimental": {"x": {"y": [1, "two", None]}}, "extensions": {"io.example/ui": {}}},
        {"roots": None, "sampling": {"context": {}, "tools": {}}, "unknown": [1, 2], "tasks": {}},
    ],
)
def test_client_capabilities_the_models_accept_are_answered_alike(capabilities: dict[str, Any]) -> None:
    info = {"name": "c", "version": "2", "title": "Client", "websiteUrl": "https://c.example"}
    assert_same_as_sdk([initialize(capabilities=capabilities, clientInfo=info)], answered=1)
    meta = envelope("2026-07-28")
    meta["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities
    meta["_meta"]["io.modelcontextprotocol/clientInfo"] = info
    assert_same_as_sdk([request(1, "tools/list", meta)], answered=1)


@pytest.mark.parametrize(
    ("opening", "why"),
    [
        (request(1, "tools/call", {"name": "schema", "arguments": {}}), "needs the RS"),
        (request(1, "tools/list"), "before initialize"),
        (initialize(request_id=1.0), "float id"),
        (initialize(request_id=True), "bool id"),
        (initialize(request_id='a"b'), "id needing escapes"),
        (initialize(_meta={"progressToken": 1}), "_meta on initialize"),
        (initialize(capabilities={"roots": {"listChanged": "yes"}}), "roots.listChanged not a bool"),
        (initialize(capabilities={"sampling": {"tools": True}}), "sampling.tools not an object"),
        (initialize(capabilities={"tasks": {"list": {}}}), "task capabilities"),
        (initialize(capabilities=[]), "capabilities not an object"),
        (initialize(clientInfo={"name": "c"}), "clientInfo without version"),
        (initialize(clientInfo={"name": "c", "version": "1", "icons": []}), "clientInfo icons"),
        ('{"jsonrpc":"2.0","id":1,"id":2,"method":"initialize","params":{}}\n', "duplicate keys"),
        (initialize(clientInfo={"name": "\ud800", "version": "1"}), "escaped surrogate"),
        (request(1, "server/discover", envelope("2099-01-01")), "unsupported modern version"),
        ("not json\n", "not JSON"),
        ("[1,2]\n", "a batch"),
    ],
)
def test_anything_unusual_is_left_to_the_sdk(opening: str, why: str) -> None:
    responder = EarlyResponder(Table.load(), "pdpp-gateway")
    assert responder.respond(opening) is None, why
    assert responder.respond(initialize(request_id=9)) is None  # and nothing after it either


@pytest.mark.parametrize(
    "follow_up",
    [
        request(2, "tools/list", {"cursor": "c1"}),
        request(2, "tools/list", {"_meta": {"progressToken": 5}}),
        request(2, "resources/list"),
        request(1, "tools/list"),  # reuses the id of the answered initialize
        request(2, "server/discover", envelope("2026-07-28")),  # the other era
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n',
    ],
)
def test_after_the_handshake_only_static_requests_are_answered(follow_up: str) -> None:
    outcomes = early([initialize(), follow_up, request(3, "tools/list")])
    assert outcomes[0] is not None
    assert outcomes[1:] == [None, None]


def test_blank_lines_and_the_initialized_notification_need_no_answer() -> None:
    responder = EarlyResponder(Table.load(), "pdpp-gateway")
    assert isinstance(responder.respond(initialize()), Answer)
    assert responder.respond("\n") is SILENT
    assert responder.respond(INITIALIZED + "\n") is SILENT
    assert isinstance(responder.respond(request(2, "tools/list")), Answer)


def test_early_answers_stop_after_a_bounded_number_of_lines() -> None:
    responder = EarlyResponder(Table.load(), "pdpp-gateway")
    outcomes = [responder.respond(initialize())]
    outcomes += [responder.respond(request(index, "ping")) for index in range(2, MAX_EARLY_LINES + 5)]
    assert sum(isinstance(outcome, Answer) for outcome in outcomes) == MAX_EARLY_LINES
    assert responder.stopped


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("gateway_version", "0.0.0-other"),
        ("sources_crc32", 1),
        ("sdk_version", "2.3.999"),
        ("sdk_version", None),
    ],
)
def test_a_table_built_for_other_sources_turns_early_answers_off(
    tmp_path: Any, key: str, value: object
) -> None:
    assert Table.load() is not None
    stale = json.loads(ANSWERS_PATH.read_bytes())
    stale[key] = value
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(stale))
    assert Table.load(path) is None
    assert EarlyResponder(None, "pdpp-gateway").respond(initialize()) is None


def test_the_table_names_the_installed_sdk_release() -> None:
    """The check has a true side: the table in the repository was built with the ``mcp``
    installed, found by its ``.dist-info`` or, failing that, by the package metadata."""
    recorded = json.loads(ANSWERS_PATH.read_bytes())["sdk_version"]
    assert recorded == version("mcp")
    assert sdk_installed(recorded)
    assert not sdk_installed("2.3.999")
