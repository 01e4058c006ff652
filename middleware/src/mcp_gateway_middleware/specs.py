"""A tool as a gateway declares it once: what ``tools/list`` shows and what validation checks.

Contract (plain data, no SDK: the pipeline runs without it):

- ``ToolSpec(name, description, input_schema, output_schema=None, title=None, annotations=None)``.
  ``annotations`` are MCP ``ToolAnnotations`` members as they go on the wire (``readOnlyHint``,
  ``idempotentHint``, ...). Both schemas have ``"type": "object"`` at the root (the SDK refuses
  a listing otherwise, in every protocol era); ``ToolSpec`` says so when built.
- ``input_schemas(specs)``: ``{name: input_schema}``, what ``ValidateArguments`` takes.
- ``sdk.tool_handlers`` turns specs into ``tools/list`` and ``tools/call`` (extra ``mcp``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_gateway_middleware.pipeline import JSONObject

__all__ = ["ToolSpec", "input_schemas"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: JSONObject
    output_schema: JSONObject | None = None
    title: str | None = None
    annotations: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for which, schema in (("input_schema", self.input_schema), ("output_schema", self.output_schema)):
            if schema is not None and schema.get("type") != "object":
                raise ValueError(
                    f'tool {self.name}: {which} needs "type": "object" at its root (MCP clients refuse '
                    "any other); wrap the value in an object property."
                )


def input_schemas(specs: Iterable[ToolSpec]) -> dict[str, JSONObject]:
    """Each tool's input schema by name, for ``ValidateArguments``."""
    return {spec.name: spec.input_schema for spec in specs}
