"""``GET /v1/streams/{stream}/aggregate``: count, sum, min, max, count_distinct, grouped or not.

Contract (reference rules): every metric/field/grouping must be declared in the
stream's ``query.aggregations`` (else 400 ``invalid_request``, "Aggregation X is not
declared for 'f'"); grouping only with ``count`` and by exactly one of ``group_by`` or
``group_by_time`` + ``granularity``; ``limit`` 1..100 (default 10, out of range 400);
``other_count`` counts records in groups beyond ``limit``; ``count_distinct`` across
several connections is refused. Scalar groups sort by count desc then key; time
buckets by key asc. Bucket keys: minute ``YYYY-MM-DDTHH:MM``, hour ``YYYY-MM-DDTHH:00``,
else ``YYYY-MM-DD`` (week starts Monday; month/quarter/year on their first day).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from aiohttp import web

from pdpp_gateway.sandbox.access import Access
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response
from pdpp_gateway.sandbox.params import allow_only, filters
from pdpp_gateway.sandbox.record_query import by_connector, connection_param
from pdpp_gateway.sandbox.store import Store

_KEYS: Final = (
    "metric",
    "field",
    "group_by",
    "group_by_time",
    "granularity",
    "time_zone",
    "limit",
    "connection_id",
    "connector_instance_id",
    "connector_id",
    "subject_id",
)
GRANULARITIES: Final = ("minute", "hour", "day", "week", "month", "quarter", "year")


def _declared(kind: str, field: str, lists: dict[str, tuple[str, ...]]) -> None:
    if field not in lists[kind]:
        raise RsHttpError(
            400, "invalid_request", f"Aggregation {kind} is not declared for '{field}'", param=kind
        )


def bucket(value: str, granularity: str, zone: ZoneInfo) -> str:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(zone)
    if granularity == "minute":
        return moment.strftime("%Y-%m-%dT%H:%M")
    if granularity == "hour":
        return moment.strftime("%Y-%m-%dT%H:00")
    day = moment.date()
    if granularity == "week":
        day -= timedelta(days=day.weekday())
    elif granularity == "month":
        day = day.replace(day=1)
    elif granularity == "quarter":
        day = day.replace(month=3 * ((day.month - 1) // 3) + 1, day=1)
    elif granularity == "year":
        day = day.replace(month=1, day=1)
    return day.isoformat()


async def aggregate(request: web.Request, access: Access, store: Store, reference: bool) -> web.Response:
    q = request.query
    allow_only(q, _KEYS, ("filter",))
    if reference and not access.is_owner and any(k.startswith("filter") for k in q):
        raise RsHttpError(
            400,
            "invalid_request",
            "filter[...] is not supported for client-token reads in PDPP v0.1",
            param="filter",
        )
    warnings: list[dict[str, Any]] = []
    stream = request.match_info["stream"]
    sources = by_connector(request, access.stream_sources(stream, connection_param(request, warnings)))
    manifest = sources[0].manifest
    metric, field = q.get("metric"), q.get("field")
    group_by, group_by_time, granularity = q.get("group_by"), q.get("group_by_time"), q.get("granularity")
    lists = {
        "sum": manifest.sum,
        "min": manifest.min_max,
        "max": manifest.min_max,
        "count_distinct": manifest.count_distinct,
        "group_by": manifest.group_by,
        "group_by_time": manifest.group_by_time,
    }
    if metric not in ("count", "sum", "min", "max", "count_distinct"):
        raise RsHttpError(
            400, "invalid_request", "metric must be count, sum, min, max or count_distinct", param="metric"
        )
    for name in (field, group_by, group_by_time):
        if name is not None and name not in manifest.fields:
            raise RsHttpError(400, "unknown_field", f"Unknown field: {name}", param="field")
        if name is not None and not all(s.field_granted(name) for s in sources):
            raise RsHttpError(403, "field_not_granted", f"Field {name} is not granted", param="field")
    if metric == "count":
        if field is not None:
            raise RsHttpError(400, "invalid_request", "count takes no field", param="field")
    else:
        if field is None:
            raise RsHttpError(400, "invalid_request", f"{metric} needs field", param="field")
        _declared(metric, field, lists)
    if group_by is not None and group_by_time is not None:
        raise RsHttpError(
            400, "invalid_request", "group_by and group_by_time are exclusive", param="group_by_time"
        )
    grouped = group_by is not None or group_by_time is not None
    if grouped and metric != "count":
        raise RsHttpError(400, "invalid_request", "grouping works with metric=count only", param="metric")
    if group_by is not None:
        _declared("group_by", group_by, lists)
    zone = ZoneInfo("UTC")
    if group_by_time is not None:
        _declared("group_by_time", group_by_time, lists)
        if granularity not in GRANULARITIES:
            raise RsHttpError(
                400,
                "invalid_request",
                f"granularity must be one of {', '.join(GRANULARITIES)}",
                param="granularity",
            )
        try:
            zone = ZoneInfo(q.get("time_zone", "UTC"))
        except (ZoneInfoNotFoundError, ValueError):
            raise RsHttpError(
                400, "invalid_request", "time_zone must be an IANA name", param="time_zone"
            ) from None
    limit = 10
    if "limit" in q:
        if not grouped:
            raise RsHttpError(400, "invalid_request", "limit only applies with grouping", param="limit")
        if not q["limit"].isdigit() or not 1 <= int(q["limit"]) <= 100:
            raise RsHttpError(400, "invalid_request", "limit must be 1..100", param="limit")
        limit = int(q["limit"])
    connections = [c for s in sources for c in s.connections]
    if metric == "count_distinct" and len(connections) > 1:
        raise RsHttpError(
            400,
            "invalid_request",
            "count_distinct reads one connection; pass connection_id",
            param="connection_id",
        )
    rows = [r for s in sources for r in store.all(stream, list(s.connections), filters(q, s))]
    body: dict[str, Any] = {
        "object": "aggregation",
        "stream": stream,
        "metric": metric,
        "field": field,
        "group_by": group_by,
        "group_by_time": group_by_time,
        "granularity": granularity,
        "time_zone": q.get("time_zone", "UTC") if group_by_time else None,
        "approximate": False,
        "filtered_record_count": len(rows),
    }
    if not grouped:
        body["value"] = _scalar(metric, [r.data.get(field) for r in rows] if field else [], len(rows))
    else:
        if group_by is not None:
            counts = Counter(_key(r.data.get(group_by)) for r in rows)
            ordered = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
        else:
            assert group_by_time is not None
            assert granularity is not None
            counts = Counter(
                bucket(str(r.data[group_by_time]), granularity, zone) if r.data.get(group_by_time) else None
                for r in rows
            )
            ordered = sorted(counts.items(), key=lambda kv: (kv[0] is None, str(kv[0])))
        body["groups"] = [{"key": key, "count": count} for key, count in ordered[:limit]]
        body["limit"] = limit
        body["other_count"] = sum(count for _, count in ordered[limit:])
    return json_response(finalise(request, body, warnings=warnings))


def _scalar(metric: str, raw: list[Any], count: int) -> Any:
    values = [v for v in raw if v is not None]
    if metric == "count":
        return count
    if metric == "count_distinct":
        return len({str(v) for v in values})
    if metric == "sum":
        return sum(float(v) for v in values)
    ordered = sorted(values, key=lambda v: (isinstance(v, str), v))
    if not ordered:
        return None
    return ordered[0] if metric == "min" else ordered[-1]


def _key(value: object) -> object:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)
