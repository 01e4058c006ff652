"""A quick "certainly valid" test for JSON Schemas of a small subset, before jsonschema.

Contract: ``accepter(schema)`` compiles a schema once into a function ``accept(value)``
that answers ``True`` only when the JSON Schema 2020-12 validator (jsonschema's
``Draft202012Validator`` without a format checker) would find no error in ``value``;
``False`` means "not certain": the caller runs jsonschema, which decides and explains.
So a quick ``True`` never lets through what jsonschema refuses, and a ``False`` never
refuses anything by itself. ``accepter`` answers ``None`` for a schema using any keyword
outside the subset below, and the caller then always runs jsonschema.

The subset (what the gateway's tool schemas use): ``type``, ``properties``,
``additionalProperties`` (a boolean or a schema), ``required``, ``minProperties``,
``maxProperties``, ``items`` (one schema), ``minItems``, ``maxItems``, ``minLength``,
``maxLength``, ``minimum``, ``maximum``, ``enum`` of strings, ``anyOf``, boolean
schemas, and the annotations ``description``, ``title``, ``examples``, ``default``,
``$comment``. A value of any type but the exact JSON ones (``dict``, ``list``, ``str``,
``int``, ``float``, ``bool``, ``None``; subclasses included, e.g. an ``IntEnum``) is
never certain. The point is speed: a valid call costs a few microseconds instead of a
jsonschema walk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

Accept = Callable[[Any], bool]

_ANNOTATIONS: Final = frozenset({"description", "title", "examples", "default", "$comment"})
_NUMBERS: Final = (int, float)
# JSON Schema type name -> the exact Python types that are certainly of it.
_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int, float),  # a float only when whole (checked below)
    "boolean": (bool,),
    "null": (type(None),),
}
_JSON_TYPES: Final = frozenset({dict, list, str, int, float, bool, type(None)})


class _Unsupported(Exception):
    """The schema uses a keyword (or form) outside the subset."""


def accepter(schema: Any) -> Accept | None:
    """The quick test for ``schema``, or ``None`` when it uses more than the subset."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def _compile(schema: Any) -> Accept:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, Mapping):
        raise _Unsupported
    tests: list[Accept] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            raise _Unsupported
        tests.append(make(value, schema))
    tests = [test for test in tests if test is not _always]

    def accept(value: Any) -> bool:
        if type(value) not in _JSON_TYPES:
            return False
        return all(test(value) for test in tests)

    return accept


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _type(names: Any, schema: Mapping[str, Any]) -> Accept:
    listed = [names] if isinstance(names, str) else names
    if not isinstance(listed, list) or not all(name in _TYPES for name in listed):
        raise _Unsupported
    exact = frozenset(kind for name in listed for kind in _TYPES[name])
    whole_only = "integer" in listed and "number" not in listed

    def test(value: Any) -> bool:
        kind = type(value)
        if kind not in exact:
            return False
        return not (whole_only and kind is float and not value.is_integer())

    return test


def _properties(properties: Any, schema: Mapping[str, Any]) -> Accept:
    if not isinstance(properties, Mapping):
        raise _Unsupported
    compiled = {name: _compile(sub) for name, sub in properties.items()}

    def test(value: Any) -> bool:
        if type(value) is not dict:
            return True
        for name, item in value.items():
            sub = compiled.get(name)
            if sub is not None and not sub(item):
                return False
        return True

    return test


def _additional(additional: Any, schema: Mapping[str, Any]) -> Accept:
    if "patternProperties" in schema:
        raise _Unsupported
    known = frozenset(schema.get("properties") or ())
    sub = _compile(additional)

    def test(value: Any) -> bool:
        if type(value) is not dict:
            return True
        return all(name in known or sub(item) for name, item in value.items())

    return test


def _required(names: Any, schema: Mapping[str, Any]) -> Accept:
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise _Unsupported
    wanted = tuple(names)
    return lambda value: type(value) is not dict or all(name in value for name in wanted)


def _items(items: Any, schema: Mapping[str, Any]) -> Accept:
    if "prefixItems" in schema:
        raise _Unsupported
    sub = _compile(items)
    return lambda value: type(value) is not list or all(sub(item) for item in value)


def _any_of(branches: Any, schema: Mapping[str, Any]) -> Accept:
    if not isinstance(branches, list) or not branches:
        raise _Unsupported
    compiled = [_compile(branch) for branch in branches]
    return lambda value: any(branch(value) for branch in compiled)


def _enum(choices: Any, schema: Mapping[str, Any]) -> Accept:
    if not isinstance(choices, list) or not all(type(choice) is str for choice in choices):
        raise _Unsupported
    allowed = frozenset(choices)
    return lambda value: type(value) is str and value in allowed


def _bound(
    kind: type, measure: Callable[[Any], Any], at_least: bool
) -> Callable[[Any, Mapping[str, Any]], Accept]:
    """A size or number bound, checked only on values of ``kind`` (others pass it, as in
    JSON Schema, where such a keyword ignores other types)."""

    def make(limit: Any, schema: Mapping[str, Any]) -> Accept:
        if type(limit) not in _NUMBERS:
            raise _Unsupported
        kinds = _NUMBERS if kind is float else (kind,)

        def test(value: Any) -> bool:
            if type(value) not in kinds:
                return True
            size = measure(value)
            return bool(size >= limit) if at_least else bool(size <= limit)

        return test

    return make


def _itself(value: Any) -> Any:
    return value


_KEYWORDS: Final[dict[str, Callable[[Any, Mapping[str, Any]], Accept]]] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "items": _items,
    "anyOf": _any_of,
    "enum": _enum,
    "minLength": _bound(str, len, at_least=True),
    "maxLength": _bound(str, len, at_least=False),
    "minItems": _bound(list, len, at_least=True),
    "maxItems": _bound(list, len, at_least=False),
    "minProperties": _bound(dict, len, at_least=True),
    "maxProperties": _bound(dict, len, at_least=False),
    "minimum": _bound(float, _itself, at_least=True),
    "maximum": _bound(float, _itself, at_least=False),
}
