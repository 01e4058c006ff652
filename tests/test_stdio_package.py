"""``pdpp-gateway stdio`` serving several cached grants as one package, through the SDK's client.

Two sandbox RS instances, each with one cached grant: A holds ``client_work_mail`` (the
Work mail connection, ``cin_mail_work``), B holds ``client_chat`` (Acme Slack,
``cin_slack_acme``). Each sandbox logs the NAME of the token every read carried, so a test
can show that each member read only with its own token and only from its own RS.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from pdpp_gateway.local.credentials import write_credential
from tests.conftest import run_cli, stdio_params

MAIL, CHAT = "cin_mail_work", "cin_slack_acme"


@asynccontextmanager
async def package_gateway(sandbox_factory: Any, cache_root: Path, *args: str) -> AsyncIterator[Any]:
    """Two sandboxes, a grant cached for each, and a stdio gateway serving both as one package."""
    mail, chat = await sandbox_factory(), await sandbox_factory()
    write_credential(cache_root, mail.url, mail.tokens["client_work_mail"])
    write_credential(cache_root, chat.url, chat.tokens["client_chat"])
    params = stdio_params(mail.url, cache_root, "--provider-url", chat.url, *args)
    async with Client(params, mode="legacy", cache=None) as client:
        mail.calls.clear()
        chat.calls.clear()
        yield client, mail, chat


def tokens_seen(sandbox: Any) -> set[str | None]:
    return {call.token_name for call in sandbox.calls}


def reads(sandbox: Any, prefix: str) -> list[dict[str, list[str]]]:
    return [parse_qs(call.query) for call in sandbox.calls if call.path.startswith(prefix)]


def start_two_members(sandbox: Any, tmp_path: Path, second_url: str, second_token: str | None) -> Any:
    """``stdio`` for a package of the sandbox (a good grant cached) and ``second_url``
    (``second_token`` cached for it, or nothing), sent one ``ping``; the finished run."""
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, sandbox.url, sandbox.tokens["client_work_mail"])
    if second_token is not None:
        write_credential(cache_root, second_url, second_token)
    sandbox.calls.clear()
    return run_cli(
        "stdio",
        *("--provider-url", sandbox.url, "--provider-url", second_url),
        *("--cache-root", str(cache_root)),
        stdin=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n",
    )


async def test_schema_lists_every_members_sources(sandbox_factory: Any, tmp_path: Path) -> None:
    async with package_gateway(sandbox_factory, tmp_path / ".pdpp") as (client, mail, chat):
        result = await client.call_tool("schema", {})
    assert not result.is_error, result.content
    connectors = result.structured_content["data"]["connectors"]
    sources = {connector["source"]["connection_id"]: connector["source"] for connector in connectors}
    assert set(sources) == {MAIL, CHAT}
    assert sources[MAIL]["grant_id"] == "grt_work_mail"
    assert sources[CHAT]["grant_id"] == "grt_chat"
    assert sources[CHAT]["display_name"] == "Acme Slack"
    text = result.content[0].text
    assert "gmail" in text
    assert "slack" in text
    assert tokens_seen(mail) == {"client_work_mail"}
    assert tokens_seen(chat) == {"client_chat"}


async def test_search_merges_both_members_and_the_package_cursor_continues_both(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    # pinned lexical: an unpinned search is fused, and a fused page has no cursor
    query = {"query": "Lisbon", "mode": "lexical"}  # 30 mail hits, 5 chat hits in the sandbox
    async with package_gateway(sandbox_factory, tmp_path / ".pdpp") as (client, mail, chat):
        alone = {}
        for connection in (MAIL, CHAT):  # the package's member order: the order of --provider-url
            result = await client.call_tool("search", {**query, "connection_id": connection, "limit": 100})
            assert not result.is_error, result.content
            alone[connection] = [hit["id"] for hit in result.structured_content["results"]]
        mail.calls.clear()
        chat.calls.clear()
        pages = [await client.call_tool("search", {**query, "limit": 4})]
        while cursor := pages[-1].structured_content["data"].get("next_cursor"):
            assert len(pages) < 40
            assert cursor.startswith("pkg1.")
            pages.append(await client.call_tool("search", {**query, "limit": 4, "cursor": cursor}))
    assert not any(page.is_error for page in pages)
    shown = [hit for page in pages for hit in page.structured_content["results"]]
    ids = [hit["id"] for hit in shown]
    first, second = alone[MAIL], alone[CHAT]
    assert len(first) > 3 * len(second) >= 6, alone
    assert ids == [
        source[rank]
        for rank in range(max(len(first), len(second)))
        for source in (first, second)
        if rank < len(source)
    ]
    assert len(pages) > len(second) // 2  # the chat member was continued past page 1, not re-read
    assert "order: round-robin by each source's own rank" in pages[0].content[0].text
    assert tokens_seen(mail) == {"client_work_mail"}
    assert tokens_seen(chat) == {"client_chat"}
    # each member's hits cite its own RS
    assert {hit["url"].split("/v1/")[0] for hit in shown if hit["id"].startswith(CHAT)} == {chat.url}
    assert {hit["url"].split("/v1/")[0] for hit in shown if hit["id"].startswith(MAIL)} == {mail.url}


async def test_a_call_with_connection_id_reads_only_that_members_rs(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    async with package_gateway(sandbox_factory, tmp_path / ".pdpp") as (client, mail, chat):
        chat_page = await client.call_tool(
            "query_records", {"stream": "messages", "connection_id": CHAT, "limit": 2}
        )
        assert reads(mail, "/v1/") == []
        records = reads(chat, "/v1/streams/messages/records")
        assert records
        assert all(query.get("connection_id") == [CHAT] for query in records)
        assert tokens_seen(chat) == {"client_chat"}
        chat.calls.clear()
        mail_page = await client.call_tool(
            "query_records", {"stream": "threads", "connection_id": MAIL, "limit": 2}
        )
        unrouted = await client.call_tool("query_records", {"stream": "messages", "limit": 2})
        unknown = await client.call_tool("query_records", {"stream": "messages", "connection_id": "cin_nope"})
    assert not chat_page.is_error, chat_page.content
    assert not mail_page.is_error, mail_page.content
    assert reads(chat, "/v1/") == []
    assert tokens_seen(mail) == {"client_work_mail"}
    assert unrouted.is_error
    assert "ambiguous_connection" in unrouted.content[0].text
    assert unknown.is_error
    assert "connection_not_found" in unknown.content[0].text


def test_one_members_owner_token_stops_the_start_with_77(shared_sandbox: Any, tmp_path: Path) -> None:
    other_url = shared_sandbox.url.replace("127.0.0.1", "localhost")  # the same RS under a second name
    # unlabelled in the cache: the RS says owner
    done = start_two_members(shared_sandbox, tmp_path, other_url, shared_sandbox.tokens["owner"])
    assert done.returncode == 77, done.stderr
    assert done.stdout == ""  # not even the early answer to ping
    assert f"pdpp-gateway connect {other_url}" in done.stderr
    assert shared_sandbox.tokens["owner"] not in done.stderr
    assert {call.path for call in shared_sandbox.calls} == {"/v1/schema"}  # only the start-up checks


def test_a_member_without_a_cached_grant_stops_the_start_with_78(shared_sandbox: Any, tmp_path: Path) -> None:
    missing = "http://127.0.0.1:9"
    done = start_two_members(shared_sandbox, tmp_path, missing, None)
    assert done.returncode == 78
    assert done.stdout == ""
    assert f"pdpp-gateway connect {missing}" in done.stderr
    assert shared_sandbox.calls == []


async def test_a_package_file_names_the_members(sandbox_factory: Any, tmp_path: Path) -> None:
    cache_root = tmp_path / ".pdpp"
    mail, chat = await sandbox_factory(), await sandbox_factory()
    write_credential(cache_root, mail.url, mail.tokens["client_work_mail"])
    write_credential(cache_root, chat.url, chat.tokens["client_chat"])
    (cache_root / "packages").mkdir()
    (cache_root / "packages" / "work.json").write_text(json.dumps({"providers": [chat.url, mail.url]}))
    params = stdio_params(mail.url, cache_root, "--package", "work")
    params.args.remove("--provider-url")
    params.args.remove(mail.url)
    async with Client(params, mode="legacy", cache=None) as client:
        # a pinned mode's page interleaves the members round-robin, in member order
        result = await client.call_tool("search", {"query": "Lisbon", "mode": "lexical", "limit": 4})
    assert not result.is_error, result.content
    sources = [hit["id"].split("/", 1)[0] for hit in result.structured_content["results"]]
    assert sources == [CHAT, MAIL, CHAT, MAIL]  # the file's order is the member order


def test_a_bad_package_file_is_a_usage_error_in_one_line(tmp_path: Path) -> None:
    cache_root = tmp_path / ".pdpp"
    (cache_root / "packages").mkdir(parents=True)
    cases = {
        "absent": None,
        "notjson": "{providers",
        "shape": json.dumps(["https://a.example"]),
        "empty": json.dumps({"providers": []}),
        "twice": json.dumps({"providers": ["https://a.example", "https://a.example/"]}),
        "badurl": json.dumps({"providers": ["ftp://a.example"]}),
    }
    for name, content in cases.items():
        if content is not None:
            (cache_root / "packages" / f"{name}.json").write_text(content)
        done = run_cli("stdio", "--package", name, "--cache-root", str(cache_root))
        assert done.returncode == 64, (name, done.stderr)
        assert done.stdout == ""
        lines = [line for line in done.stderr.splitlines() if line.startswith("pdpp-gateway:")]
        assert len(lines) == 1, (name, done.stderr)
        assert "Traceback" not in done.stderr
    done = run_cli("stdio", "--package", "../clients/x", "--cache-root", str(cache_root))
    assert done.returncode == 64
    assert "invalid package name" in done.stderr
    done = run_cli(
        "stdio", "--package", "x", "--provider-url", "https://a.example", "--cache-root", str(cache_root)
    )
    assert done.returncode == 64
    assert "not both" in done.stderr


def test_a_member_the_rs_rejects_stops_the_start_with_78_before_any_frame(
    shared_sandbox: Any, tmp_path: Path
) -> None:
    other_url = shared_sandbox.url.replace("127.0.0.1", "localhost")
    # a 401, and no refresh token to renew it
    done = start_two_members(shared_sandbox, tmp_path, other_url, "sbx_not_a_grant_token")
    assert done.returncode == 78, done.stderr
    assert done.stdout == ""  # the early answer stayed held: the renewing recheck failed
    assert f"pdpp-gateway connect {other_url}" in done.stderr


async def test_a_member_unreachable_at_start_is_served_from_its_recorded_grant(
    shared_sandbox: Any, tmp_path: Path
) -> None:
    cache_root = tmp_path / ".pdpp"
    down = "http://127.0.0.1:9"
    write_credential(cache_root, shared_sandbox.url, shared_sandbox.tokens["client_work_mail"])
    recorded = [
        {
            "type": "https://pdpp.dev/data-access",
            "streams": [{"name": "notes", "instance_ids": ["cin_notes"]}],
        }
    ]
    write_credential(cache_root, down, "sbx_down_token", grant_id="grt_notes", authorization_details=recorded)
    params = stdio_params(shared_sandbox.url, cache_root, "--provider-url", down)
    async with Client(params, mode="legacy", cache=None) as client:
        search = await client.call_tool("search", {"query": "Lisbon", "limit": 4})
        routed = await client.call_tool("query_records", {"stream": "notes", "connection_id": "cin_notes"})
    assert not search.is_error, search.content
    assert {hit["id"].split("/", 1)[0] for hit in search.structured_content["results"]} == {MAIL}
    warnings = search.structured_content["data"]["meta"]["warnings"]
    assert any(
        w["code"] == "source_unavailable" and w["detail"].get("grant_id") == "grt_notes" for w in warnings
    )
    assert routed.is_error
    assert (
        "upstream_unavailable" in routed.content[0].text
    )  # routed to the down member, not connection_not_found


async def test_resources_read_from_the_member_their_uri_names(sandbox_factory: Any, tmp_path: Path) -> None:
    async with package_gateway(sandbox_factory, tmp_path / ".pdpp") as (client, mail, chat):
        listed = await client.list_resources()
        page = await client.call_tool(
            "query_records", {"stream": "messages", "connection_id": CHAT, "limit": 1}
        )
        record_id = page.structured_content["data"]["data"][0]["id"]  # type: ignore[index]
        handle = f"{CHAT}/messages:{record_id}"
        mail.calls.clear()
        chat.calls.clear()
        record = await client.read_resource(f"pdpp://record/{quote(handle, safe='')}")
        stream = await client.read_resource("pdpp://stream/threads")
    names = {resource.name for resource in listed.resources}
    assert {"messages", "threads"} <= names  # Slack's messages and the Work mail threads, one list
    assert json.loads(record.contents[0].text)["id"] == record_id  # type: ignore[union-attr]
    assert [call.path for call in chat.calls] == [f"/v1/streams/messages/records/{record_id}"]
    assert tokens_seen(chat) == {"client_chat"}
    assert len(stream.contents) == 1  # only the mail grant holds threads
    assert json.loads(stream.contents[0].text)["name"] == "threads"  # type: ignore[union-attr]
    assert [call.path for call in mail.calls] == ["/v1/streams/threads"]
    assert tokens_seen(mail) == {"client_work_mail"}


async def test_package_resource_reads_route_and_refuse_like_tool_calls(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    async with package_gateway(sandbox_factory, tmp_path / ".pdpp") as (client, mail, chat):
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("pdpp://record/" + quote("cin_nope/messages:m1", safe=""))
        assert mail.calls == chat.calls == []  # refused from membership alone
        both = await client.read_resource("pdpp://stream/messages")
    assert unknown.value.error.code == -32002  # a connection this package does not hold: not found
    assert unknown.value.error.data["code"] == "connection_not_found"
    assert unknown.value.error.message.startswith("connection_not_found: ")
    # both grants hold a messages stream: one content each, in member order, each with its own token
    assert [json.loads(c.text)["name"] for c in both.contents] == ["messages", "messages"]  # type: ignore[union-attr]
    assert (tokens_seen(mail), tokens_seen(chat)) == ({"client_work_mail"}, {"client_chat"})
