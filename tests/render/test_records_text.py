"""``query_records`` text, as a pure function of the page: record JSON, handles, bounds.

What a model reads for each record: its handle, then its data as compact JSON exactly as
the RS sent it, except long strings (cut with ``…[+N chars]``), lists past 10 items (cut
with ``…[+N items]``) and blobs (a summary with the readable ``pdpp://blob/`` URI). A
record that needs none of that is shown verbatim; the property test then checks, for any
JSON page, that the text never raises, stays within its budget when the lines above the
records are short, and accounts for every record.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_gateway_middleware import ToolResult

from pdpp_gateway.render.records import BUDGET, render_records
from pdpp_gateway.tools.args import parse_query_records

CONNECTION = "cin_mail_work"


def _render(records: list[Any], **page: Any) -> str:
    arguments = {"stream": "messages", "limit": max(1, len(records))}
    body = {"data": records, "has_more": False, **page}
    return render_records(parse_query_records(arguments), ToolResult({"data": body}))


def _record(record_id: str, data: Any, **extra: Any) -> dict[str, Any]:
    return {"id": record_id, "stream": "messages", "connection_id": CONNECTION, "data": data, **extra}


def test_a_record_needing_no_cut_is_its_data_verbatim() -> None:
    data = {"subject": "Lease", "to": ["a@x.test"] * 10, "size": 3, "ok": True, "r": 1.5, "n": None}
    text = _render([_record("m1", data)])
    assert f"[1] {CONNECTION}/messages:m1 {orjson.dumps(data).decode()}" in text.splitlines()
    assert "Long fields" not in text


def test_a_list_past_ten_items_and_a_long_string_are_cut_visibly() -> None:
    data = {"to": [f"p{n}@x.test" for n in range(11)], "body": "b" * 161, "nested": {"note": "n" * 200}}
    line = _render([_record("m1", data)]).splitlines()[1]
    assert '"p9@x.test","…[+1 items]"]' in line
    assert f'"body":"{"b" * 160}…[+1 chars]"' in line
    assert f'"nested":{{"note":"{"n" * 160}…[+40 chars]"}}' in line
    hint = _render([_record("m1", data)]).splitlines()[-1]
    # Only a top-level field has a read_record_field hint (a nested path is not a field).
    assert hint.endswith(f'read_record_field {{"id":"{CONNECTION}/messages:m1","field":"body"}}')


def test_blobs_are_summarised_at_the_top_level_and_inside_the_data() -> None:
    blob = {"blob_id": "blb_1", "mime_type": "image/png", "size_bytes": 42}
    text = _render([_record("m1", {"cover": blob, "name": "x"}), _record("m2", blob)])
    summary = f'{{"blob":"image/png","size_bytes":42,"uri":"pdpp://blob/{CONNECTION}/blb_1"}}'
    assert f'[1] {CONNECTION}/messages:m1 {{"cover":{summary},"name":"x"}}' in text
    assert f"[2] {CONNECTION}/messages:m2 {summary}" in text


def test_a_source_that_cannot_sit_in_a_handle_travels_beside_it_on_every_record() -> None:
    odd = [
        {"id": "a1", "stream": "messages", "connection_id": "c:1", "data": {}},
        {"id": "a2", "stream": "messages", "connection_id": "c:1", "data": {}},
        {"id": "a3", "stream": "mess..ages", "connection_id": CONNECTION, "data": {}},
        {"id": "a/4", "stream": "messages", "connection_id": CONNECTION, "data": {}},
        {"id": "a5", "stream": "messages", "connection_id": CONNECTION, "data": {}},
    ]
    lines = _render(odd).splitlines()[1:6]
    assert lines == [
        "[1] messages:a1 connection_id=c:1 {}",
        "[2] messages:a2 connection_id=c:1 {}",
        f"[3] mess..ages:a3 connection_id={CONNECTION} {{}}",
        f"[4] messages:a/4 connection_id={CONNECTION} {{}}",
        f"[5] {CONNECTION}/messages:a5 {{}}",
    ]


# Text without line breaks: a raw newline in a deleted record's id would start a line of its own.
TEXT = st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=40)
SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | TEXT
    | st.sampled_from(["", "..", "a/b", "c:1", "x\x01", "title"])
    | st.integers(min_value=150, max_value=3_000).map(lambda n: "w" * n)
)
VALUE = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=14)
        | st.dictionaries(
            st.sampled_from(["title", "subject", "sent_at", "x_at", "blob_id", "a.b", "k"]), inner
        )
        | st.dictionaries(st.text(max_size=6), inner, max_size=6)
    ),
    max_leaves=30,
)
RECORD = st.fixed_dictionaries(
    {"id": SCALAR},
    optional={
        "stream": SCALAR,
        "connection_id": SCALAR | st.just(CONNECTION),
        "deleted": st.booleans(),
        "deleted_at": SCALAR,
        "data": VALUE,
        "expanded": VALUE,
    },
)
# Derandomised in CI; JSON pages are large and slow to draw by design.
PAGES = settings(
    deadline=None,
    derandomize=bool(os.environ.get("CI")),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PAGE = st.fixed_dictionaries(
    {"data": st.lists(RECORD | SCALAR, max_size=120), "has_more": st.booleans()},
    optional={"next_cursor": TEXT, "meta": st.just({"count": {"kind": "exact", "value": 9}})},
)


# The optional arguments the text reacts to, as validation accepts them.
ASKED: dict[str, Any] = {"limit": 5, "fields": ["subject"], "cursor": "c5"}


@settings(PAGES, max_examples=150)
@given(PAGE, st.sets(st.sampled_from(sorted(ASKED))))
def test_any_json_page_renders_within_budget_and_accounts_for_every_record(
    page: dict[str, Any], extra: set[str]
) -> None:
    asked = {name: value for name, value in ASKED.items() if name in extra}
    text = render_records(parse_query_records({"stream": "messages", **asked}), ToolResult({"data": page}))
    assert len(text) <= BUDGET + 4  # the lines above the records are short here
    total = sum(isinstance(record, dict) for record in page["data"])
    lines = text.splitlines()
    listed = sum(any(line.startswith(f"[{n}] ") for line in lines) for n in range(1, total + 1))
    assert lines[0].startswith(f"query_records stream=messages: {total} record(s)")
    if listed < total:
        assert f"Records {listed + 1}–{total} ({total - listed}) are not listed" in text


LONG = st.text(min_size=0, max_size=2_000)
RS_HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "warnings": st.lists(st.fixed_dictionaries({"code": LONG, "message": LONG}), max_size=60),
        "window": st.dictionaries(st.text(max_size=20), LONG, max_size=8),
        "count": st.fixed_dictionaries({"kind": st.just("exact"), "value": st.integers()}),
    },
)
MERGED = st.lists(
    st.fixed_dictionaries({"connection_id": LONG, "display_name": LONG, "connector_key": LONG}), max_size=12
)


@settings(PAGES, max_examples=100)
@given(PAGE, RS_HEADERS, MERGED, st.booleans())
def test_what_an_rs_says_above_the_records_cannot_push_the_text_past_its_budget(
    page: dict[str, Any], meta: dict[str, Any], merged: list[dict[str, Any]], fan_in: bool
) -> None:
    """Warnings, the window and merged sources' names come from the RS, in any number and
    length; only the cursor must stay verbatim (the next call needs it whole)."""
    page = {**page, "meta": meta}
    if fan_in:
        page = {**page, "has_more": True, "next_cursor": None}
    asked = parse_query_records({"stream": "messages"})
    text = render_records(asked, ToolResult({"data": page, "merged_connections": merged}))
    verbatim = len(str(page.get("next_cursor") or "")) * 2  # the cursor line and the next call both carry it
    assert len(text) <= BUDGET + verbatim
    if meta.get("warnings"):
        assert f"warning {meta['warnings'][0]['code']}"[:200] in text


def test_forty_long_warnings_and_long_source_names_still_leave_a_bounded_text() -> None:
    warnings = [{"code": f"code_{n % 4}", "message": "m" * 1_000} for n in range(40)]
    merged = [
        {"connection_id": f"cin_{n}", "display_name": "n" * 1_000, "connector_key": "k" * 1_000}
        for n in range(12)
    ]
    page = {
        "data": [{"id": f"r{n}", "data": {"subject": "s"}} for n in range(5)],
        "has_more": False,
        "meta": {"warnings": warnings, "window": {"from": "x" * 5_000}},
    }
    asked = parse_query_records({"stream": "messages"})
    text = render_records(asked, ToolResult({"data": page, "merged_connections": merged}))
    assert len(text) <= BUDGET
    assert text.count("\nwarning code_") == 5
    assert "+35 more warning(s) in the structured output: code_1, code_2, code_3, code_0" in text
    assert "[5] messages:r4" in text  # the records still listed
