"""``wire.plain`` takes only requests the SDK reads exactly as written: never looser.

Hypothesis draws ``tools/call`` and ``resources/read`` params (names, arguments, URIs,
extra members, ``_meta`` envelopes with well- and ill-formed client info and capabilities,
progress tokens) and ``initialize`` params. Whatever the one plain rule takes (the hosted
fast path and the stdio early path both ask it), the SDK's own request models accept, in
the era it was taken for, and read as the same call: the same tool and arguments, the same
URI, the same protocol version, and nothing else the SDK would act on (no progress token).
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types import methods as sdk_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from pdpp_gateway.tools.specs import TOOL_NAMES
from pdpp_gateway.wire.plain import (
    CALL_METHOD,
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    PROTOCOL_VERSION_KEY,
    READ_METHOD,
    envelope_version,
    initialize_version,
    plain,
)

HANDSHAKE = HANDSHAKE_PROTOCOL_VERSIONS[-1]
MEMBERS = ["listChanged", "context", "tools", "form", "url", "list", "x"]
SHAPES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(MEMBERS), inner, max_size=3),
    max_leaves=6,
)
TEXT = st.text(max_size=3)
OBJECTS = st.dictionaries(TEXT, st.dictionaries(TEXT, SHAPES, max_size=2), max_size=2)
# Each strategy draws well-formed shapes (mostly) and anything at all (the rest).
CAPABILITIES = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "roots": st.fixed_dictionaries({}, optional={"listChanged": st.booleans() | st.none() | SHAPES}),
            "sampling": st.fixed_dictionaries(
                {}, optional={"context": st.just({}) | SHAPES, "tools": st.just({})}
            ),
            "elicitation": st.fixed_dictionaries(
                {}, optional={"form": st.just({}), "url": st.just({}) | SHAPES}
            ),
            "experimental": OBJECTS | SHAPES,
            "extensions": OBJECTS,
            "tasks": st.just({}) | SHAPES,
            "other": SHAPES,
        },
    ),
    st.dictionaries(
        st.sampled_from(["roots", "sampling", "elicitation", "experimental", "extensions", "tasks", "other"]),
        SHAPES,
        max_size=4,
    ),
    SHAPES,
)
INFO = st.one_of(
    st.fixed_dictionaries(
        {"name": TEXT, "version": TEXT},
        optional={
            "title": TEXT | st.none(),
            "description": TEXT | SHAPES,
            "websiteUrl": st.just("https://c.example") | st.none(),
            "icons": st.lists(st.fixed_dictionaries({"src": st.just("https://c.example/i.png")}), max_size=1),
        },
    ),
    st.dictionaries(
        st.sampled_from(["name", "version", "title", "description", "websiteUrl", "icons", "x"]),
        TEXT | st.integers() | st.none() | st.lists(TEXT, max_size=1),
        max_size=5,
    ),
    SHAPES,
)
VERSIONS = st.sampled_from([*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS, "2099-01-01"]) | SHAPES
META = st.one_of(
    st.fixed_dictionaries(
        {
            PROTOCOL_VERSION_KEY: st.sampled_from(MODERN_PROTOCOL_VERSIONS),
            CLIENT_CAPABILITIES_KEY: CAPABILITIES,
        },
        optional={CLIENT_INFO_KEY: INFO, "progressToken": st.integers() | TEXT},
    ),
    st.fixed_dictionaries(
        {},
        optional={
            PROTOCOL_VERSION_KEY: VERSIONS,
            CLIENT_INFO_KEY: INFO,
            CLIENT_CAPABILITIES_KEY: CAPABILITIES,
            "progressToken": st.integers() | TEXT,
        },
    ),
    SHAPES,
)
ARGUMENTS = st.none() | st.dictionaries(st.text(max_size=5), SHAPES, max_size=3) | SHAPES
CALLS = st.one_of(
    st.fixed_dictionaries(
        {"name": st.sampled_from(TOOL_NAMES)}, optional={"arguments": ARGUMENTS, "task": SHAPES}
    ),
    st.fixed_dictionaries(
        {"name": st.sampled_from(TOOL_NAMES), "_meta": META}, optional={"arguments": ARGUMENTS}
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from([*TOOL_NAMES, "no_such_tool"]) | SHAPES,
            "arguments": ARGUMENTS,
            "x": SHAPES,
        },
    ),
)
URIS = st.sampled_from(["pdpp://stream/messages", "", "é"])
READS = st.one_of(
    st.fixed_dictionaries({"uri": URIS}),
    st.fixed_dictionaries({"uri": URIS, "_meta": META}),
    st.fixed_dictionaries({}, optional={"uri": SHAPES, "_meta": META, "x": SHAPES}),
)
REQUESTS = st.tuples(st.just(CALL_METHOD), CALLS) | st.tuples(st.just(READ_METHOD), READS)
INITIALIZE = st.one_of(
    st.fixed_dictionaries(
        {"protocolVersion": VERSIONS, "capabilities": CAPABILITIES, "clientInfo": INFO},
        optional={"_meta": META},
    ),
    st.fixed_dictionaries(
        {}, optional={"protocolVersion": VERSIONS, "capabilities": CAPABILITIES, "clientInfo": INFO}
    ),
)


def test_the_envelope_keys_are_the_sdks() -> None:
    assert PROTOCOL_VERSION_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert CLIENT_INFO_KEY == mcp_types.CLIENT_INFO_META_KEY
    assert CLIENT_CAPABILITIES_KEY == mcp_types.CLIENT_CAPABILITIES_META_KEY


def _sdk_reads(method: str, version: str, params: dict[str, Any]) -> Any:
    """The params as the SDK's runner reads them at ``version`` (raises where it refuses)."""
    sdk_methods.validate_client_request(method, version, params)
    model = types.CallToolRequestParams if method == CALL_METHOD else types.ReadResourceRequestParams
    return model.model_validate(params, by_name=False)


