"""A gateway that is not PDPP reuses every stage of ``mcp_gateway_middleware``, over real HTTP.

The library's example, the notes gateway (``middleware/src/mcp_gateway_middleware/examples/notes_gateway.py``), is
served by aiohttp on 127.0.0.1; each test is one thing a caller of that gateway would
notice: an answer, a merge across shelves, or a refusal with the status and code of the
stage that decided it. (``test_installs_alone`` runs it from a fresh virtual environment.)
"""

from __future__ import annotations

import runpy
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp_gateway_middleware.ratelimit import Rate

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "middleware/src/mcp_gateway_middleware/examples/notes_gateway.py"
)


# The example is a script, not in a package: its names, as ``python notes_gateway.py`` would define them.
notes_gateway = runpy.run_path(str(EXAMPLE), run_name="notes_gateway")
Account, Shelf, build_app = notes_gateway["Account"], notes_gateway["Shelf"], notes_gateway["build_app"]

KEY = "key-alice-7f3a"
JSON = {"Accept": "application/json"}


def bearer(key: str) -> dict[str, str]:
    return {**JSON, "Authorization": f"Bearer {key}"}


@pytest.fixture
def shelves() -> tuple[Shelf, Shelf]:
    return Shelf("home", {"Bread": "flour, water, salt"}), Shelf("work", {"Budget": "water cooler refill"})


@pytest.fixture
async def client(aiohttp_client: Any, shelves: tuple[Shelf, Shelf]) -> Any:
    keys = {
        KEY: Account("alice", "writer", shelves),
        "key-bob": Account("bob", "reader", shelves),
        "key-ops": Account("ops", "admin", shelves),
    }
    return await aiohttp_client(build_app(keys, rate=Rate(0.01, 5), max_body_bytes=512))


async def call(client: Any, tool: str, key: str = KEY, **arguments: Any) -> tuple[int, dict[str, Any]]:
    response = await client.post("/call", json={"tool": tool, "arguments": arguments}, headers=bearer(key))
    return response.status, await response.json()


async def test_a_writer_adds_a_note_and_a_search_merges_every_shelf(client: Any) -> None:
    status, added = await call(client, "add_note", title=" Water bill ", body="due Friday", shelf="work")
    assert (status, added["is_error"]) == (200, False)
    assert added["text"] == "Added 'Water bill' to shelf 'work'."  # as its parser read it: trimmed
    status, found = await call(client, "search", query="WATER")
    assert status == 200
    assert found["structured"] == {"hits": ["Bread", "Budget", "Water bill"], "unavailable": []}
    assert found["text"] == "3 note(s) match 'WATER': Bread, Budget, Water bill."


async def test_an_offline_shelf_leaves_a_partial_answer_that_names_it(
    client: Any, shelves: tuple[Shelf, Shelf]
) -> None:
    shelves[1].offline = True
    _, found = await call(client, "search", query="water")
    assert found["structured"] == {"hits": ["Bread"], "unavailable": ["work"]}
    assert found["text"].endswith("Not searched (offline): work.")
    shelves[0].offline = True
    _, none = await call(client, "search", query="water")
    assert none["is_error"]
    assert none["structured"]["error"]["code"] == "shelves_unavailable"


async def test_a_broken_shelf_is_contained_without_a_traceback(
    client: Any, shelves: tuple[Shelf, Shelf]
) -> None:
    shelves[0].broken = True
    _, answer = await call(client, "search", query="water")
    assert answer["is_error"]
    assert answer["structured"]["error"]["code"] == "internal_error"
    assert "corrupted" not in answer["text"]
    assert "Traceback" not in answer["text"]


@pytest.mark.parametrize(
    ("authorization", "code"),
    [(None, "missing_key"), ("Basic a2V5", "missing_key"), ("Bearer key-mallory", "unknown_key")],
)
async def test_no_known_key_is_refused_before_any_tool(
    client: Any, shelves: tuple[Shelf, Shelf], authorization: str | None, code: str
) -> None:
    headers = dict(JSON) if authorization is None else {**JSON, "Authorization": authorization}
    body = {"tool": "add_note", "arguments": {"title": "Sneaky", "body": "x"}}
    response = await client.post("/call", json=body, headers=headers)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert (await response.json())["error"]["code"] == code
    assert "Sneaky" not in shelves[0].notes


