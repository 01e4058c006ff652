"""``wire.params`` refuses exactly the params the SDK's models refuse, in words.

For any ``tools/call`` params (``name`` and ``arguments`` of any JSON type, or missing) and
any ``resources/read`` params (``uri`` of any type, or missing), ``params_problem`` names a
problem exactly when the SDK's own request models refuse them (where the SDK would only
say "Invalid request parameters"), in both eras.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from hypothesis import given
from hypothesis import strategies as st
from mcp_types import methods as sdk_methods
from pydantic import ValidationError

from pdpp_gateway.fast_start.build import envelope
from pdpp_gateway.wire.params import params_problem
from tests.wire.sdk import HANDSHAKE, JSON_VALUES, V2026

ANY = JSON_VALUES | st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=2)
CALLS = st.fixed_dictionaries({}, optional={"name": st.text(max_size=5) | ANY, "arguments": st.none() | ANY})
READS = st.fixed_dictionaries({}, optional={"uri": st.text(max_size=5) | ANY})
REQUESTS = st.tuples(st.just("tools/call"), CALLS) | st.tuples(st.just("resources/read"), READS)


def _sdk_refuses(method: str, version: str, params: dict[str, Any]) -> bool:
    model = types.CallToolRequestParams if method == "tools/call" else types.ReadResourceRequestParams
    if version == V2026:
        params = {**params, **envelope(V2026)}  # the envelope the 2026 surface needs (the door checks it)
    try:
        sdk_methods.validate_client_request(method, version, params)
        model.model_validate(params, by_name=False)
    except ValidationError:
        return True
    return False


@given(request=REQUESTS, version=st.sampled_from([HANDSHAKE, V2026]))
def test_a_problem_is_named_exactly_when_the_sdk_refuses(
    request: tuple[str, dict[str, Any]], version: str
) -> None:
    method, params = request
    assert (params_problem(method, params) is not None) == _sdk_refuses(method, version, params)
