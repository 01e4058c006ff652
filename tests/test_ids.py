"""Record handles: every accepted form parses; every malformed or traversing one is refused."""

from __future__ import annotations

import base64

import orjson
import pytest
from mcp_gateway_middleware import ToolError

from pdpp_gateway.ids import (
    MAX_SEGMENT_CHARS,
    RecordRef,
    _short_source_fits,
    format_handle,
    handle_arguments,
    parse_handle,
    resolve_connection,
)


def _b64(payload: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(payload)).decode().rstrip("=")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("cin_work/messages:m1", RecordRef("messages", "m1", "cin_work")),
        ("messages:m1", RecordRef("messages", "m1", None)),
        ('cin_a/issues:["repo","42"]', RecordRef("issues", '["repo","42"]', "cin_a")),
        ("cin_a/events:2026-01-01T10:00:00Z", RecordRef("events", "2026-01-01T10:00:00Z", "cin_a")),
        ("pdpp://record/cin_a%2Fmessages%3Am1", RecordRef("messages", "m1", "cin_a")),
        ("pdpp://record/messages%3Am1", RecordRef("messages", "m1", None)),
        (
            "pdpp://record/"
            + _b64({"v": 1, "kind": "record", "connection_id": "cin_a", "stream": "s", "record_id": "r"}),
            RecordRef("s", "r", "cin_a"),
        ),
    ],
)
def test_accepted_forms(raw: str, expected: RecordRef) -> None:
    assert parse_handle(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "noseparator",
        "orders:",
        ":o1",
        "cin_a/",
        "/orders:o1",
        "cin_a/orders",
        "cin_a/extra/orders:o1",
        "orders:../../etc/passwd",
        "cin_a/orders:../../etc/passwd",
        "../cin_a/orders:o1",
        "..:x",
        "orders:a\\b",
        "orders:a\x00b",
        "pdpp://record/" + _b64({"v": 2, "kind": "record", "stream": "s", "record_id": "r"}),
        "pdpp://record/" + _b64({"v": 1, "kind": "record", "stream": "s", "record_id": ".."}),
        "pdpp://record/cin_a%2F..%2Fx%3Ay",
    ],
)
def test_malformed_or_traversing_handles_are_refused(raw: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_handle(raw)
    assert caught.value.code == "invalid_id"
    assert (
        "stream:record_id" in caught.value.envelope["message"] or "handle" in caught.value.envelope["message"]
    )


def test_non_string_id_is_refused() -> None:
    with pytest.raises(ToolError):
        parse_handle(42)


@pytest.mark.parametrize(
    ("stream", "record", "connection", "expected"),
    [
        ("messages", "m1", "cin_a", "cin_a/messages:m1"),
        ("messages", "m1", None, "messages:m1"),
        ("messages", "m1", "https://x/y", "messages:m1"),  # cannot survive the grammar: not wrapped
        ("messages", "m1", "a:b", "messages:m1"),
        ("messages", "a/b", "cin_a", "messages:a/b"),
    ],
)
def test_format_handle_only_wraps_what_parses_back(
    stream: str, record: str, connection: str | None, expected: str
) -> None:
    handle = format_handle(stream, record, connection)
    assert handle == expected
    if connection and handle.startswith(f"{connection}/"):
        assert parse_handle(handle) == RecordRef(stream, record, connection)


def test_format_handle_checks_each_source_once_and_keeps_no_oversized_one() -> None:
    """A page repeats its connection and stream, so their check is remembered; a segment
    longer than any handle allows is refused without being remembered (an RS answer
    cannot make the gateway hold megabytes of ids)."""
    _short_source_fits.cache_clear()
    for n in range(50):
        assert format_handle("messages", f"m{n}", "cin_a") == f"cin_a/messages:m{n}"
    assert _short_source_fits.cache_info().currsize == 1
    huge = "c" * (MAX_SEGMENT_CHARS + 1)
    assert format_handle("messages", "m1", huge) == "messages:m1"
    assert handle_arguments("messages", "m1", huge) == {"id": "messages:m1", "connection_id": huge}
    assert format_handle("s" * (MAX_SEGMENT_CHARS + 1), "m1", "cin_a").endswith(":m1")
    assert _short_source_fits.cache_info().currsize == 1
    edge = "c" * MAX_SEGMENT_CHARS  # the longest segment the grammar allows still fits
    assert format_handle("messages", "m1", edge) == f"{edge}/messages:m1"


def test_record_uri_round_trips() -> None:
    ref = RecordRef("messages", "thr:1", "cin_a")
    assert parse_handle(ref.uri) == ref


def test_conflicting_connection_handles_are_refused() -> None:
    ref = parse_handle("cin_a/messages:m1")
    assert resolve_connection(ref, None) == "cin_a"
    assert resolve_connection(ref, "cin_a") == "cin_a"
    with pytest.raises(ToolError) as caught:
        resolve_connection(ref, "cin_b")
    assert caught.value.code == "conflicting_connection_id"
    assert resolve_connection(parse_handle("messages:m1"), "cin_b") == "cin_b"
