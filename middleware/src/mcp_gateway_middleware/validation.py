"""Argument validation: a pure ladder of checks, the first rejection wins.

Contract:

- ``ValidateArguments(schemas, checks)`` rejects a call before anything below it runs
  (so a rejected call never reaches an upstream). For each tool it runs, in order,
  the tool's own ``checks`` (each returns a ``ToolError`` or ``None``; they see the raw
  arguments and must tolerate any JSON), then the tool's JSON Schema (2020-12).
  Custom checks go first so that they can give a precise, typed error (e.g. "filter
  must be a typed object") where the schema would only say "wrong type". A check that
  trips over a value of an unexpected type (``TypeError``, ``ValueError``, ...) yields to
  the schema's verdict on that value; only if the schema accepts it is the exception
  raised (a defect in the check, contained by ``PreserveErrors``).
- Schema failures become ``invalid_arguments`` errors whose message names the
  argument and says what the schema asks for (the length, the required argument, the
  pattern, the range, the choices) and so what to send instead, bounded and never echoing a
  large value. Nothing in them is any one gateway's: ``hints`` (by ``(argument, keyword)``,
  e.g. ``("limit", "maximum")``) adds a gateway's own next step to a refusal, and
  ``error_type`` (default ``"invalid_request_error"``) is the envelope's ``type``.
  Each schema is compiled once. A call that jsonschema-rs (a compiled 2020-12 validator,
  about a microsecond) finds valid is passed without more; anything it refuses or cannot
  read (a value of a type JSON does not have) gets jsonschema's verdict and explanation,
  so a refusal always reads the same and the fast check never refuses alone. jsonschema
  is imported, and a tool's validator compiled, on that tool's first such refusal, or
  all at once when built with ``compile_now`` (a server, before it serves).
- Whole-number floats (``5.0``, an integer to JSON Schema) are normalised to ints
  (``5``) before the checks, everywhere in the arguments, so every stage below sees
  one spelling of a number (an encoder never sends ``limit=5.0``).
- Arguments nested deeper than ``MAX_DEPTH`` are refused first (``invalid_arguments``),
  before any recursive step, so a hostile payload cannot exhaust the stack.
- Tools with no schema pass through untouched: the server decides what an unknown
  tool name means.
- ``parsers`` (optional, by tool): once the ladder and the schema accepted the arguments,
  the tool's parser turns them into its typed, frozen value, handed down as
  ``call.parsed`` (so a record handle is parsed and a filter encoded here, once, and
  nowhere below). A parser sees only arguments the schema accepted; it may still refuse
  them with a ``ToolError`` (a check that needs the parse, such as a record handle's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from mcp_gateway_middleware.errors import ToolError, echo, gateway_error
from mcp_gateway_middleware.pipeline import C, JSONObject, Next, Role, ToolCall, ToolResult

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator as Validator
    from jsonschema.exceptions import ValidationError

__all__ = [
    "MAX_DEPTH",
    "Check",
    "Parser",
    "ValidateArguments",
    "depth_exceeds",
    "fast_accept",
    "whole_numbers",
]

Check = Callable[[Mapping[str, Any]], ToolError | None]
Parser = Callable[[Mapping[str, Any]], object]
MAX_SAFE_INTEGER: Final = 2**53
MAX_DEPTH: Final = 32
_MAX_MESSAGE: Final = 300


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether objects/arrays in ``value`` nest more than ``limit`` levels (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def whole_numbers(value: Any) -> Any:
    """``value`` with every whole-number float (within the exact-integer range) turned into an int."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return int(value)
    if isinstance(value, Mapping):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value


def fast_accept(schema: JSONObject) -> Callable[[Any], bool]:
    """jsonschema-rs's verdict on a value, where it is a yes; ``False`` (let jsonschema
    decide) for a value it cannot read, such as a dict keyed by a ``str`` subclass."""
    import jsonschema_rs

    is_valid = jsonschema_rs.Draft202012Validator(schema).is_valid

    def accept(value: Any) -> bool:
        try:
            return bool(is_valid(value))
        except (ValueError, TypeError, OverflowError):
            return False

    return accept


