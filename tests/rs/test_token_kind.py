"""The one ``/v1/schema`` bearer probe both doors use: which answers fall back to the
plain form, how a package token is recognised, and the ``data`` envelope."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pdpp_gateway.caller import BearerFacts, TokenKind
from pdpp_gateway.rs.client import RsBlob, RsResponse
from pdpp_gateway.rs.errors import RsStatusError
from pdpp_gateway.rs.token_kind import SchemaProbe

COMPACT = ("/v1/schema", (("view", "compact"),))
PLAIN = ("/v1/schema", ())
BEARER = {"token_kind": "client", "grant_id": "grt_1", "client_id": "cli_1"}


class ScriptedRs:
    """An ``RsReader`` answering each (path, query) from a script: a body or a status + code."""

    def __init__(self, answers: Mapping[tuple[str, tuple[tuple[str, str], ...]], Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, tuple[tuple[str, str], ...]]] = []

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        key = (path, tuple(query))
        self.asked.append(key)
        answer = self.answers[key]
        if isinstance(answer, tuple):
            status, code = answer
            raise RsStatusError(status, {"type": "x", "code": code, "message": "m"}, None)
        return RsResponse(status=200, body=answer, request_id=None, url_path=path)

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        raise AssertionError("the probe only reads JSON")


@pytest.mark.parametrize("status", [400, 405, 422])
async def test_a_refused_compact_form_falls_back_to_the_plain_one(status: int) -> None:
    rs = ScriptedRs({COMPACT: (status, "invalid_request"), PLAIN: {"bearer": BEARER}})
    assert await SchemaProbe().probe(rs) == BearerFacts(kind="client", grant_id="grt_1", client_id="cli_1")
    assert rs.asked == [COMPACT, PLAIN]


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_token_is_not_a_refused_form(status: int) -> None:
    rs = ScriptedRs({COMPACT: (status, "context.audience_mismatch")})
    with pytest.raises(RsStatusError) as refused:
        await SchemaProbe().probe(rs)
    assert refused.value.code == "context.audience_mismatch"
    assert rs.asked == [COMPACT]


async def test_not_found_is_a_package_token_on_either_form() -> None:
    rs = ScriptedRs({COMPACT: (404, "not_found")})
    assert await SchemaProbe().probe(rs) == BearerFacts(kind=TokenKind.PACKAGE, by_route=True)
    assert rs.asked == [COMPACT]
    rs = ScriptedRs({COMPACT: (400, "invalid_request"), PLAIN: (404, "not_found")})
    assert (await SchemaProbe().probe(rs)).kind == TokenKind.PACKAGE


async def test_a_data_envelope_is_unwrapped_and_a_missing_bearer_names_no_kind() -> None:
    assert (await SchemaProbe().probe(ScriptedRs({COMPACT: {"data": {"bearer": BEARER}}}))).kind == "client"
    assert await SchemaProbe().probe(ScriptedRs({COMPACT: {"object": "schema"}})) == BearerFacts()


async def test_the_form_the_rs_serves_is_remembered() -> None:
    probe = SchemaProbe()
    refusing = {COMPACT: (400, "invalid_request"), PLAIN: {"bearer": BEARER}}
    await probe.probe(ScriptedRs(refusing))
    rs = ScriptedRs(refusing)
    await probe.probe(rs)
    assert rs.asked == [PLAIN]
    serving = SchemaProbe()
    await serving.probe(ScriptedRs({COMPACT: {"bearer": BEARER}}))
    with pytest.raises(RsStatusError):  # the compact form works here: a 400 is about the request
        await serving.probe(ScriptedRs({COMPACT: (400, "invalid_request"), PLAIN: {"bearer": BEARER}}))
