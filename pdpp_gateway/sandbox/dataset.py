"""The shapes of the sandbox's sample data: rows, blobs and the dataset holding them.

Contract: a ``Row`` is one record as the RS stores it (connector, connection, stream,
record id, data, ingest time, and a deletion time for a tombstone); a ``Blob`` is bytes
a ``blob_ref`` field points at; a ``Dataset`` is every row and blob ``data.generate``
made. Plain values: the store loads them, nothing here reads or writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

EMITTED_AT: Final = "2026-11-01T00:00:00.000Z"  # one ingest time for every seeded record


@dataclass(frozen=True, slots=True)
class Row:
    connector: str
    connection_id: str
    stream: str
    record_id: str
    data: dict[str, Any]
    emitted_at: str = EMITTED_AT
    deleted_at: str | None = None


@dataclass(frozen=True, slots=True)
class Blob:
    blob_id: str
    mime_type: str
    content: bytes


@dataclass(slots=True)
class Dataset:
    rows: list[Row] = field(default_factory=list)
    blobs: dict[str, Blob] = field(default_factory=dict)