class ValidateArguments:
    """Stage: reject bad arguments with a typed, actionable error."""

    role: ClassVar[Role] = Role.VALIDATE

    def __init__(
        self,
        schemas: Mapping[str, JSONObject],
        checks: Mapping[str, Sequence[Check]] | None = None,
        *,
        parsers: Mapping[str, Parser] | None = None,
        compile_now: bool = False,
        hints: Mapping[tuple[str, str], str] | None = None,
        error_type: str = "invalid_request_error",
    ) -> None:
        self._schemas = dict(schemas)
        self._words = _Words(dict(hints or {}), error_type)
        # jsonschema's validators word refusals only: built on a tool's first refusal (the
        # import and compile cost tens of milliseconds a start-up need not wait for).
        self._validators: dict[str, Validator] = {}
        self._fast = {name: fast_accept(schema) for name, schema in schemas.items()}
        self._checks = {name: tuple(ladder) for name, ladder in (checks or {}).items()}
        self._parsers = dict(parsers or {})
        if compile_now:  # a server that should not pay for it on its event loop, later
            for name in self._schemas:
                self._validator(name)

    def rejection(self, tool: str, arguments: Mapping[str, Any]) -> ToolError | None:
        """The first reason to refuse ``arguments`` for ``tool``, or ``None``."""
        return self.verdict(tool, arguments)[0]

    def verdict(self, tool: str, arguments: Mapping[str, Any]) -> tuple[ToolError | None, object]:
        """``(the first reason to refuse, None)``, or ``(None, the tool's parsed arguments)``
        (``None`` for a tool without a parser)."""
        error = self._ladder_rejection(tool, arguments)
        if error is not None:
            return error, None
        parser = self._parsers.get(tool)
        if parser is None:
            return None, None
        try:
            return None, parser(arguments)
        except ToolError as refused:
            return refused, None

    def _ladder_rejection(self, tool: str, arguments: Mapping[str, Any]) -> ToolError | None:
        for check in self._checks.get(tool, ()):
            try:
                error = check(arguments)
            except (TypeError, ValueError, AttributeError, KeyError):
                # A check met a value of a type it did not expect (a list where a name
                # belongs, say). The schema names such values precisely; if the schema
                # accepts the value, the check itself is wrong and that is a defect.
                error = self._schema_rejection(tool, arguments)
                if error is None:
                    raise
            if error is not None:
                return error
        return self._schema_rejection(tool, arguments)

    def _schema_rejection(self, tool: str, arguments: Mapping[str, Any]) -> ToolError | None:
        if tool not in self._schemas:
            return None
        instance = dict(arguments)
        if self._fast[tool](instance):
            return None  # valid (jsonschema-rs): jsonschema's walk would find nothing
        validator = self._validator(tool)
        failures = sorted(validator.iter_errors(instance), key=_failure_rank)
        if not failures:
            return None
        return _schema_error(tool, failures[0], validator.schema, self._words)

    def _validator(self, tool: str) -> Validator:
        validator = self._validators.get(tool)
        if validator is None:
            from jsonschema import Draft202012Validator

            validator = self._validators[tool] = Draft202012Validator(self._schemas[tool])
        return validator

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult:
        if _flat(call.arguments):  # most calls: nothing nests, nothing to normalise
            return await self._checked(call, dict(call.arguments), next_)
        known = call.name in self._schemas or call.name in self._checks
        if known and depth_exceeds(call.arguments):
            raise gateway_error(
                "invalid_arguments",
                f"The arguments nest more than {MAX_DEPTH} levels deep; no tool takes values that deep. "
                "Send flat values as each argument's schema describes.",
                type_=self._words.error_type,
            )
        return await self._checked(call, whole_numbers(call.arguments), next_)

    async def _checked(self, call: ToolCall[C], arguments: JSONObject, next_: Next[C]) -> ToolResult:
        error, parsed = self.verdict(call.name, arguments)
        if error is not None:
            raise error
        return await next_(call.with_arguments(arguments, parsed))


_SCALARS: Final = frozenset({str, int, bool, type(None)})


def _flat(arguments: Mapping[str, Any]) -> bool:
    """Whether ``arguments`` is a plain object of strings, integers, booleans and nulls:
    one level deep, with no float to normalise."""
    return type(arguments) is dict and all(type(value) in _SCALARS for value in arguments.values())


def _failure_rank(error: ValidationError) -> tuple[int, int]:
    # Report the outermost problem first: an unknown argument before a bad value inside one.
    return (len(error.absolute_path), 0 if error.validator == "additionalProperties" else 1)


