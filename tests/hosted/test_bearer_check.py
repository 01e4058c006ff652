"""Who may call /mcp: every refusal is decided before any read, and says what to do."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from pdpp_gateway.caller import BearerFacts, Rejection, TokenKind
from pdpp_gateway.hosted.bearer import Admission, BearerCheck
from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.hosted.origin import OriginPolicy
from pdpp_gateway.hosted.packages import FilePackageResolver
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.sandbox_fixtures import set_grant_status

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def post(url: str, token: str | None, body: Any = LIST_TOOLS) -> tuple[int, dict[str, str], Any]:
    headers = dict(HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with aiohttp.ClientSession() as http, http.post(url, json=body, headers=headers) as response:
        return response.status, dict(response.headers), await response.json(content_type=None)


def assert_challenge(url: str, headers: dict[str, str], body: Any, code: str) -> None:
    metadata = url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"
    assert headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata}"'
    assert body["jsonrpc"] == "2.0"
    assert body["id"] is None  # decided on headers alone: the body was never read
    assert body["error"]["code"] == -32001
    assert body["error"]["data"]["resource_metadata"] == metadata
    assert body["error"]["data"]["code"] == code
    assert body["error"]["data"]["next_step"]
    assert metadata in body["error"]["message"]  # the message alone says where to go
    assert headers["Link"] == f'<{url.removesuffix("/mcp")}/icon.svg>; rel="icon"; type="image/svg+xml"'


@pytest.mark.parametrize("introspection", [True, False], ids=["introspection", "schema-probe"])
async def test_missing_bearer_is_challenged_without_any_upstream_call(
    sandbox: Any, introspection: bool
) -> None:
    async with start_gateway(
        sandbox_settings(sandbox.url, introspection=introspection), public_self=True
    ) as url:
        sandbox.calls.clear()
        status, headers, body = await post(url, None)
        assert status == 401
        assert_challenge(url, headers, body, "missing_token")
        assert sandbox.calls == []


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("not-a-real-token", "context.active_false"),
        ("client_expired", "grant_expired"),
        ("client_revoked", "grant_revoked"),
        ("client_foreign", "context.audience_mismatch"),
    ],
)
async def test_invalid_bearers_are_challenged_and_make_no_reads(sandbox: Any, token: str, code: str) -> None:
    async with start_gateway(sandbox_settings(sandbox.url), public_self=True) as url:
        sandbox.calls.clear()
        bearer = sandbox.tokens.get(token, token)
        status, headers, body = await post(url, bearer)
        assert status == 401
        assert_challenge(url, headers, body, code)
        assert bearer not in str(body)
        assert sandbox.calls == []


async def test_owner_token_is_refused_with_403_before_any_read(sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(sandbox.url)) as url:
        sandbox.calls.clear()
        status, headers, body = await post(url, sandbox.tokens["owner"])
        assert status == 403
        assert body["error"]["data"]["code"] == "owner_token_refused"
        assert "WWW-Authenticate" not in headers
        assert "owner" in body["error"]["message"].lower()
        assert sandbox.calls == []


async def test_schema_probe_refuses_owner_after_its_single_check(sandbox: Any) -> None:
    """Without introspection the only way to learn the kind is the RS's own answer."""
    async with start_gateway(sandbox_settings(sandbox.url, introspection=False)) as url:
        sandbox.calls.clear()
        status, _, body = await post(
            url,
            sandbox.tokens["owner"],
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "x"}},
            },
        )
        assert status == 403
        assert body["error"]["data"]["code"] == "owner_token_refused"
        assert [(c.path, c.query) for c in sandbox.calls] == [("/v1/schema", "view=compact")]


async def test_package_with_no_active_child_is_refused(sandbox: Any) -> None:
    set_grant_status(sandbox, "client_work_mail", "revoked")
    set_grant_status(sandbox, "client_chat", "expired")
    async with start_gateway(sandbox_settings(sandbox.url)) as url:
        sandbox.calls.clear()
        status, _, body = await post(url, sandbox.tokens["package"])
        assert status == 403
        assert body["error"]["data"]["code"] == "package_revoked"
        assert sandbox.calls == []


async def test_revoked_child_leaves_the_package_and_is_never_offered(sandbox: Any) -> None:
    set_grant_status(sandbox, "client_chat", "revoked")
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "schema", "arguments": {}}}
    async with start_gateway(sandbox_settings(sandbox.url)) as url:
        status, _, body = await post(url, sandbox.tokens["package"], call)
        assert status == 200
        text = body["result"]["content"][0]["text"]
        assert "cin_mail_work" in text
        assert "cin_slack_acme" not in text
        assert {c.token_name for c in sandbox.calls} == {"client_work_mail"}


