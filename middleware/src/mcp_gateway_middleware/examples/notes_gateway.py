"""A gateway that is not PDPP, built from every stage of ``mcp_gateway_middleware``: a notes API.

It shows what another gateway supplies to reuse the stages, and needs nothing but the
library (``pip install './middleware[http]'``). Callers hold API keys
(``Authorization: Bearer <key>``); a key belongs to an ``Account`` of one kind: ``writer``
(search and add notes), ``reader`` (search only) or ``admin`` (an operator key, never
allowed on this public API). An account's notes live on ``Shelf`` objects, which stand in
for upstreams: one may be offline (a typed error) or broken (a defect).

``POST /call`` with ``{"tool": "search" | "add_note", "arguments": {...}}`` answers
``{"text", "structured", "is_error"}``. A refusal before any tool runs is
``{"error": {"code", "message"}}`` with its HTTP status.

The HTTP stages, outermost first (``mcp_gateway_middleware.http``, ``.ratelimit``):
``shape_checks`` (Accept, Content-Type, Content-Encoding, declared size) →
``bearer_check`` (the key to an ``Account``) → ``refuse_token_kinds`` (``admin``) →
``rate_limit`` (per account). The tool stages: ``RenderContent`` → ``PreserveErrors`` →
``RefuseTokenKinds`` (``reader``, on writes only) → ``ValidateArguments`` → ``FanOut`` (a
search runs on every shelf and the hits are merged) → the tools.

Run it: ``python notes_gateway.py --keys keys.json [--host 127.0.0.1] [--port 8080]``, where
``keys.json`` is ``{"<API key>": {"name": "alice", "kind": "writer"}, ...}`` (keys stay off
the command line); every account shares the shelves ``home`` and ``work``. It prints the
URL it serves on (``--port 0`` picks a free port) and stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, NamedTuple

from aiohttp import web
from mcp_gateway_middleware import (
    FanOut,
    Middleware,
    Next,
    Outcome,
    PreserveErrors,
    RefuseTokenKinds,
    RenderContent,
    ToolCall,
    ToolError,
    ToolResult,
    ValidateArguments,
    compose,
    echo,
    gateway_error,
)
from mcp_gateway_middleware.doors import Refusal
from mcp_gateway_middleware.http import bearer_check, rate_limit, refuse_token_kinds, shape_checks
from mcp_gateway_middleware.ratelimit import Decision, LocalLimiter, Rate

UNLIMITED: Final = Rate(0, 0)
WRITES: Final = frozenset({"add_note"})
KINDS: Final = ("writer", "reader", "admin")


@dataclass
class Shelf:
    """Where notes live: one upstream of the example."""

    name: str
    notes: dict[str, str] = field(default_factory=dict)  # title -> body
    offline: bool = False
    broken: bool = False

    def search(self, query: str) -> list[str]:
        if self.broken:
            raise RuntimeError(f"shelf {self.name} index corrupted")
        if self.offline:
            raise gateway_error(
                "shelf_unavailable", f"Shelf {self.name!r} is offline; retry later.", type_="api_error"
            )
        return sorted(title for title, body in self.notes.items() if query.lower() in (title + body).lower())


@dataclass(frozen=True, slots=True)
class Account:
    """An accepted caller: who, of which kind, reading which shelves (never the key)."""

    name: str
    kind: str  # writer, reader or admin
    shelves: tuple[Shelf, ...]


@dataclass(frozen=True, slots=True)
class Seat:
    """The tool pipeline's context: the caller, and the one shelf a routed call reads."""

    account: Account
    shelf: Shelf | None = None


ACCOUNT: Final = web.RequestKey("notes_account", Account)
SCHEMAS: Final = {
    "search": {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 100}},
        "required": ["query"],
        "additionalProperties": False,
    },
    "add_note": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 80},
            "body": {"type": "string", "maxLength": 2000},
            "shelf": {"type": "string"},
        },
        "required": ["title", "body"],
        "additionalProperties": False,
    },
}


def refused(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status, headers=headers)


def refused_shape(request: web.Request, refusal: Refusal) -> web.Response:
    return refused(refusal.status, refusal.code, refusal.message, refusal.headers())


