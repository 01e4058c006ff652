"""Text helpers shared by the renderers: bounded, copyable, never a dump.

Contract: ``as_mapping`` treats anything but an object as empty; ``clip`` cuts to a length with a visible ellipsis; ``call_text`` prints a
tool call as ``tool {json}`` (models copy the JSON object as the arguments);
``preview_value`` shortens long strings inside a value with an explicit
``…[+N chars]`` marker and replaces blob references by their metadata, reporting
which fields were shortened; ``kv`` formats ``key=value`` with strings JSON-quoted
only when they contain spaces or quotes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson


def as_mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (tolerates junk from upstream)."""
    return value if isinstance(value, Mapping) else {}


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def call_text(tool: str, arguments: Mapping[str, Any]) -> str:
    return f"{tool} {dumps(dict(arguments))}"


def kv(key: str, value: Any) -> str:
    if isinstance(value, str) and (not value or any(ch in value for ch in ' "\n=;')):
        return f"{key}={dumps(value)}"
    if isinstance(value, bool):
        return f"{key}={'true' if value else 'false'}"
    if value is None:
        return f"{key}=null"
    return f"{key}={value}"


def preview_value(value: Any, max_string: int, long_fields: list[tuple[str, int]], path: str = "") -> Any:
    """``value`` with long strings shortened and blobs summarised; records what was cut."""
    if isinstance(value, str):
        if len(value) <= max_string:
            return value
        long_fields.append((path, len(value)))
        return f"{value[:max_string]}…[+{len(value) - max_string} chars]"
    if isinstance(value, Mapping):
        if "blob_id" in value or "fetch_url" in value:
            return {
                "blob": value.get("mime_type") or value.get("content_type") or "binary",
                "size_bytes": value.get("size_bytes"),
            }
        return {
            k: preview_value(v, max_string, long_fields, f"{path}.{k}" if path else str(k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        shown = [preview_value(v, max_string, long_fields, path) for v in value[:10]]
        return [*shown, f"…[+{len(value) - 10} items]"] if len(value) > 10 else shown
    return value
