"""``line_id.request_id`` reads a refused line's top-level id, or nothing, never more.

For any JSON object Hypothesis draws, the id it reads is the one Python's own parser
finds (an integer or a writable string), and ``None`` when there is none; nesting a
million deep and lines cut short, trailing text, duplicate ids or an unwritable id
give ``None`` or the true id, never an exception.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdpp_gateway.wire.line_id import request_id

LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
)
IDS = st.integers() | st.text() | st.floats(allow_nan=False) | st.none() | st.lists(st.integers(), max_size=2)


def _expected(message: dict[str, Any]) -> int | str | None:
    value = message.get("id")
    if type(value) is int or (isinstance(value, str) and value.encode("utf-8", "replace").decode() == value):
        return value
    return None


@given(members=st.dictionaries(st.text(), VALUES, max_size=5), identity=IDS, with_id=st.booleans())
def test_reads_the_id_python_reads_in_any_object(
    members: dict[str, Any], identity: Any, with_id: bool
) -> None:
    message = {**members, "id": identity} if with_id else {k: v for k, v in members.items() if k != "id"}
    for ensure_ascii in (True, False):
        line = json.dumps(message, ensure_ascii=ensure_ascii)
        assert request_id(line) == _expected(message)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"jsonrpc":"2.0","id":9,"params":{"x":' + "[" * 1_000_000 + "]" * 1_000_000 + "}}", 9),
        ('{"params":{"x":' + "{" * 100_000 + "}" * 100_000 + '},"id":"after"}', "after"),
        ('{"id":3,"x":"\\ud800"}', 3),  # the surrogate is not in the id: the id is readable
        ('{"id":"\\ud800"}', None),  # an id that cannot be written back as UTF-8
        ('{"id":1,"id":2}', None),
        ('{"id":1} {"id":2}', None),
        ('{"id":12', None),  # cut short: 12 may be the start of 123
        ('{"id":7,"p":[' + "[" * 1000, None),
        ('{"id":' + "9" * 5000 + "}", None),  # past Python's digit bound
        ("[" * 1_000_000, None),
        ('{"p":[' + ",".join(["[]"] * 200_000) + '],"id":5}', None),  # past the work bound
    ],
    ids=lambda value: str(value)[:24],
)
def test_hostile_lines_give_their_id_or_none(line: str, expected: int | str | None) -> None:
    assert request_id(line) == expected
