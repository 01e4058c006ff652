"""An in-memory resource server for one grant: the ``RsReader`` protocol, no socket.

Contract: ``FakeRs(grant, ...)`` answers the reads the tool handlers make, in the RS's own
body shapes (rs-contract.md; the samples in /work/shared/samples/rs): ``/v1/schema``
(compact, ``stream``/``connection_id`` scoped), ``/v1/search``, ``/v1/search/semantic``
and ``/v1/search/hybrid`` over canned hits (``streams`` and ``connection_id`` filtered;
``limit`` default 25, clamped to 100 with a ``limit_clamped`` warning; an opaque offset
cursor bound to the grant, 400 ``invalid_cursor`` when foreign or garbled; hybrid never
pages), ``/v1/streams/{s}/records`` (paged the same way), ``/v1/streams/{s}/records/{id}``,
its ``field-window`` and ``/v1/blobs/{id}``. A stream outside the grant is 403
``grant_stream_not_allowed``; anything else is 404. ``fan_in=True`` answers search as a
multi-connection grant's fan-in does: ``has_more`` without ``next_cursor``, with a
``partial_results`` warning.

Every read is recorded in ``calls`` (and in a shared ``log`` when several fakes make one
package) before its ``delay`` (seconds, or a function of the call) and before any
scripted failure (``fail_with``) is raised: failures are the real ``pdpp_gateway.rs.errors``
types, so stages and merges see exactly what a real upstream failure looks like.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import orjson

from pdpp_gateway.context import PackageMember
from pdpp_gateway.error_types import error_type_for
from pdpp_gateway.rs.client import RsBlob, RsResponse
from pdpp_gateway.rs.errors import RsError, RsStatusError

DEFAULT_LIMIT = 25
MAX_LIMIT = 100
SEARCH_PATHS = {"/v1/search": "lexical", "/v1/search/semantic": "semantic", "/v1/search/hybrid": "hybrid"}
Failure = Callable[["FakeCall"], RsError | None]


@dataclass(frozen=True, slots=True)
class FakeCall:
    """One read as the fake RS received it."""

    grant: str
    kind: str  # "json" or "bytes"
    path: str
    query: tuple[tuple[str, str], ...]

    def param(self, name: str) -> str | None:
        return next((value for key, value in self.query if key == name), None)

    def params(self, name: str) -> list[str]:
        return [value for key, value in self.query if key == name]


def hit(stream: str, record_key: str, connection_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """An RS lexical search hit (``search_result``) whose subject matched ``text``."""
    return {
        "object": "search_result",
        "stream": stream,
        "record_key": record_key,
        "record_url": f"/v1/streams/{stream}/records/{record_key}",
        "connection_id": connection_id,
        "connector_instance_id": connection_id,
        "connector_id": extra.pop("connector_id", "fake"),
        "emitted_at": "2026-06-01T00:00:00.000Z",
        "matched_fields": ["subject"],
        "snippet": {"field": "subject", "text": text},
        "evidence_excerpts": [
            {
                "object": "evidence_excerpt",
                "field_path": "subject",
                "preview_text": text,
                "provenance": "lexical_match",
                "truncated": False,
                "read": {
                    "object": "field_window_read",
                    "method": "GET",
                    "route": f"/v1/streams/{stream}/records/{record_key}/field-window",
                    "stream": stream,
                    "record_id": record_key,
                    "field": "subject",
                    "connection_id": connection_id,
                },
            }
        ],
        "score": {"kind": "bm25", "order": "lower_is_better", "value": -1.0},
        **extra,
    }


class FakeRs:
    """One grant's resource server, in memory (see the module contract)."""

    def __init__(
        self,
        grant: str,
        *,
        connection_id: str = "cin_fake",
        connector_key: str = "fake",
        records: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
        hits: Sequence[Mapping[str, Any]] = (),
        blobs: Mapping[str, bytes] | None = None,
        delay: float | Callable[[FakeCall], float] = 0.0,
        log: list[FakeCall] | None = None,
        fan_in: bool = False,
    ) -> None:
        self.grant = grant
        self.connection_id = connection_id
        self.connector_key = connector_key
        self.records = {stream: [dict(r) for r in rows] for stream, rows in (records or {}).items()}
        self.hits = [dict(h) for h in hits]
        self.blobs = dict(blobs or {})
        self.delay = delay
        self.calls: list[FakeCall] = []
        self._log = log
        self.fan_in = fan_in
        self._failures: list[tuple[Failure, Collection[int] | None]] = []

    # --- configuration ------------------------------------------------------------

    def fail_with(self, failure: RsError | Failure, *, on_calls: Collection[int] | None = None) -> None:
        """Raise ``failure`` on the given 1-based call numbers of this fake (every call if None)."""
        rule: Failure = (
            failure if callable(failure) and not isinstance(failure, RsError) else lambda _: failure
        )
        self._failures.append((rule, on_calls))

    def member(
        self, *, streams: Sequence[str] | None = None, display_name: str | None = None
    ) -> PackageMember:
        """This grant as a package member reading through this fake."""
        granted = tuple(streams) if streams is not None else self.stream_names()
        return PackageMember(
            rs=self,
            grant_id=self.grant,
            connection_ids=(self.connection_id,),
            streams=granted,
            connector_key=self.connector_key,
            display_name=display_name,
        )

    def stream_names(self) -> tuple[str, ...]:
        names = dict.fromkeys([*self.records, *(str(h["stream"]) for h in self.hits)])
        return tuple(names)

    # --- the reader protocol --------------------------------------------------------

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        call = await self._receive("json", path, query)
        body = self._answer(call)
        return RsResponse(
            status=200, body=body, request_id=f"req_{self.grant}_{len(self.calls)}", url_path=path
        )

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        call = await self._receive("bytes", path, query)
        blob_id = unquote(path.removeprefix("/v1/blobs/"))
        if not path.startswith("/v1/blobs/") or blob_id not in self.blobs:
            raise _status(404, "blob_not_found", f"No blob {blob_id!r} for this grant.", call)
        data = self.blobs[blob_id]
        return RsBlob("application/octet-stream", data[:max_bytes], len(data), len(data) > max_bytes)

    async def _receive(self, kind: str, path: str, query: Sequence[tuple[str, str]]) -> FakeCall:
        call = FakeCall(self.grant, kind, path, tuple(query))
        self.calls.append(call)
        if self._log is not None:
            self._log.append(call)
        seconds = self.delay(call) if callable(self.delay) else self.delay
        if seconds:
            await asyncio.sleep(seconds)
        number = len(self.calls)
        for rule, on_calls in self._failures:
            if on_calls is None or number in on_calls:
                error = rule(call)
                if error is not None:
                    raise error
        return call

    # --- answers --------------------------------------------------------------------

    def _answer(self, call: FakeCall) -> dict[str, Any]:
        segments = [unquote(s) for s in call.path.split("/")[1:]]
        if call.path == "/v1/schema":
            return self._schema(call)
        if call.path in SEARCH_PATHS:
            return self._search(call, SEARCH_PATHS[call.path])
        if len(segments) >= 4 and segments[:2] == ["v1", "streams"] and segments[3] == "records":
            stream = self._granted_stream(segments[2], call)
            if len(segments) == 4:
                return self._record_page(call, stream)
            record = self._record(stream, segments[4], call)
            if len(segments) == 5:
                return record
            if segments[5:] == ["field-window"]:
                return self._field_window(call, record)
        raise _status(404, "not_found", f"No route {call.path}.", call)

    def _schema(self, call: FakeCall) -> dict[str, Any]:
        wanted = call.param("stream")
        names = [n for n in self.stream_names() if wanted is None or n == wanted]
        if wanted is not None and not names:
            raise _status(404, "stream_not_found", f"Stream {wanted!r} is not in this grant.", call)
        streams = [{"name": n, "primary_key": ["id"], "field_capabilities": self._fields(n)} for n in names]
        connector = {
            "object": "connector",
            "source": {
                "id": f"https://registry.pdpp.dev/connectors/{self.connector_key}",
                "kind": "connector",
            },
            "connector_key": self.connector_key,
            "connector_id": self.connector_key,
            "stream_count": len(streams),
            "streams": streams,
            "granted_connections": [{"connection_id": self.connection_id}],
        }
        return {
            "object": "schema",
            "detail": "full" if call.param("detail") == "full" else "compact",
            "bearer": {"scope": "grant", "token_kind": "client", "grant_id": self.grant},
            "connector_count": 1,
            "stream_count": len(streams),
            "connectors": [connector],
            "meta": {"count": {"kind": "none"}, "warnings": []},
        }

    def _fields(self, stream: str) -> dict[str, str]:
        fields = {key for row in self.records.get(stream, ()) for key in row.get("data", {})}
        return dict.fromkeys(sorted(fields or {"id"}), "declared")

    def _search(self, call: FakeCall, mode: str) -> dict[str, Any]:
        if not call.param("q"):
            raise _status(400, "invalid_request", "q is required.", call)
        streams = call.params("streams")
        for stream in streams:
            self._granted_stream(stream, call)
        connection = call.param("connection_id")
        matching = [
            h
            for h in self.hits
            if (not streams or h["stream"] in streams)
            and (connection is None or h["connection_id"] == connection)
        ]
        if mode == "hybrid" and call.param("cursor") is not None:
            raise _status(400, "invalid_cursor", "Hybrid search does not page.", call)
        page, more, next_cursor, warnings = self._page(call, matching, "search")
        body: dict[str, Any] = {"object": "list", "url": call.path, "has_more": more, "data": page}
        if next_cursor is not None and mode != "hybrid" and not self.fan_in:
            body["next_cursor"] = next_cursor
        if more and self.fan_in:
            warnings.append(
                {"code": "partial_results", "message": "Fan-in over several connections does not page."}
            )
        body["meta"] = {
            "count": len(matching),
            "count_accuracy": "exact",
            "recall": {
                "complete": True,
                "ranking_scope": "all_matches",
                "ranked_candidate_count": len(matching),
            },
            "warnings": warnings,
        }
        return body

    def _record_page(self, call: FakeCall, stream: str) -> dict[str, Any]:
        rows = [self._record_body(stream, row) for row in self.records.get(stream, ())]
        page, more, next_cursor, warnings = self._page(call, rows, f"records:{stream}")
        body: dict[str, Any] = {"object": "list", "url": call.path, "has_more": more, "data": page}
        if next_cursor is not None:
            body["next_cursor"] = next_cursor
        body["meta"] = {"count": {"kind": "none"}, "warnings": warnings}
        return body

    def _record(self, stream: str, record_id: str, call: FakeCall) -> dict[str, Any]:
        for row in self.records.get(stream, ()):
            if str(row.get("id")) == record_id:
                return self._record_body(stream, row)
        raise _status(404, "record_not_found", f"No record {record_id!r} in stream {stream!r}.", call)

    def _record_body(self, stream: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "object": "record",
            "id": str(row["id"]),
            "stream": stream,
            "connection_id": self.connection_id,
            "connector_instance_id": self.connection_id,
            "connector_key": f"https://registry.pdpp.dev/connectors/{self.connector_key}",
            "emitted_at": row.get("emitted_at", "2026-06-01T00:00:00.000Z"),
            "data": dict(row.get("data", {})),
        }

    def _field_window(self, call: FakeCall, record: Mapping[str, Any]) -> dict[str, Any]:
        field = call.param("field") or ""
        value = record["data"].get(field)
        if not isinstance(value, str):
            raise _status(422, "field_not_text", f"Field {field!r} is not text.", call)
        start = int(call.param("offset_chars") or 0)
        end = min(len(value), start + int(call.param("limit_chars") or 4096))
        return {
            "object": "field_window",
            "connection_id": self.connection_id,
            "field": {"path": field, "type": "string"},
            "window": {
                "text": value[start:end],
                "start_chars": start,
                "end_chars": end,
                "total_chars": len(value),
            },
            "meta": {"warnings": []},
        }

    def _page(
        self, call: FakeCall, rows: Sequence[dict[str, Any]], scope: str
    ) -> tuple[list[dict[str, Any]], bool, str | None, list[dict[str, Any]]]:
        warnings: list[dict[str, Any]] = []
        requested = int(call.param("limit") or DEFAULT_LIMIT)
        limit = min(requested, MAX_LIMIT)
        if requested > MAX_LIMIT:
            warnings.append(
                {
                    "code": "limit_clamped",
                    "message": f"limit clamped to {MAX_LIMIT}",
                    "detail": {"requested_limit": requested, "max_limit": MAX_LIMIT},
                }
            )
        offset = self._offset(call, scope)
        page = list(rows[offset : offset + limit])
        more = offset + limit < len(rows)
        return page, more, (self._cursor(offset + limit, scope) if more else None), warnings

    def _cursor(self, offset: int, scope: str) -> str:
        payload = orjson.dumps({"off": offset, "snap": f"{self.grant}:{scope}"})
        return base64.urlsafe_b64encode(payload).decode().rstrip("=")

    def _offset(self, call: FakeCall, scope: str) -> int:
        cursor = call.param("cursor")
        if cursor is None:
            return 0
        try:
            payload = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except (binascii.Error, ValueError):
            payload = None
        if not isinstance(payload, dict) or payload.get("snap") != f"{self.grant}:{scope}":
            raise _status(400, "invalid_cursor", "The cursor is malformed or belongs to another query.", call)
        return int(payload["off"])

    def _granted_stream(self, stream: str, call: FakeCall) -> str:
        if stream not in self.stream_names():
            raise _status(403, "grant_stream_not_allowed", f"Stream {stream!r} is not granted.", call)
        return stream


def _status(status: int, code: str, message: str, call: FakeCall) -> RsStatusError:
    envelope = {"type": error_type_for(status), "code": code, "message": message}
    return RsStatusError(status, envelope, f"req_{call.grant}_{code}")
