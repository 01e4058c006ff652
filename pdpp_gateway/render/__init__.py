"""Model-visible text for every tool result (the ``content[]`` of each call).

``RENDERERS`` maps tool names to pure ``(call, result) -> str`` renderers; ``render_error``
renders every ``isError`` result. Each renderer keeps its text bounded and carries the
handles a model needs for the next call, so a model that reads only the text can finish.
"""

from middleware import Renderer
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.render.aggregate import render_aggregate
from pdpp_gateway.render.errors import render_error
from pdpp_gateway.render.fetch import render_fetch
from pdpp_gateway.render.field_window import render_field_window
from pdpp_gateway.render.records import render_records
from pdpp_gateway.render.schema import render_schema
from pdpp_gateway.render.search import render_search

RENDERERS: dict[str, Renderer[GatewayContext]] = {
    "schema": render_schema,
    "query_records": render_records,
    "aggregate": render_aggregate,
    "search": render_search,
    "fetch": render_fetch,
    "read_record_field": render_field_window,
}

__all__ = ["RENDERERS", "render_error"]