async def test_an_admin_key_is_refused_at_the_door(client: Any) -> None:
    status, body = await call(client, "search", key="key-ops", query="water")
    assert status == 403
    assert body["error"] == {
        "code": "key_kind_refused",
        "message": "A admin key cannot call this API; use a writer or reader key.",
    }


async def test_a_reader_may_search_but_not_write(client: Any, shelves: tuple[Shelf, Shelf]) -> None:
    status, found = await call(client, "search", key="key-bob", query="bread")
    assert (status, found["structured"]["hits"]) == (200, ["Bread"])
    status, refused = await call(client, "add_note", key="key-bob", title="Mine", body="x")
    assert (status, refused["is_error"]) == (200, True)
    assert refused["text"] == "read_only_key: A reader key can search but not write; use a writer key."
    assert "Mine" not in shelves[0].notes


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"Accept": ""}, 406, "not_acceptable"),
        ({"Accept": "text/html"}, 406, "not_acceptable"),
        ({"Accept": "application/json;q=0, */*"}, 406, "not_acceptable"),
        ({"Accept": "application/*;q=0, application/json;q=0.5"}, 200, None),
        ({"Accept": "*/*"}, 200, None),
        ({"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        ({"Content-Encoding": "gzip"}, 415, "unsupported_content_encoding"),
        ({"Content-Length": "99999"}, 413, "request_too_large"),
    ],
)
async def test_what_the_headers_show_is_refused_before_the_key_is_looked_at(
    client: Any, headers: dict[str, str], status: int, code: str | None
) -> None:
    data = b'{"tool": "search", "arguments": {"query": "bread"}}'
    sent = {**bearer(KEY), "Content-Type": "application/json", **headers}
    if status != 200:
        sent.pop("Authorization")  # refused on shape first: no key needed to learn that
    response = await client.post("/call", data=data, headers=sent)
    assert response.status == status
    if code is not None:
        assert (await response.json())["error"]["code"] == code


async def test_an_undeclared_body_over_the_cap_is_refused_while_read(
    client: Any, shelves: tuple[Shelf, Shelf]
) -> None:
    async def chunks() -> AsyncIterator[bytes]:  # chunked: no Content-Length to check up front
        yield b'{"tool": "add_note", "arguments": {"title": "Long", "body": "'
        yield b"x" * 1000 + b'"}}'

    headers = {**bearer(KEY), "Content-Type": "application/json"}
    response = await client.post("/call", data=chunks(), headers=headers)
    assert response.status == 413
    assert (await response.json())["error"]["code"] == "request_too_large"
    assert "Long" not in shelves[0].notes


async def test_invalid_arguments_get_a_typed_error_naming_the_argument(client: Any) -> None:
    _, wrong_type = await call(client, "search", query=5)
    error = wrong_type["structured"]["error"]
    assert (error["code"], error["param"]) == ("invalid_arguments", "query")
    _, blank = await call(client, "add_note", title="  ", body="x")
    assert blank["structured"]["error"]["code"] == "blank_title"
    _, unknown = await call(client, "add_note", title="T", body="x", shelf="attic")
    assert unknown["text"] == "unknown_shelf: No shelf 'attic'; choose one of home, work."


async def test_an_unknown_tool_is_named_back_bounded(client: Any) -> None:
    _, answer = await call(client, "x" * 300)
    assert answer["structured"]["error"]["code"] == "unknown_tool"
    assert len(answer["text"]) < 160
    assert answer["text"].endswith(
        "(300 characters); the tools are search and add_note."
    )  # its length, not its repr's


async def test_a_caller_over_its_rate_is_told_when_to_retry(client: Any) -> None:
    statuses = [(await call(client, "search", query="bread"))[0] for _ in range(6)]
    assert statuses == [200] * 5 + [429]
    response = await client.post(
        "/call", json={"tool": "search", "arguments": {"query": "b"}}, headers=bearer(KEY)
    )
    assert (await response.json())["error"]["code"] == "rate_limited"
    assert int(response.headers["Retry-After"]) >= 99
    assert (await call(client, "search", key="key-bob", query="bread"))[0] == 200  # bob has his own bucket


def test_the_example_imports_nothing_from_pdpp_gateway() -> None:
    probe = f"import runpy, sys; runpy.run_path({str(EXAMPLE)!r}); print([m for m in sys.modules if m.startswith('pdpp_gateway')])"
    root = Path(__file__).parents[2]
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=root)  # noqa: S603
    assert done.stdout.strip() == "[]"
