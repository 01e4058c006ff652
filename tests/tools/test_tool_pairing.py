"""A tool record ties one parser to its handler, renderer and shape: mypy refuses any other pairing.

``Tool`` is generic in the parsed arguments' type, inferred from the record's parser; a
handler, renderer or shape written for another tool's arguments leaves no type to infer.
mypy (strict, the project's configuration) checks a module of records here: the right
pairings pass, and each wrong one is an error on its own line.
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]
RECORDS = """
from pdpp_gateway.package.fan_out import PackageRoute
from pdpp_gateway.render import render_records, render_schema
from pdpp_gateway.tools import args, checks, handlers, specs
from pdpp_gateway.tools.registry import REGISTRY, Registry, Tool

SCHEMA = Tool(
    specs.SCHEMA, (), args.parse_schema, handlers.schema, render_schema, PackageRoute.SCHEMA,
    shape=handlers.shape_schema,
)
RECORDS = Tool(
    specs.QUERY_RECORDS, (), args.parse_query_records, handlers.query_records, render_records,
    PackageRoute.STREAM,
)
ALL = Registry([*REGISTRY.tools, SCHEMA, RECORDS])
OTHER_HANDLER = Tool(specs.SCHEMA, (), args.parse_schema, handlers.query_records, render_schema, PackageRoute.SCHEMA)
OTHER_RENDERER = Tool(specs.SCHEMA, (), args.parse_schema, handlers.schema, render_records, PackageRoute.SCHEMA)
OTHER_PARSER = Tool(specs.FETCH, (), args.parse_fetch, handlers.fetch, render_schema, PackageRoute.HANDLE)
OTHER_SHAPE = Tool(
    specs.QUERY_RECORDS, (), args.parse_query_records, handlers.query_records, render_records,
    PackageRoute.STREAM, shape=handlers.shape_schema,
)
"""


def test_mypy_refuses_a_record_pairing_one_tools_parser_with_anothers_handler_or_renderer(
    tmp_path: Path,
) -> None:
    module = tmp_path / "records.py"
    module.write_text(RECORDS)
    report, errors, status = api.run(
        [str(module), "--config-file", str(ROOT / "pyproject.toml"), "--no-error-summary"]
    )
    assert errors == ""
    lines = RECORDS.splitlines()
    refused = {lines[int(line.split(":")[1]) - 1].split(" = ")[0] for line in report.splitlines()}
    assert refused == {"OTHER_HANDLER", "OTHER_RENDERER", "OTHER_PARSER", "OTHER_SHAPE"}, report
    assert all('Cannot infer value of type parameter "A" of "Tool"' in line for line in report.splitlines())
    assert status == 1
