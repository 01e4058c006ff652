"""Route classes of the RS ``/v1`` API: a bounded name for a path, ids and stream names removed.

Contract: ``route_class(path)`` is one of ``schema``, ``streams``, ``connectors``,
``stream``, ``records``, ``record``, ``field_window``, ``aggregate``, ``search``, ``blob``
or ``other`` (a query string is ignored). The breakers judge each class apart
(``resilience.Breakers``) and ``/metrics`` labels upstream reads with it; neither ever
sees an id, a stream name or a query value. Bounded cache: paths carry ids.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

_ROUTES: Final = (
    (re.compile(r"^/v1/schema$"), "schema"),
    (re.compile(r"^/v1/streams$"), "streams"),
    (re.compile(r"^/v1/connectors$"), "connectors"),
    (re.compile(r"^/v1/streams/[^/]+$"), "stream"),
    (re.compile(r"^/v1/streams/[^/]+/records$"), "records"),
    (re.compile(r"^/v1/streams/[^/]+/records/[^/]+$"), "record"),
    (re.compile(r"^/v1/streams/[^/]+/records/[^/]+/field-window$"), "field_window"),
    (re.compile(r"^/v1/streams/[^/]+/aggregate$"), "aggregate"),
    (re.compile(r"^/v1/search(/semantic|/hybrid)?$"), "search"),
    (re.compile(r"^/v1/blobs/[^/]+$"), "blob"),
)


@lru_cache(maxsize=1024)
def route_class(path: str) -> str:
    plain = path.split("?", 1)[0]
    for pattern, label in _ROUTES:
        if pattern.match(plain):
            return label
    return "other"