def build_app(
    keys: Mapping[str, Account], *, rate: Rate = UNLIMITED, max_body_bytes: int = 4096
) -> web.Application:
    """The notes gateway: ``keys`` maps each API key to its account."""

    async def authenticate(header: str | None) -> Account | Refusal:
        scheme, _, key = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return Refusal(401, "missing_key", "Send your API key: Authorization: Bearer <key>.")
        account = keys.get(key.strip())
        if account is None:
            return Refusal(401, "unknown_key", "This API key is not known here; ask for a new one.")
        return account

    def refuse_key(request: web.Request, refusal: Refusal) -> web.Response:
        return refused(refusal.status, refusal.code, refusal.message, refusal.headers())

    def refuse_kind(request: web.Request, kind: str | None) -> web.Response:
        return refused(
            403, "key_kind_refused", f"A {kind} key cannot call this API; use a writer or reader key."
        )

    def refuse_rate(request: web.Request, decision: Decision) -> web.Response:
        wait = decision.retry_after_seconds
        return refused(429, "rate_limited", f"Too many calls; retry in {wait} s.", {"Retry-After": str(wait)})

    limiter = LocalLimiter(rate, UNLIMITED)
    reads, writes = tool_pipelines()

    async def call(request: web.Request) -> web.Response:
        try:
            message = await request.json()
        except ValueError:
            return refused(400, "invalid_json", 'Send one JSON object: {"tool": ..., "arguments": {...}}.')
        except web.HTTPRequestEntityTooLarge:  # undeclared (chunked) and over the cap once read
            return refused(413, "request_too_large", f"The body is larger than {max_body_bytes} bytes.")
        if not isinstance(message, dict) or not isinstance(message.get("arguments", {}), dict):
            return refused(400, "invalid_call", 'Send {"tool": <name>, "arguments": <object>}.')
        tool = str(message.get("tool"))
        pipeline = writes if tool in WRITES else reads
        result = await pipeline(ToolCall(tool, message.get("arguments", {}), Seat(request[ACCOUNT])))
        return web.json_response(
            {"text": result.text, "structured": result.structured, "is_error": result.is_error}
        )

    app = web.Application(
        middlewares=[
            shape_checks(max_body_bytes=max_body_bytes, refuse=refused_shape),
            bearer_check(
                authenticate,
                refuse_key,
                ACCOUNT,
                rejection=Refusal,
                duplicate=Refusal(400, "two_keys", "Send one Authorization header."),
            ),
            refuse_token_kinds(lambda account: account.kind, {"admin"}, refuse_kind, ACCOUNT),
            rate_limit(limiter, lambda request: request[ACCOUNT].name, refuse_rate),
        ],
        client_max_size=max_body_bytes,
    )
    app.router.add_post("/call", call)
    return app


def tool_pipelines() -> tuple[Next[Seat], Next[Seat]]:
    """The tool stages around the tools: one chain for reads, one (refusing readers) for writes."""
    validate = ValidateArguments(SCHEMAS, {"add_note": [_title_not_blank]}, parsers={"add_note": _note})
    around: list[Middleware[Seat]] = [
        RenderContent[Seat]({"search": _render_hits, "add_note": _render_added}, _render_error),
        PreserveErrors[Seat](),
    ]
    reads = compose([*around, validate, FanOut[Seat](_every_shelf, _merge_hits)], _tools)
    writer_only = RefuseTokenKinds[Seat](lambda call: call.context.account.kind, {"reader"}, _kind_error)
    writes = compose([*around, writer_only, validate], _tools)
    return reads, writes


async def _tools(call: ToolCall[Seat]) -> ToolResult:
    account = call.context.account
    if call.name == "search":
        shelf = call.context.shelf or account.shelves[0]
        return ToolResult({"shelf": shelf.name, "hits": shelf.search(call.arguments["query"])})
    if call.name == "add_note":
        note = call.parsed
        assert isinstance(note, Note)  # the validation stage parsed it
        name = note.shelf or account.shelves[0].name
        target = next((shelf for shelf in account.shelves if shelf.name == name), None)
        if target is None:
            choices = ", ".join(shelf.name for shelf in account.shelves)
            raise gateway_error(
                "unknown_shelf", f"No shelf {name!r}; choose one of {choices}.", param="shelf"
            )
        target.notes[note.title] = note.body
        return ToolResult({"shelf": target.name, "title": note.title})
    raise gateway_error("unknown_tool", f"No tool {echo(call.name)}; the tools are search and add_note.")