@settings(max_examples=300)
@given(request=REQUESTS, modern=st.booleans())
def test_a_plain_request_is_read_by_the_sdk_as_it_is(
    request: tuple[str, dict[str, Any]], modern: bool
) -> None:
    method, params = request
    taken = plain(
        method, params, names=TOOL_NAMES, modern_versions=MODERN_PROTOCOL_VERSIONS if modern else None
    )
    if taken is None:
        return
    version = taken.version if modern else HANDSHAKE
    assert version is not None
    read = _sdk_reads(method, version, params)
    if method == CALL_METHOD:
        assert (read.name, read.arguments or {}) == (taken.name, taken.arguments)
    else:
        assert (taken.name, taken.arguments) == (READ_METHOD, {"uri": read.uri})
    assert progress_token_from_params(params) is None  # no progress to report
    if modern:
        assert version == params["_meta"][PROTOCOL_VERSION_KEY]
    else:
        assert "_meta" not in params


@settings(max_examples=300)
@given(meta=META)
def test_an_envelope_taken_is_one_the_sdk_accepts(meta: Any) -> None:
    version = envelope_version(meta, MODERN_PROTOCOL_VERSIONS)
    if version is None:
        return
    assert version == meta[PROTOCOL_VERSION_KEY]
    for method in ("server/discover", "tools/list", "resources/templates/list"):
        sdk_methods.validate_client_request(method, version, {"_meta": meta})


@settings(max_examples=300)
@given(params=INITIALIZE)
def test_an_initialize_taken_is_one_the_sdk_reads_as_it_is(params: dict[str, Any]) -> None:
    requested = initialize_version(params)
    if requested is None:
        return
    assert types.InitializeRequestParams.model_validate(params, by_name=False).protocol_version == requested
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        sdk_methods.validate_client_request("initialize", version, params)


@pytest.mark.parametrize(
    ("params", "modern"),
    [
        ({"name": "schema"}, False),
        ({"name": "search", "arguments": {"query": "x"}}, False),
        (
            {
                "name": "schema",
                "arguments": None,
                "_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}},
            },
            True,
        ),
    ],
)
def test_the_plain_calls_clients_send_are_taken(params: dict[str, Any], modern: bool) -> None:
    """The rule has a true side: the calls every client sends are taken (else the fast paths
    would decline everything and the property above would hold vacuously)."""
    assert plain(
        CALL_METHOD, params, names=TOOL_NAMES, modern_versions=MODERN_PROTOCOL_VERSIONS if modern else None
    )
