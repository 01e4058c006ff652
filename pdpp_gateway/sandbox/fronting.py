"""The gateway's settings for fronting the sandbox RS (the demo, tests, benchmarks).

Contract: ``sandbox_settings(sandbox_url, introspection=True, **overrides)`` is a
``HostedSettings`` for a gateway in front of the sandbox RS at ``sandbox_url``, validating
bearers by introspection with the sandbox's own introspection client (or, with
``introspection=False``, by the schema probe). It lives with the sandbox, so the hosted
door never depends on the sandbox.
"""

from __future__ import annotations

from typing import Any

from pdpp_gateway.sandbox.config import SandboxConfig
from pdpp_gateway.settings import HostedSettings

_SANDBOX = SandboxConfig()


def sandbox_settings(sandbox_url: str, *, introspection: bool = True, **overrides: Any) -> HostedSettings:
    values: dict[str, Any] = {"provider_url": sandbox_url, "port": 0}
    if introspection:
        values |= {
            "introspection_url": f"{sandbox_url}/introspect",
            "introspection_client_id": _SANDBOX.introspection_client_id,
            "introspection_client_secret": _SANDBOX.introspection_client_secret,
        }
    values.update(overrides)
    return HostedSettings(**values)
