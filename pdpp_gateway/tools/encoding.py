"""Turn validated tool arguments into RS query parameters.

Contract: the output is a list of ``(key, value)`` pairs in a stable order. Arrays
become repeated keys (``fields=a&fields=b``); the typed ``filter`` object becomes
``filter[field]=v`` / ``filter[field][op]=v``; ``expand_limit`` becomes
``expand_limit[rel]=N``. A bare ``filter=`` or ``expand_limit=`` is never produced.
Booleans are sent as ``true``/``false``; a whole-number float (``5.0``, which JSON
Schema accepts as an integer) is sent as an integer (``5``) everywhere, so the RS never
sees ``limit=5.0``; non-finite numbers never get here (the check ladder refuses them).
Only arguments named by the caller are
forwarded: anything else the tool accepted is the handler's business (path
segments, ``mode``), never silently passed on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

QueryPairs = list[tuple[str, str]]


def scalar(value: Any) -> str:
    """The RS's text form of a scalar argument."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def forward(
    arguments: Mapping[str, Any], names: Iterable[str], *, rename: Mapping[str, str] | None = None
) -> QueryPairs:
    """Pairs for the named arguments that are present, in ``names`` order."""
    pairs: QueryPairs = []
    for name in names:
        if name not in arguments or arguments[name] is None:
            continue
        key = (rename or {}).get(name, name)
        value = arguments[name]
        if isinstance(value, list):
            pairs.extend((key, scalar(item)) for item in value)
        else:
            pairs.append((key, scalar(value)))
    return pairs


def filter_pairs(typed_filter: Mapping[str, Any] | None) -> QueryPairs:
    """``filter[f]=v`` for exact matches, ``filter[f][op]=v`` for ranges."""
    pairs: QueryPairs = []
    for field, spec in (typed_filter or {}).items():
        if isinstance(spec, Mapping):
            pairs.extend((f"filter[{field}][{op}]", scalar(bound)) for op, bound in spec.items())
        else:
            pairs.append((f"filter[{field}]", scalar(spec)))
    return pairs


def expand_limit_pairs(limits: Mapping[str, Any] | None) -> QueryPairs:
    """``expand_limit[rel]=N`` per relation."""
    return [(f"expand_limit[{relation}]", scalar(limit)) for relation, limit in (limits or {}).items()]
