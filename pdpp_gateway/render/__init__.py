"""Model-visible text for every tool result (the ``content[]`` of each call).

Each tool's renderer (``render_schema``, ``render_records``, ...) is a pure
``(args, result) -> str`` over the tool's parsed arguments (``tools/args``), named in the
tool's record (``tools/registry``); ``render_error`` renders every ``isError`` result
(``(call, result)``: the call's parsed arguments, if validation accepted them). Each
renderer keeps its text bounded and carries the handles a model needs for the next call,
so a model that reads only the text can finish.
"""

from pdpp_gateway.render.aggregate import render_aggregate
from pdpp_gateway.render.errors import render_error
from pdpp_gateway.render.fetch import render_fetch
from pdpp_gateway.render.field_window import render_field_window
from pdpp_gateway.render.records import render_records
from pdpp_gateway.render.schema import render_schema
from pdpp_gateway.render.search import render_search

__all__ = [
    "render_aggregate",
    "render_error",
    "render_fetch",
    "render_field_window",
    "render_records",
    "render_schema",
    "render_search",
]
