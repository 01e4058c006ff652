"""Text for ``fetch``: exactly the document, as compact JSON (spec: mirror structuredContent).

The bounding happens in the document itself (``documents.fetch_document`` cuts long
text with an explicit marker), so the mirror is both exact and bounded.
"""

from __future__ import annotations

from middleware import ToolCall, ToolResult
from pdpp_gateway.render.common import dumps


def render_fetch(call: ToolCall, result: ToolResult) -> str:
    return dumps(result.structured)