async def test_revocation_is_seen_within_the_cache_bound(sandbox: Any) -> None:
    bound = 2.0  # wide enough that the second call is inside it even on a loaded machine
    settings = sandbox_settings(sandbox.url, introspection_cache_seconds=bound)
    async with start_gateway(settings) as url:
        token = sandbox.tokens["client_work_mail"]
        assert (await post(url, token))[0] == 200
        cached_by = time.monotonic()  # the verdict was stored before the answer came back
        set_grant_status(sandbox, "client_work_mail", "revoked")
        assert (await post(url, token))[0] == 200  # still inside the cached verdict's lifetime
        await asyncio.sleep(cached_by + bound + 0.1 - time.monotonic())
        status, _, body = await post(url, token)
        assert status == 401
        assert body["error"]["data"]["code"] == "grant_revoked"


async def test_verdicts_are_cached_not_reintrospected(sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(sandbox.url)) as url:
        for _ in range(3):
            assert (await post(url, sandbox.tokens["client_narrow"]))[0] == 200
        async with aiohttp.ClientSession() as http, http.get(url.replace("/mcp", "/metrics")) as response:
            metrics = await response.text()
        assert 'pdpp_gateway_token_cache_lookups_total{result="miss"} 1.0' in metrics
        assert 'pdpp_gateway_token_cache_lookups_total{result="hit"} 2.0' in metrics


async def test_unreachable_authorization_server_is_503_not_a_pass(sandbox: Any) -> None:
    settings = sandbox_settings(sandbox.url, introspection_url="http://127.0.0.1:9/introspect")
    async with start_gateway(settings) as url:
        sandbox.calls.clear()
        status, headers, body = await post(url, sandbox.tokens["client_broad"])
        assert status == 503
        assert headers["Retry-After"] == "5"
        assert body["error"]["data"]["code"] == "authorization_unavailable"
        assert sandbox.calls == []


async def test_wrong_introspection_credentials_are_an_outage_not_a_bad_token(sandbox: Any) -> None:
    settings = sandbox_settings(sandbox.url, introspection_client_secret="wrong")
    async with start_gateway(settings) as url:
        status, _, body = await post(url, sandbox.tokens["client_broad"])
        assert status == 503
        assert body["error"]["data"]["code"] == "authorization_unavailable"


async def test_foreign_issuer_is_challenged(sandbox: Any) -> None:
    settings = sandbox_settings(sandbox.url, issuer="https://some-other-as.example")
    async with start_gateway(settings, public_self=True) as url:
        sandbox.calls.clear()
        status, headers, body = await post(url, sandbox.tokens["client_broad"])
        assert status == 401
        assert_challenge(url, headers, body, "context.issuer_mismatch")
        assert sandbox.calls == []


def package_file(tmp_path: Path, package_id: str) -> Path:
    path = tmp_path / "packages.json"
    member = {
        "token_env": "CHILD_WORK_MAIL",
        "grant_id": "grt_work_mail",
        "connection_ids": ["cin_mail_work"],
        "streams": ["messages", "threads", "message_bodies", "attachments"],
        "source": {"connector_key": "gmail", "display_name": "Work"},
    }
    path.write_bytes(orjson.dumps({package_id: [member]}))
    return path


async def test_operator_package_file_resolves_children_from_the_environment(
    sandbox: Any, tmp_path: Path
) -> None:
    resolver = FilePackageResolver(
        package_file(tmp_path, "gpk_demo"), env={"CHILD_WORK_MAIL": sandbox.tokens["client_work_mail"]}
    )
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "schema", "arguments": {}}}
    async with start_gateway(sandbox_settings(sandbox.url), packages=resolver) as url:
        status, headers, body = await post(url, sandbox.tokens["package"], call)
        assert status == 200
        assert headers["X-Pdpp-Grant-Package-Member-Count"] == "1"
        text = body["result"]["content"][0]["text"]
        assert "cin_mail_work" in text
        assert "cin_slack_acme" not in text
        assert {c.token_name for c in sandbox.calls} == {"client_work_mail"}


