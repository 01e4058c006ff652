"""The one ladder (``caller.authenticate``) and the one refusal table it points into."""

from __future__ import annotations

import pytest

from pdpp_gateway.caller import BearerFacts, Caller, Rejection, TokenKind, authenticate, read_bearer
from pdpp_gateway.refusals import REFUSALS, ExitCode, explain, local_connect
from pdpp_gateway.wire.codes import CREDENTIAL_REFUSED, INVALID_REQUEST, UNAVAILABLE


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        (BearerFacts.inactive("grant_revoked"), "grant_revoked"),
        (BearerFacts.inactive("context.audience_mismatch"), "context.audience_mismatch"),
        (BearerFacts.inactive("issuer_mismatch"), "context.issuer_mismatch"),
        (BearerFacts.inactive("something_new"), "context.active_false"),
        (BearerFacts(kind="owner"), "owner_token_refused"),
        (BearerFacts(kind="mcp_package"), "mcp_package_token_refused"),  # a door that serves no packages
        (BearerFacts(kind="robot"), "token_kind_refused"),
        (BearerFacts(), "token_kind_refused"),  # the RS named no kind: fail closed
    ],
)
def test_the_ladder_refuses_with_one_code_per_cause(facts: BearerFacts, code: str) -> None:
    outcome: Caller[str] | Rejection = authenticate(facts)
    assert isinstance(outcome, Rejection)
    assert outcome.code == code
    assert code in REFUSALS


def test_an_owner_token_is_refused_even_where_packages_are_served() -> None:
    outcome = authenticate(BearerFacts(kind="owner"), serves_packages=True, package_members=["a"])
    assert outcome == Rejection("owner_token_refused", kind="owner")


@pytest.mark.parametrize(("members", "code"), [(None, "package_unresolvable"), ([], "package_revoked")])
def test_a_package_needs_members_the_door_can_name(members: list[str] | None, code: str) -> None:
    outcome = authenticate(BearerFacts(kind="mcp_package"), serves_packages=True, package_members=members)
    assert isinstance(outcome, Rejection)
    assert outcome.code == code


def test_accepted_callers_carry_their_grant_or_members() -> None:
    client = authenticate(BearerFacts(kind="client", grant_id="grt_1", client_id="cli_1"))
    assert client == Caller(TokenKind.CLIENT, "grt_1", "cli_1")
    package = authenticate(BearerFacts(kind="mcp_package"), serves_packages=True, package_members=["a", "b"])
    assert package == Caller(TokenKind.PACKAGE, members=("a", "b"))


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, Rejection("missing_token")),
        ("Basic abc", Rejection("missing_token")),
        ("Bearer ", Rejection("missing_token")),
        ("bearer tok.en-1~", "tok.en-1~"),
        ("Bearer tøken", Rejection("invalid_token")),
        ("Bearer a b", Rejection("invalid_token")),
    ],
)
def test_the_header_alone_decides_missing_and_malformed(header: str | None, expected: object) -> None:
    assert read_bearer(header) == expected


def test_every_refusal_renders_for_every_door_without_leftover_templates() -> None:
    for code, refusal in REFUSALS.items():
        for connect in (local_connect("https://rs.example"), "fetch https://rs.example/.well-known/x"):
            message, step = explain(Rejection(code, kind="robot", reason="odd"), connect)
            assert message, code
            assert step, code
            assert "{" not in message + step, code
        # A refused or uncheckable credential is told apart from a malformed request (two headers).
        expected = {401: CREDENTIAL_REFUSED, 403: CREDENTIAL_REFUSED, 503: UNAVAILABLE, 400: INVALID_REQUEST}
        assert refusal.rpc_code == expected[refusal.http_status], code
        assert isinstance(refusal.exit_code, ExitCode)


def test_statuses_and_exit_codes_follow_the_cause() -> None:
    assert {REFUSALS[c].http_status for c in ("owner_token_refused", "token_kind_refused")} == {403}
    assert {REFUSALS[c].exit_code for c in ("owner_token_refused", "mcp_package_token_refused")} == {77}
    assert {REFUSALS[c].exit_code for c in ("grant_revoked", "token_expired", "not_connected")} == {78}
    assert REFUSALS["authorization_unavailable"].retry_after == 5