class Note(NamedTuple):
    """``add_note``'s arguments, parsed once by the validation stage (its title trimmed)."""

    shelf: str | None
    title: str
    body: str


def _note(arguments: Mapping[str, Any]) -> Note:
    return Note(arguments.get("shelf"), arguments["title"].strip(), arguments["body"])


def _title_not_blank(arguments: Mapping[str, Any]) -> ToolError | None:
    title = arguments.get("title")
    if isinstance(title, str) and not title.strip():
        return gateway_error("blank_title", "The title is blank; give the note a title.", param="title")
    return None


def _kind_error(kind: str | None) -> ToolError:
    return gateway_error("read_only_key", f"A {kind} key can search but not write; use a writer key.")


def _every_shelf(call: ToolCall[Seat]) -> Sequence[ToolCall[Seat]] | None:
    """A search runs on each of the caller's shelves (routed or already routed: untouched)."""
    if call.name != "search" or call.context.shelf is not None:
        return None
    return [
        replace(call, context=replace(call.context, shelf=shelf)) for shelf in call.context.account.shelves
    ]


def _merge_hits(
    call: ToolCall[Seat], sub_calls: Sequence[ToolCall[Seat]], outcomes: Sequence[Outcome]
) -> ToolResult:
    """Every shelf's hits in one list ordered by title; an offline shelf is named, not fatal."""
    hits: list[str] = []
    missing: list[str] = []
    for sub, outcome in zip(sub_calls, outcomes, strict=True):
        assert sub.context.shelf is not None
        if isinstance(outcome, ToolError):
            missing.append(sub.context.shelf.name)
        else:
            hits.extend(outcome.structured["hits"])
    if missing and not hits:
        raise gateway_error("shelves_unavailable", f"No shelf answered ({', '.join(missing)}); retry later.")
    return ToolResult({"hits": sorted(hits), "unavailable": missing})


def _render_hits(call: ToolCall[Seat], result: ToolResult) -> str:
    hits = result.structured["hits"]
    text = f"{len(hits)} note(s) match {call.arguments['query']!r}: {', '.join(hits) or 'none'}."
    missing = result.structured.get("unavailable")
    return f"{text} Not searched (offline): {', '.join(missing)}." if missing else text


def _render_added(call: ToolCall[Seat], result: ToolResult) -> str:
    return f"Added {result.structured['title']!r} to shelf {result.structured['shelf']!r}."


def _render_error(call: ToolCall[Seat], result: ToolResult) -> str:
    error = result.structured["error"]
    return f"{error['code']}: {error['message']}"


def load_keys(path: Path, shelves: tuple[Shelf, ...]) -> dict[str, Account]:
    """The accounts of ``keys.json``, each reading ``shelves``; a malformed file is a clear error."""
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"notes gateway: cannot read the keys file {path}: {error}") from None
    keys: dict[str, Account] = {}
    for number, (key, entry) in enumerate(listed.items() if isinstance(listed, dict) else [], start=1):
        if not (
            isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry.get("kind") in KINDS
        ):
            raise SystemExit(
                f"notes gateway: entry {number} of {path} must be "
                f'{{"name": <string>, "kind": {" | ".join(KINDS)}}}.'
            )
        keys[key] = Account(entry["name"], entry["kind"], shelves)
    if not keys:
        raise SystemExit(
            f'notes gateway: {path} lists no keys; write {{"<API key>": {{"name": ..., "kind": ...}}}}.'
        )
    return keys


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the notes gateway (POST /call).")
    parser.add_argument("--keys", type=Path, required=True, help="JSON file: API key -> {name, kind}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    options = parser.parse_args(argv)
    app = build_app(load_keys(options.keys, (Shelf("home"), Shelf("work"))), rate=Rate(5, 20))
    with socket.create_server((options.host, options.port)) as listening:
        print(f"notes gateway on http://{options.host}:{listening.getsockname()[1]}/call", flush=True)
        web.run_app(app, sock=listening, print=None, access_log=None)


if __name__ == "__main__":
    main()