async def test_unknown_package_is_refused_as_unresolvable_not_revoked(sandbox: Any, tmp_path: Path) -> None:
    resolver = FilePackageResolver(package_file(tmp_path, "gpk_other"), env={})
    async with start_gateway(sandbox_settings(sandbox.url), packages=resolver) as url:
        sandbox.calls.clear()
        status, _, body = await post(url, sandbox.tokens["package"])
        assert status == 403
        assert body["error"]["data"]["code"] == "package_unresolvable"
        assert "cannot resolve" in body["error"]["message"]
        assert sandbox.calls == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr"])
async def test_auth_scheme_is_case_insensitive(shared_sandbox: Any, scheme: str) -> None:
    token = shared_sandbox.tokens["client_narrow"]
    headers = {**HEADERS, "Authorization": f"{scheme} {token}"}
    async with (
        start_gateway(sandbox_settings(shared_sandbox.url)) as url,
        aiohttp.ClientSession() as http,
        http.post(url, json=LIST_TOOLS, headers=headers) as response,
    ):
        assert response.status == 200
        assert "result" in await response.json()


async def test_refusals_are_counted_with_their_outcome(shared_sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as url:
        assert (await post(url, None))[0] == 401
        assert (await post(url, "not-a-real-token"))[0] == 401
        assert (await post(url, shared_sandbox.tokens["owner"]))[0] == 403
        async with aiohttp.ClientSession() as http:
            authorised = {**HEADERS, "Authorization": f"Bearer {shared_sandbox.tokens['client_broad']}"}
            async with http.post(url, data=b"{", headers=authorised) as response:
                assert response.status == 400
            async with http.get(url.replace("/mcp", "/metrics")) as response:
                metrics = await response.text()
    # bearer refusals come before the body is read, so none of the four has a method label
    assert 'pdpp_gateway_mcp_requests_total{method="unparsed",outcome="refused",tool=""} 4.0' in metrics


async def test_two_authorization_headers_are_a_400_and_neither_is_checked(sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(sandbox.url, introspection=True), public_self=True) as url:
        sandbox.calls.clear()
        headers = [
            *HEADERS.items(),
            ("Authorization", f"Bearer {sandbox.tokens['client_narrow']}"),
            ("Authorization", f"Bearer {sandbox.tokens['client_broad']}"),
        ]
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, json=LIST_TOOLS, headers=headers) as response,
        ):
            status, body = response.status, await response.json(content_type=None)
        assert status == 400
        assert body["error"]["data"]["code"] == "duplicate_credentials"
        assert "exactly one Authorization" in body["error"]["message"]
        assert sandbox.calls == []


class _Verdicts:
    """A validator answering whatever facts the test sets, and counting its calls."""

    def __init__(self, facts: BearerFacts) -> None:
        self.facts = facts
        self.calls = 0

    async def validate(self, token: str) -> BearerFacts:
        self.calls += 1
        return self.facts

    async def refuse(self, token: str, reason: str) -> None:
        self.facts = BearerFacts.inactive(reason)


async def test_an_admission_lives_exactly_as_long_as_the_verdict_it_was_built_from() -> None:
    """The same header and the very same verdict reuse one admission; a new verdict (the
    cache renewed it), a refusal, and the next acceptance after it are each judged afresh."""
    verdicts = _Verdicts(BearerFacts(kind=TokenKind.CLIENT, grant_id="grt_1"))
    policy = OriginPolicy.from_settings(sandbox_settings("http://127.0.0.1:9"))
    check = BearerCheck(verdicts, None, RsClient("http://127.0.0.1:9"), "http://127.0.0.1:9", policy)
    header = "Bearer tok_one"

    first = await check.authenticate(header)
    assert isinstance(first, Admission)
    assert await check.authenticate(header) is first  # same verdict: same admission
    assert await check.authenticate("bearer tok_one") is not first  # another header is read afresh
    assert verdicts.calls == 3  # the validator is asked every time: it decides how long a verdict lasts

    verdicts.facts = BearerFacts(kind=TokenKind.CLIENT, grant_id="grt_2")
    renewed = await check.authenticate(header)
    assert isinstance(renewed, Admission)
    assert renewed is not first
    assert renewed.caller_key == "grant:grt_2"

    verdicts.facts = BearerFacts.inactive("grant_revoked")
    refused = await check.authenticate(header)
    assert isinstance(refused, Rejection)
    assert refused.code == "grant_revoked"

    verdicts.facts = BearerFacts(kind=TokenKind.CLIENT, grant_id="grt_3")
    again = await check.authenticate(header)
    assert isinstance(again, Admission)
    assert again.caller_key == "grant:grt_3"
