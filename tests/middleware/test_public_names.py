"""The public surface of the reusable middleware library (``mcp_gateway_middleware``), pinned.

Another gateway builds on these names: removing or renaming one is a breaking change
that must show up here. Importing the package stays cheap: jsonschema (about 40 ms) is
loaded only when a ``ValidateArguments`` stage is built, and aiohttp only by who imports
the HTTP stages (``mcp_gateway_middleware.http``, ``mcp_gateway_middleware.ratelimit``).
"""

from __future__ import annotations

import subprocess
import sys

import mcp_gateway_middleware
import mcp_gateway_middleware.http

PUBLIC = {
    "__version__",
    "Check",
    "Deadline",
    "FanOut",
    "JSONObject",
    "LimitCalls",
    "Middleware",
    "Next",
    "Outcome",
    "Parser",
    "PipelineOrderError",
    "PreserveErrors",
    "RefuseTokenKinds",
    "RenderContent",
    "Renderer",
    "Role",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ValidateArguments",
    "compose",
    "echo",
    "gateway_error",
}


HTTP_PUBLIC = {
    "ACCEPTED",
    "Handler",
    "Stage",
    "accepted",
    "accepts",
    "bearer_check",
    "host_check",
    "rate_limit",
    "refusal_response",
    "refuse_token_kinds",
    "shape_checks",
}


def test_the_public_names_are_exactly_these() -> None:
    assert set(mcp_gateway_middleware.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(mcp_gateway_middleware, name) is not None


def test_the_http_stages_public_names_are_exactly_these() -> None:
    assert set(mcp_gateway_middleware.http.__all__) == HTTP_PUBLIC
    for name in HTTP_PUBLIC:
        assert getattr(mcp_gateway_middleware.http, name) is not None


def test_importing_the_library_and_its_framework_free_cores_loads_no_framework() -> None:
    # The tool stages, the door's decisions, the limiter and the ASGI door: no aiohttp, no SDK.
    probe = (
        "import sys, mcp_gateway_middleware, mcp_gateway_middleware.doors, mcp_gateway_middleware.hosts, "
        "mcp_gateway_middleware.ratelimit, "
        "mcp_gateway_middleware.asgi; print(sorted(m for m in ('jsonschema', 'aiohttp', 'pdpp_gateway', 'mcp') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)  # noqa: S603
    assert done.stdout.strip() == "[]"


def test_every_module_names_its_public_surface() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(mcp_gateway_middleware.__path__):
        if module.name in OPTIONAL_EXTRA_MODULES:
            continue
        loaded = importlib.import_module(f"mcp_gateway_middleware.{module.name}")
        assert isinstance(getattr(loaded, "__all__", None), list), module.name
        assert all(hasattr(loaded, name) for name in loaded.__all__), module.name


OPTIONAL_EXTRA_MODULES: set[str] = set()  # modules whose extra this environment may lack
