"""The packages import downward only: a lower layer never reaches up into a higher one.

Every ``import`` in ``pdpp_gateway`` and ``mcp_gateway_middleware`` (``middleware/src``) (top-level and deferred ones alike) is
read with ``ast`` and checked against the layer order below, lowest first. A module may
import from its own layer and the layers under it; the doors never import one another.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Lowest first. A name is a top-level module or subpackage of pdpp_gateway ("" is the
# package itself, for __version__), or the reusable middleware library. Each folder of
# pdpp_gateway is one family and sits in one layer.
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("reusable middleware", frozenset({"mcp_gateway_middleware"})),
    (
        "foundation",
        frozenset({"", "wire", "observe", "files", "question"})
        | frozenset(
            {
                "caller",
                "refusals",
                "error_types",
                "ids",
                "schema_view",
                "marks",
                "documents",
                "instructions",
                "expiring",
            }
        ),
    ),
    ("reading the RS", frozenset({"rs", "context", "local_verdict"})),
    ("tools", frozenset({"tools", "retrieval", "render", "package"})),
    ("protocol", frozenset({"server", "resources"})),
    ("local grants", frozenset({"local", "settings"})),
    ("doors", frozenset({"fast_start", "stdio", "hosted", "sandbox"})),
    ("command line", frozenset({"commands", "cli", "__main__"})),
]
DOORS: list[frozenset[str]] = [
    frozenset({"fast_start", "stdio"}),
    frozenset({"hosted"}),
    frozenset({"sandbox"}),
]


def unit(module: str) -> str | None:
    """The layer unit a dotted module name belongs to, or None outside the project."""
    parts = module.split(".")
    if parts[0] == "mcp_gateway_middleware":
        return "mcp_gateway_middleware"
    if parts[0] != "pdpp_gateway":
        return None
    return parts[1] if len(parts) > 1 else ""


def layer_of(name: str) -> int:
    for index, (_, units) in enumerate(LAYERS):
        if name in units:
            return index
    raise AssertionError(f"{name!r} is in no layer: add it to LAYERS")


def _is_module(name: str) -> bool:
    package = ROOT / "pdpp_gateway"
    return (package / f"{name}.py").exists() or (package / name).is_dir()


def imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            if (
                node.module == "pdpp_gateway"
            ):  # ``from pdpp_gateway import tracing`` (a module, not __version__)
                found += [f"pdpp_gateway.{a.name}" for a in node.names if _is_module(a.name)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def test_every_import_points_down_the_layers() -> None:
    wrong: list[str] = []
    for path in sorted([*ROOT.glob("pdpp_gateway/**/*.py"), *ROOT.glob("middleware/src/**/*.py")]):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        module = module.removeprefix("middleware.src.")
        source = unit(module)
        assert source is not None
        for target in imports(path):
            goal = unit(target)
            if (
                goal is None
                or goal == source
                or (target == "pdpp_gateway" and source != "mcp_gateway_middleware")
            ):
                continue
            if layer_of(goal) > layer_of(source):
                wrong.append(
                    f"{module} ({LAYERS[layer_of(source)][0]}) imports {target} ({LAYERS[layer_of(goal)][0]})"
                )
            door = next((d for d in DOORS if source in d), None)
            if door is not None and goal not in door and any(goal in other for other in DOORS):
                wrong.append(f"{module} imports another door: {target}")
    assert not wrong, "\n".join(wrong)
