"""The wire kernel imports no SDK: it restates the SDK's bytes so that the stdio door can
answer before the SDK has loaded (``tests/test_layers.py`` keeps it in the foundation)."""

from __future__ import annotations

from tests.test_layers import ROOT, imports

SDK: frozenset[str] = frozenset({"mcp", "mcp_types"})


def test_no_module_of_the_kernel_imports_the_sdk() -> None:
    modules = sorted((ROOT / "pdpp_gateway" / "wire").glob("*.py"))
    assert len(modules) > 5
    found = [
        f"{path.name}: {target}"
        for path in modules
        for target in imports(path)
        if target.split(".")[0] in SDK
    ]
    assert not found
