"""Values written as compact JSON, byte for byte as pydantic writes them, or not at all.

Contract: ``encode(value)`` is ``value`` written by orjson, or ``None`` when it holds a
value orjson would write differently from pydantic's JSON mode (datetimes, dataclasses,
subclasses of JSON types, non-string keys, integers beyond 64 bits, strings that are not
UTF-8); then only the SDK's serialiser may write it. Both fast paths write results and
errors with it; ``tests/wire`` holds it to pydantic's bytes.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

# Types orjson would write differently from pydantic's JSON mode make it raise instead.
_STRICT: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def encode(value: Any) -> bytes | None:
    """``value`` as compact JSON, byte for byte as pydantic writes it, or ``None``."""
    try:
        return orjson.dumps(value, option=_STRICT)
    except TypeError:
        return None
