"""``json_bytes.encode`` writes a value as pydantic writes it, or not at all.

For any value a result may hold (JSON data, and the types orjson writes otherwise:
datetimes, tuples, string subclasses, non-string keys, integers past 64 bits), ``encode``
gives pydantic's own bytes (``pydantic_core.to_json``, what the SDK writes with) or
``None``; and for plain JSON data it never gives ``None``.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

import pydantic_core
from hypothesis import given
from hypothesis import strategies as st

from pdpp_gateway.wire.json_bytes import encode
from tests.wire.sdk import JSON_VALUES


class Kind(enum.StrEnum):
    LETTER = "letter"


ODD_LEAVES = (
    st.datetimes(timezones=st.just(UTC))
    | st.just(Kind.LETTER)
    | st.integers(min_value=2**64)
    | st.tuples(st.integers(), st.text())
)
VALUES = st.recursive(
    JSON_VALUES | ODD_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text() | st.integers(), inner, max_size=3),
    max_leaves=12,
)


@given(value=VALUES)
def test_encode_writes_pydantics_bytes_or_nothing(value: Any) -> None:
    written = encode(value)
    assert written is None or written == pydantic_core.to_json(value)


@given(value=JSON_VALUES)
def test_plain_json_data_is_always_written(value: Any) -> None:
    assert encode(value) == pydantic_core.to_json(value)


def test_a_datetime_is_left_to_pydantic() -> None:
    assert encode({"at": datetime(2026, 5, 1, tzinfo=UTC)}) is None
