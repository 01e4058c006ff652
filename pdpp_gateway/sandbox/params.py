"""Query-string parsing shared by the sandbox routes, with the reference RS's rules.

Contract: ``allow_only`` refuses unknown keys (400 ``invalid_request``, "Unsupported
query parameter"); ``page_limit`` defaults junk to 25 and clamps above 100 with a
``limit_clamped`` warning; ``filters`` parses ``filter[f]=v`` / ``filter[f][op]=v`` into
typed conditions checked against the manifest and the grant (unknown field 400
``unknown_field``, ungranted 403 ``field_not_granted``, undeclared 400); cursors are
opaque base64url JSON, and a malformed one is 400 ``invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from multidict import MultiMapping

from pdpp_gateway.sandbox.access import Source
from pdpp_gateway.sandbox.envelope import RsHttpError
from pdpp_gateway.sandbox.store import Condition

DEFAULT_LIMIT: Final = 25
MAX_LIMIT: Final = 100
_INTEGER = re.compile(r"-?\d+")
_BRACKET = re.compile(r"^(\w+)\[([^\[\]]*)\](?:\[([^\[\]]*)\])?$")


def allow_only(query: MultiMapping[str], allowed: Iterable[str], bracketed: Iterable[str] = ()) -> None:
    plain, prefixes = set(allowed), tuple(f"{p}[" for p in bracketed)
    for key in query:
        if key not in plain and not key.startswith(prefixes):
            raise RsHttpError(400, "invalid_request", f"Unsupported query parameter: {key}", param=key)


def page_limit(
    query: MultiMapping[str],
    warnings: list[dict[str, Any]],
    *,
    param: str = "limit",
    default: int = DEFAULT_LIMIT,
    maximum: int = MAX_LIMIT,
) -> int:
    raw = query.get(param)
    try:
        requested = int(raw) if raw is not None else default
    except ValueError:
        return default
    if requested < 1:
        return default
    if requested > maximum:
        warnings.append(
            {
                "code": "limit_clamped",
                "param": param,
                "message": f"{param} was clamped to {maximum}.",
                "detail": {"requested_limit": requested, "max_limit": maximum},
            }
        )
        return maximum
    return requested


def list_param(query: MultiMapping[str], name: str) -> list[str]:
    values = [*query.getall(name, []), *query.getall(f"{name}[]", [])]
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def bracketed(query: MultiMapping[str], name: str) -> dict[str, Any]:
    """``name[a]=v`` → {a: v}; ``name[a][op]=v`` → {a: {op: v}}; a bare ``name=`` is refused."""
    out: dict[str, Any] = {}
    for key, value in query.items():
        if key == name:
            raise RsHttpError(
                400, "invalid_request", f"{name} must use {name}[field]=value syntax", param=name
            )
        match = _BRACKET.match(key)
        if not match or match.group(1) != name:
            continue
        field, op = match.group(2), match.group(3)
        if op is None:
            out[field] = value
        else:
            existing = out.setdefault(field, {})
            if not isinstance(existing, dict):
                raise RsHttpError(
                    400, "invalid_request", f"filter[{field}] mixes exact and range forms", param="filter"
                )
            existing[op] = value
    return out


def filters(query: MultiMapping[str], source: Source) -> list[Condition]:
    manifest = source.manifest
    conditions: list[Condition] = []
    for field, spec in bracketed(query, "filter").items():
        declared = manifest.fields.get(field)
        if declared is None:
            raise RsHttpError(400, "unknown_field", f"Unknown field: {field}", param="filter")
        if not source.field_granted(field):
            raise RsHttpError(403, "field_not_granted", f"Field {field} is not granted", param="filter")
        if isinstance(spec, dict):
            if field not in manifest.ranges:
                raise RsHttpError(
                    400, "invalid_request", f"Range filters are not declared for '{field}'", param="filter"
                )
            for op, raw in spec.items():
                if op not in ("gte", "gt", "lte", "lt"):
                    raise RsHttpError(
                        400, "invalid_request", f"Unsupported range operator: {op}", param="filter"
                    )
                conditions.append(Condition(field, op, typed(raw, declared.type, field)))
        else:
            if field not in manifest.exact:
                raise RsHttpError(
                    400, "invalid_request", f"Exact filters are not declared for '{field}'", param="filter"
                )
            conditions.append(Condition(field, "eq", typed(spec, declared.type, field)))
    return conditions


def typed(raw: str, declared: str, field: str) -> Any:
    """A filter value in the form the stored JSON compares with; junk is 400 ``invalid_request``.

    Like the reference (``coerceComparableValue(..., strict=True)``): integers must be
    whole numbers, numbers finite, dates parseable. A date is normalised to the stored
    form (UTC, ``YYYY-MM-DDTHH:MM:SS.mmmZ``) so comparing the strings compares instants.
    """
    if declared == "boolean":
        if raw not in ("true", "false"):
            raise _bad_value(field, "true or false")
        return 1 if raw == "true" else 0
    if declared == "integer":
        if not _INTEGER.fullmatch(raw.strip()):
            raise _bad_value(field, "an integer")
        return int(raw.strip())
    if declared == "number":
        try:
            number = float(raw)
        except ValueError:
            raise _bad_value(field, "a number") from None
        if not math.isfinite(number):
            raise _bad_value(field, "a finite number")
        return number
    if declared in ("date", "date-time"):
        return _instant(raw, field)
    return raw


def _instant(raw: str, field: str) -> str:
    try:
        moment = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise _bad_value(field, "an ISO 8601 date or date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _bad_value(field: str, wanted: str) -> RsHttpError:
    return RsHttpError(400, "invalid_request", f"filter on {field} needs {wanted}", param="filter")


def encode_token(payload: Mapping[str, Any]) -> str:
    return (
        base64.urlsafe_b64encode(orjson.dumps(dict(payload), option=orjson.OPT_SORT_KEYS))
        .decode()
        .rstrip("=")
    )


def decode_token(raw: str, param: str, *, hint: str = "restart without it") -> dict[str, Any]:
    try:
        value = orjson.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        value = None
    if not isinstance(value, dict):
        raise RsHttpError(400, "invalid_cursor", f"Malformed {param}; {hint}.", param=param)
    return value