@dataclass(frozen=True, slots=True)
class _Words:
    hints: dict[tuple[str, str], str]  # (argument, keyword) -> a gateway's own next step
    error_type: str


_UNITS: Final = {"maxLength": "characters", "maxItems": "items", "maxProperties": "keys"}
_BOUNDS: Final = {
    "maximum": "at most",
    "exclusiveMaximum": "less than",
    "minimum": "at least",
    "exclusiveMinimum": "greater than",
    "multipleOf": "a multiple of",
}
_PATTERN_CHARS: Final = 120


def _schema_error(tool: str, error: ValidationError, schema: Mapping[str, Any], words: _Words) -> ToolError:
    path = [str(part) for part in error.absolute_path]
    param = path[0] if path else None
    validator = str(error.validator)
    message = _refusal_text(tool, error, schema, path)
    hint = words.hints.get((param or "", validator))
    if validator == "required":
        absent = _absent(error)
        param = absent[0] if absent else None
    elif validator == "additionalProperties" and not path:
        unknown = _unknown(error, schema)
        param = unknown[0] if unknown else None
    return gateway_error(
        "invalid_arguments", f"{message} {hint}" if hint else message, param=param, type_=words.error_type
    )


def _refusal_text(tool: str, error: ValidationError, schema: Mapping[str, Any], path: Sequence[str]) -> str:
    where = _describe_path(path)
    validator = error.validator
    value = error.validator_value
    if validator == "additionalProperties" and not path:
        allowed = sorted(schema.get("properties", {}))
        unknown = _unknown(error, schema)
        return (
            f"{tool} does not accept {', '.join(repr(u) for u in unknown) or 'that argument'}; "
            f"allowed arguments: {', '.join(allowed)}."
        )
    if validator == "additionalProperties":
        allowed = sorted((error.schema.get("properties") or {}).keys())
        return f"{where} has unsupported keys; allowed keys: {', '.join(allowed) or 'none'}."
    if validator == "required":
        absent = _absent(error)
        return f"{tool} requires the argument '{absent[0] if absent else 'a required argument'}'."
    if validator in _BOUNDS:
        return f"{where} must be {_BOUNDS[str(validator)]} {value}."
    if validator == "enum":
        return f"{where} must be one of: {', '.join(str(v) for v in value)}."
    if validator == "const":
        return f"{where} must be {echo(value)}."
    if validator == "type":
        expected = value if isinstance(value, str) else " or ".join(value)
        return f"{where} must be {_article(expected)} {expected}, not {_json_type(error.instance)}."
    if validator == "minLength":
        if value == 1:
            return f"{where} must not be empty."
        return f"{where} must be at least {value} characters long, not {len(error.instance)}."
    if validator in _UNITS:
        return f"{where} is too long: at most {value} {_UNITS[str(validator)]} are accepted."
    if validator in {"minItems", "minProperties"}:
        omit = "; omit it instead" if _optional(path, schema) else ""
        if validator == "minProperties" and value == 1:
            return f"{where} must not be an empty object{omit}."
        unit = "item(s)" if validator == "minItems" else "key(s)"
        return f"{where} must list at least {value} {unit}{omit}."
    if validator == "pattern":
        pattern = value if len(value) <= _PATTERN_CHARS else f"{value[: _PATTERN_CHARS - 1]}…"
        return f"{where} must match the pattern {pattern!r}; {echo(error.instance)} does not."
    detail = error.message if len(error.message) <= _MAX_MESSAGE else f"fails the '{validator}' rule"
    return f"{where}: {detail}"


def _unknown(error: ValidationError, schema: Mapping[str, Any]) -> list[str]:
    known = set(schema.get("properties", {}))
    return sorted(set(error.instance) - known) if isinstance(error.instance, dict) else []


def _absent(error: ValidationError) -> list[str]:
    missing = error.validator_value if isinstance(error.validator_value, list) else []
    return [str(m) for m in missing if isinstance(error.instance, dict) and m not in error.instance]


def _optional(path: Sequence[str], schema: Mapping[str, Any]) -> bool:
    """Whether the refused value is a top-level argument the tool's schema does not require."""
    return len(path) == 1 and path[0] not in (schema.get("required") or ())


def _describe_path(path: Sequence[str]) -> str:
    if not path:
        return "the arguments"
    head, *rest = path
    return f"argument '{head}" + "".join(f"[{p}]" for p in rest) + "'"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
