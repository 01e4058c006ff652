"""The real TypeScript MCP SDK 1.x client judges the gateway, over stdio and over HTTP.

That client (behind Claude Desktop and Claude Code) checks ``tools/list`` against its own
schemas and every ``structuredContent`` against the tool's ``outputSchema``, errors
included, and throws on an answer that does not conform. ``tests/ts_client/judge.mjs``
drives it through a plan of successful and failing calls of every tool and resource
reads; these tests assert that the client accepted every answer and saw the expected
successes and typed errors.

Needs Node.js and the client installed by ``scripts/test`` (``npm ci`` in
``tests/ts_client``); where either is missing the tests skip and say why.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.local.credentials import write_credential
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.tools.specs import TOOL_NAMES
from tests.conftest import gateway_env

JUDGE = Path(__file__).parent / "ts_client"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NODE is None or not (JUDGE / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(),
    reason="needs node and the TypeScript SDK client (scripts/test runs `npm ci` in tests/ts_client)",
)

# (tool, arguments, whether it should succeed)
CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("schema", {}, True),
    ("schema", {"stream": "messages"}, True),
    ("search", {"query": "invoice", "limit": 3}, True),
    ("query_records", {"stream": "messages", "connection_id": "cin_mail_work", "limit": 2}, True),
    ("aggregate", {"stream": "messages", "connection_id": "cin_mail_work", "metric": "count"}, True),
    ("fetch", {"id": "cin_mail_work/message_bodies:body_porto_trip"}, True),
    ("read_record_field", {"id": "cin_mail_work/message_bodies:body_porto_trip", "field": "body_text"}, True),
    ("query_records", {"stream": "messages", "limit": "many"}, False),
    ("query_records", {"stream": "no_such_stream", "limit": 1}, False),
    ("aggregate", {"stream": "messages", "metric": "median"}, False),
    ("search", {"query": ""}, False),
    ("fetch", {"id": "cin_mail_work/messages:no_such_record"}, False),
    ("read_record_field", {"id": "cin_mail_work/messages:no_such_record", "field": "subject"}, False),
]
RESOURCES = ["pdpp://stream/messages", "pdpp://record/cin_mail_work%2Fmessage_bodies%3Abody_porto_trip"]


# A package token (Work mail + Acme Slack, each child read with its own token): merged
# schema and search pages, routed reads, and the package's own refusals.
PACKAGE_CALLS: list[tuple[str, dict[str, Any], bool]] = [
    ("schema", {}, True),
    ("search", {"query": "invoice", "limit": 4}, True),
    ("query_records", {"stream": "messages", "connection_id": "cin_slack_acme", "limit": 2}, True),
    ("fetch", {"id": "cin_mail_work/message_bodies:body_porto_trip"}, True),
    ("query_records", {"stream": "messages", "limit": 2}, False),  # ambiguous: which source?
    ("query_records", {"stream": "messages", "connection_id": "cin_nope"}, False),
]


async def judge(
    plan: dict[str, Any], calls: list[tuple[str, dict[str, Any], bool]] = CALLS
) -> dict[str, Any]:
    plan = {**plan, "calls": [{"tool": t, "arguments": a} for t, a, _ in calls], "resources": RESOURCES}
    process = await asyncio.create_subprocess_exec(
        str(NODE),
        str(JUDGE / "judge.mjs"),
        json.dumps(plan),
        cwd=JUDGE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-2000:]
    report: dict[str, Any] = json.loads(out)
    return report


def assert_every_answer_accepted(
    report: dict[str, Any], calls: list[tuple[str, dict[str, Any], bool]] = CALLS
) -> None:
    assert set(report["tools"]) >= set(TOOL_NAMES)
    for (tool, arguments, succeeds), seen in zip(calls, report["calls"], strict=True):
        assert seen["thrown"] is None, (tool, arguments, seen["thrown"])  # the client accepted the answer
        assert seen["isError"] is (not succeeds), (tool, arguments, seen["text"])
        if not succeeds:
            assert seen["text"].startswith("Error "), seen["text"]
    for seen in report["resources"]:
        assert seen["thrown"] is None, seen
        assert seen["contents"] >= 1


async def test_the_typescript_client_accepts_every_answer_over_stdio(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    plan = {
        "transport": "stdio",
        "command": sys.executable,
        "args": [
            "-m",
            "pdpp_gateway",
            "stdio",
            "--provider-url",
            shared_sandbox.url,
            "--cache-root",
            str(cache_root),
        ],
        "env": gateway_env(),
    }
    assert_every_answer_accepted(await judge(plan))


async def test_the_typescript_client_accepts_every_answer_over_http(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as url:
        report = await judge(
            {"transport": "http", "url": url, "token": shared_sandbox.tokens["client_broad"]}
        )
    assert_every_answer_accepted(report)


async def test_the_typescript_client_accepts_a_package_callers_answers(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as url:
        plan = {"transport": "http", "url": url, "token": shared_sandbox.tokens["package"]}
        report = await judge(plan, PACKAGE_CALLS)
    assert_every_answer_accepted(report, PACKAGE_CALLS)
