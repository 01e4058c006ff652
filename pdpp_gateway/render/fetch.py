"""Text for ``fetch``: exactly the document, as compact JSON (spec: mirror structuredContent).

The bounding happens in the document itself (``documents.fetch_document`` cuts long
text with an explicit marker), so the mirror is both exact and bounded.
"""

from __future__ import annotations

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.render.common import dumps
from pdpp_gateway.tools.args import FetchArgs


def render_fetch(args: FetchArgs, result: ToolResult) -> str:
    return dumps(result.structured)
