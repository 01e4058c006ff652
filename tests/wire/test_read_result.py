"""``wire.read_result`` writes a resource read's result with the SDK's bytes, in both eras.

For any JSON bodies or blob, the frame the stdio early path writes for a read is the frame
the real SDK writes when a ``read_resource`` handler returns the SDK's own
``ReadResourceResult`` of the same parts (``TextResourceContents`` /
``BlobResourceContents``): key order, the URI as given, the 2026-07-28 defaults and stamp.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from hypothesis import given
from hypothesis import strategies as st
from mcp.server import Server, ServerRequestContext

from pdpp_gateway.wire import read_result
from pdpp_gateway.wire.envelope import frame
from pdpp_gateway.wire.json_bytes import encode
from tests.wire.sdk import JSON_VALUES, REQUEST_ID, sdk_answer

URIS = st.from_regex(r"pdpp://(stream|record|blob)/[A-Za-z0-9%._~:/-]{1,40}", fullmatch=True)
MIME_TYPES = st.sampled_from(["application/octet-stream", "image/png", "text/plain; charset=utf-8"])
READS = st.one_of(
    st.tuples(st.just("json"), st.lists(JSON_VALUES, min_size=1, max_size=3)),
    st.tuples(st.just("blob"), st.tuples(st.binary(max_size=64), MIME_TYPES)),
)


def _sdk_contents(
    uri: str, contents: list[dict[str, Any]]
) -> list[types.TextResourceContents | types.BlobResourceContents]:
    return [
        types.BlobResourceContents(uri=uri, mime_type=part["mimeType"], blob=part["blob"])
        if "blob" in part
        else types.TextResourceContents(uri=uri, mime_type=part["mimeType"], text=part["text"])
        for part in contents
    ]


@given(uri=URIS, read=READS, modern=st.booleans())
def test_a_read_is_written_with_the_sdks_bytes(uri: str, read: tuple[str, Any], modern: bool) -> None:
    kind, parts = read
    if kind == "json":
        contents = [read_result.json_contents(uri, body) for body in parts]
    else:
        contents = [read_result.blob_contents(uri, *parts)]

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=_sdk_contents(str(params.uri), contents))

    server: Server = Server("oracle", on_read_resource=read_resource)
    body = encode(read_result.result_wire(contents, modern=modern, stamp=server.server_info_stamp))
    assert body is not None
    assert frame(str(REQUEST_ID), b"result", body) == sdk_answer(
        server, "resources/read", {"uri": uri}, modern=modern
    )
