"""SQLite storage for the sandbox RS: records, an FTS5 index of searchable fields, blobs.

Contract: ``Store.open(config)`` returns a store holding the sample data. The database
is built once per process (per ``bulk_records`` value) as an in-memory template and
copied with ``sqlite3.Connection.backup`` into each new store (in memory, or the file
``config.db_path``), so starting a sandbox is cheap. Reads are keyset-paginated on
``(cursor_value, record_id)``; filters run in SQL over ``json_extract`` (lists, counts,
windows, the changes feed and search scopes alike). Lexical search ranks ids and bm25 scores
only; record bodies and ``snippet()`` are fetched for the page a caller returns. Its ``fts``
index holds whole fields, as the reference's does. Meaning-based search has ``semantic``
instead: one embedding per semantic field of each live record, of the field's first
``SEMANTIC_INPUT_MAX_CHARS`` characters, as much as the reference RS embeds (``vectors``;
built with the template, so once per process; ``None`` when the model cannot load), and
``scoped`` names the records a search may rank. Every value from a request reaches SQLite as
a bound parameter, never as SQL text.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, NamedTuple

import orjson

from pdpp_gateway.sandbox.config import SandboxConfig
from pdpp_gateway.sandbox.data import generate
from pdpp_gateway.sandbox.dataset import Dataset
from pdpp_gateway.sandbox.manifests import BULK_CONNECTOR, CONNECTORS, Catalog
from pdpp_gateway.sandbox.vectors import FieldVectors

_SCHEMA: Final = """
CREATE TABLE records (
    rowid INTEGER PRIMARY KEY, connector TEXT NOT NULL, connection_id TEXT NOT NULL, stream TEXT NOT NULL,
    record_id TEXT NOT NULL, cursor_value TEXT, seq INTEGER NOT NULL, data TEXT NOT NULL,
    emitted_at TEXT NOT NULL, deleted_at TEXT
);
CREATE INDEX records_page ON records (stream, connection_id, cursor_value, record_id);
CREATE INDEX records_id ON records (stream, record_id);
CREATE VIRTUAL TABLE fts USING fts5(text, rid UNINDEXED, field UNINDEXED, tokenize = 'unicode61');
CREATE TABLE blobs (blob_id TEXT PRIMARY KEY, mime_type TEXT NOT NULL, content BLOB NOT NULL);
"""
_templates: dict[int, tuple[sqlite3.Connection, FieldVectors | None]] = {}
_template_lock = threading.Lock()
SQL_OPS: Final = {"eq": "=", "gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}
# What meaning-based search sees of a semantic field: its first 2,048 characters, as the reference
# RS embeds only that much of each field (DEFAULT_SEMANTIC_EMBEDDING_INPUT_MAX_CHARS in
# reference-implementation/server/search-semantic.ts); its lexical index keeps the whole field.
SEMANTIC_INPUT_MAX_CHARS: Final = 2048


@dataclass(frozen=True, slots=True)
class StoredRecord:
    rowid: int
    connector: str
    connection_id: str
    stream: str
    record_id: str
    cursor_value: str  # "" when the record has no cursor value
    seq: int
    data: dict[str, Any]
    emitted_at: str
    deleted_at: str | None


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: str  # eq | gte | gt | lte | lt
    value: Any


@dataclass(frozen=True, slots=True)
class SearchScope:
    connection_id: str
    stream: str
    conditions: tuple[Condition, ...] = ()


class Candidate(NamedTuple):
    """One FTS match: the indexed field of one record, ranked (a tuple: thousands per search)."""

    fts_rowid: int
    rowid: int  # the record's
    field: str
    score: float
    connection_id: str
    stream: str
    record_id: str


class Located(NamedTuple):
    """Where a record lives, as a search hit names it."""

    connection_id: str
    stream: str
    record_id: str


class Store:
    def __init__(
        self, connection: sqlite3.Connection, catalog: Catalog, semantic: FieldVectors | None
    ) -> None:
        self._db = connection
        self.catalog = catalog
        self.semantic = semantic

    @classmethod
    def open(cls, config: SandboxConfig) -> Store:
        template, semantic = _template(config.bulk_records)
        target = sqlite3.connect(config.db_path or ":memory:", check_same_thread=False)
        with _template_lock:
            template.backup(target)
        connectors = (*CONNECTORS, BULK_CONNECTOR) if config.bulk_records else CONNECTORS
        suffix = config.connection_suffix
        if suffix:  # this sandbox's own connection ids, as a second provider's would be
            target.execute("UPDATE records SET connection_id = connection_id || ?", (suffix,))
            target.commit()
            connectors = tuple(
                replace(
                    c,
                    connections=tuple(
                        replace(x, connection_id=x.connection_id + suffix) for x in c.connections
                    ),
                )
                for c in connectors
            )
        return cls(target, Catalog(connectors), semantic)

    def close(self) -> None:
        self._db.close()

    def page(
        self,
        stream: str,
        connections: Sequence[str],
        *,
        descending: bool,
        after: tuple[str | None, str] | None,
        limit: int,
        conditions: Sequence[Condition] = (),
    ) -> list[StoredRecord]:
        where, params = self._scope(stream, connections, conditions)
        if after is not None:
            comparator = "<" if descending else ">"
            where.append(f"(cursor_value, record_id) {comparator} (?, ?)")
            params.extend([after[0] or "", after[1]])
        direction = "DESC" if descending else "ASC"
        sql = (
            f"SELECT * FROM records WHERE {' AND '.join(where)} AND deleted_at IS NULL "  # noqa: S608 - fixed fragments
            f"ORDER BY cursor_value {direction}, record_id {direction} LIMIT ?"
        )
        return self._rows(sql, [*params, limit])

    def count(self, stream: str, connections: Sequence[str], conditions: Sequence[Condition] = ()) -> int:
        where, params = self._scope(stream, connections, conditions)
        sql = f"SELECT COUNT(*) FROM records WHERE {' AND '.join(where)} AND deleted_at IS NULL"  # noqa: S608
        return int(self._db.execute(sql, params).fetchone()[0])

    def all(
        self, stream: str, connections: Sequence[str], conditions: Sequence[Condition] = ()
    ) -> list[StoredRecord]:
        where, params = self._scope(stream, connections, conditions)
        sql = f"SELECT * FROM records WHERE {' AND '.join(where)} AND deleted_at IS NULL"  # noqa: S608
        return self._rows(sql, params)

    def find(self, stream: str, record_id: str, connections: Sequence[str]) -> list[StoredRecord]:
        marks = ",".join("?" * len(connections))
        sql = (
            f"SELECT * FROM records WHERE stream = ? AND record_id = ? AND connection_id IN ({marks}) "  # noqa: S608
            "AND deleted_at IS NULL ORDER BY connection_id"
        )
        return self._rows(sql, [stream, record_id, *connections]) if connections else []

    def changes(
        self,
        stream: str,
        connection: str,
        after_seq: int,
        until_seq: int,
        limit: int,
        conditions: Sequence[Condition] = (),
    ) -> list[StoredRecord]:
        """Rows changed in ``(after_seq, until_seq]``, tombstones included; ``conditions`` test
        each row's (last known) data, so a deleted record appears only if it matched."""
        where, params = self._conditions(conditions)
        sql = (
            "SELECT * FROM records WHERE stream = ? AND connection_id = ? AND seq > ? AND seq <= ? "  # noqa: S608 - fixed fragments
            f"{''.join(f' AND {w}' for w in where)} ORDER BY seq LIMIT ?"
        )
        return self._rows(sql, [stream, connection, after_seq, until_seq, *params, limit])

    def max_seq(self) -> int:
        return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM records").fetchone()[0])

    def window(
        self, stream: str, connections: Sequence[str], conditions: Sequence[Condition] = ()
    ) -> tuple[int, str | None, str | None]:
        """(live records, earliest and latest non-empty cursor value) under ``conditions``."""
        where, params = self._scope(stream, connections, conditions)
        sql = (
            "SELECT COUNT(*), MIN(NULLIF(cursor_value, '')), MAX(NULLIF(cursor_value, '')) "  # noqa: S608
            f"FROM records WHERE {' AND '.join(where)} AND deleted_at IS NULL"
        )
        total, earliest, latest = self._db.execute(sql, params).fetchone()
        return int(total), earliest, latest

    def search(self, expression: str, scopes: Iterable[SearchScope], limit: int) -> list[Candidate]:
        """The best ``limit`` matches of ``expression`` in the lexical ``fts`` index (whole
        fields) within ``scopes``, bm25 order.

        Ranking only: no record bodies and no snippets here (``snippet()`` over every
        candidate dominated a common-word search); ``records`` and ``snippets`` load them
        for the page actually returned.
        """
        clauses, params = self._scopes(scopes)
        if not clauses:
            return []
        sql = (
            "SELECT f.rowid, f.rid, f.field, bm25(fts), r.connection_id, r.stream, r.record_id "  # noqa: S608 - fixed fragments, values bound
            f"FROM fts f JOIN records r ON r.rowid = f.rid WHERE fts MATCH ? AND ({' OR '.join(clauses)}) "
            "AND r.deleted_at IS NULL ORDER BY bm25(fts), r.rowid LIMIT ?"
        )
        return [Candidate._make(row) for row in self._db.execute(sql, [expression, *params, limit])]

    def scoped(self, scopes: Iterable[SearchScope]) -> dict[int, Located]:
        """The live records within ``scopes``, by rowid: those a meaning-based search may rank."""
        clauses, params = self._scopes(scopes)
        if not clauses:
            return {}
        sql = (
            "SELECT r.rowid, r.connection_id, r.stream, r.record_id FROM records r "  # noqa: S608 - fixed fragments, values bound
            f"WHERE ({' OR '.join(clauses)}) AND r.deleted_at IS NULL"
        )
        return {int(row[0]): Located(*row[1:]) for row in self._db.execute(sql, params)}

    def records(self, rowids: Iterable[int]) -> dict[int, StoredRecord]:
        wanted = sorted(set(rowids))
        if not wanted:
            return {}
        sql = f"SELECT * FROM records WHERE rowid IN ({','.join('?' * len(wanted))})"  # noqa: S608
        return {record.rowid: record for record in self._rows(sql, wanted)}

    def snippets(self, expression: str, fts_rowids: Iterable[int]) -> dict[int, str]:
        """``<mark>``ed snippets of ``expression`` for these FTS rows only."""
        wanted = sorted(set(fts_rowids))
        if not wanted:
            return {}
        sql = (
            "SELECT rowid, snippet(fts, 0, '<mark>', '</mark>', '…', 24) FROM fts "  # noqa: S608
            f"WHERE fts MATCH ? AND +rowid IN ({','.join('?' * len(wanted))})"
        )  # "+rowid": one pass over the match, not one FTS query per listed row
        return {int(row[0]): str(row[1]) for row in self._db.execute(sql, [expression, *wanted])}

    def blob(self, blob_id: str) -> tuple[str, bytes] | None:
        row = self._db.execute("SELECT mime_type, content FROM blobs WHERE blob_id = ?", [blob_id]).fetchone()
        return (row[0], bytes(row[1])) if row else None

    def blob_holders(self, blob_id: str) -> list[StoredRecord]:
        sql = (
            "SELECT r.* FROM records r, json_each(r.data) j WHERE j.type = 'object' "
            "AND (CASE WHEN j.type = 'object' THEN json_extract(j.value, '$.blob_id') END) = ? "
            "AND r.deleted_at IS NULL"
        )
        return self._rows(sql, [blob_id])

    def _scopes(self, scopes: Iterable[SearchScope]) -> tuple[list[str], list[Any]]:
        """One SQL clause per search scope over ``records r`` (OR them), and their parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        for scope in scopes:
            where, bound = self._conditions(scope.conditions, column="r.data")
            clauses.append("(" + " AND ".join(["r.connection_id = ?", "r.stream = ?", *where]) + ")")
            params.extend([scope.connection_id, scope.stream, *bound])
        return clauses, params

    def _scope(
        self, stream: str, connections: Sequence[str], conditions: Sequence[Condition]
    ) -> tuple[list[str], list[Any]]:
        marks = ",".join("?" * len(connections)) or "NULL"
        where, params = self._conditions(conditions)
        return ["stream = ?", f"connection_id IN ({marks})", *where], [stream, *connections, *params]

    @staticmethod
    def _conditions(conditions: Sequence[Condition], column: str = "data") -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        for condition in conditions:
            where.append(f"json_extract({column}, ?) {SQL_OPS[condition.op]} ?")
            params.extend([f"$.{condition.field}", condition.value])
        return where, params

    def _rows(self, sql: str, params: Sequence[Any]) -> list[StoredRecord]:
        return [_record(row) for row in self._db.execute(sql, list(params)).fetchall()]


def _record(row: Sequence[Any]) -> StoredRecord:
    return StoredRecord(
        rowid=row[0],
        connector=row[1],
        connection_id=row[2],
        stream=row[3],
        record_id=row[4],
        cursor_value=row[5],
        seq=row[6],
        data=orjson.loads(row[7]),
        emitted_at=row[8],
        deleted_at=row[9],
    )


def _template(bulk_records: int) -> tuple[sqlite3.Connection, FieldVectors | None]:
    with _template_lock:
        if bulk_records not in _templates:
            _templates[bulk_records] = _build(generate(bulk_records))
        return _templates[bulk_records]


def _build(dataset: Dataset) -> tuple[sqlite3.Connection, FieldVectors | None]:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(_SCHEMA)
    catalog = Catalog((*CONNECTORS, BULK_CONNECTOR))
    record_rows = []
    fts_rows = []
    semantic_rows: list[tuple[int, str, str]] = []
    for seq, row in enumerate(dataset.rows, 1):
        connector = next(c for c in catalog.connectors if c.key == row.connector)
        manifest = connector.stream(row.stream)
        assert manifest is not None, row.stream
        cursor_value = row.data.get(manifest.cursor_field)
        record_rows.append(
            (
                seq,
                row.connector,
                row.connection_id,
                row.stream,
                row.record_id,
                ""
                if cursor_value is None
                else str(cursor_value),  # '' sorts first and keeps the index usable
                seq,
                orjson.dumps(row.data).decode(),
                row.emitted_at,
                row.deleted_at,
            )
        )
        if row.deleted_at is None:
            for field in manifest.lexical:
                value = row.data.get(field)
                if isinstance(value, str) and value:
                    fts_rows.append((value, seq, field))
            for field in manifest.semantic:
                value = row.data.get(field)
                if isinstance(value, str) and value:
                    semantic_rows.append((seq, field, semantic_input(value)))
    db.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", record_rows)
    db.executemany("INSERT INTO fts (text, rid, field) VALUES (?, ?, ?)", fts_rows)
    db.executemany(
        "INSERT INTO blobs VALUES (?, ?, ?)",
        [(b.blob_id, b.mime_type, b.content) for b in dataset.blobs.values()],
    )
    db.commit()
    return db, FieldVectors.build(semantic_rows)


def semantic_input(text: str) -> str:
    """What of a semantic field meaning-based search sees, by the reference's rule
    (``normalizeSemanticEmbeddingInput``: ``value.slice(0, 2048)`` when longer): the first
    ``SEMANTIC_INPUT_MAX_CHARS`` characters counted as JavaScript counts them, in UTF-16 code
    units (a character outside the BMP counts two; one cut in half is dropped)."""
    units = text.encode("utf-16-le")
    if len(units) <= 2 * SEMANTIC_INPUT_MAX_CHARS:
        return text
    return units[: 2 * SEMANTIC_INPUT_MAX_CHARS].decode("utf-16-le", errors="ignore")
