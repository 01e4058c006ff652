"""The sandbox authorization server over real HTTP, with a person played by ``ConsentBrowser``.

A token is issued only after approval on the consent page, for exactly the approved
streams; every faulty exchange (denied consent, expired, replayed or foreign code, wrong
verifier, wrong redirect URI, forged form) is refused the way RFC 6749/7591 say, and no
token comes out of it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import pytest

from pdpp_gateway.sandbox.oauth_store import OAUTH, token_key
from tests.oauth_browser import ConsentBrowser

REDIRECT = "http://127.0.0.1:45678/callback"


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def _json(method: str, url: str, **kwargs: Any) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.request(method, url, **kwargs) as response:
        return response.status, await response.json(content_type=None)


async def _register(sandbox: Any, name: str = "Test App", redirect: str = REDIRECT) -> str:
    status, body = await _json(
        "POST", f"{sandbox.url}/oauth/register", json={"client_name": name, "redirect_uris": [redirect]}
    )
    assert status == 201, body
    assert body["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in body
    return str(body["client_id"])


def _authorize_url(sandbox: Any, client_id: str, challenge: str, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-123",
    } | extra
    return f"{sandbox.url}/oauth/authorize?{urlencode(params)}"


def _query(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def _exchange(sandbox: Any, client_id: str, code: str, verifier: str, redirect: str = REDIRECT) -> Any:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": client_id,
        "code_verifier": verifier,
        "redirect_uri": redirect,
    }
    return await _json("POST", f"{sandbox.url}/oauth/token", data=form)


async def _code(sandbox: Any, streams: list[str] | None = None, **extra: str) -> tuple[str, str, str]:
    client_id = await _register(sandbox)
    verifier, challenge = _pkce()
    async with ConsentBrowser() as browser:
        location = await browser.approve(_authorize_url(sandbox, client_id, challenge, **extra), streams)
    answer = _query(location)
    assert location.startswith(REDIRECT)
    assert answer["state"] == "st-123"
    return client_id, answer["code"], verifier


async def _schema_streams(sandbox: Any, token: str) -> tuple[int, set[str]]:
    status, body = await _json(
        "GET", f"{sandbox.url}/v1/schema", headers={"Authorization": f"Bearer {token}"}
    )
    if status != 200:
        return status, set()
    return status, {s["name"] for c in body["connectors"] for s in c["streams"]}


async def _introspect(sandbox: Any, token: str) -> Any:
    pair = f"{sandbox.config.introspection_client_id}:{sandbox.config.introspection_client_secret}"
    headers = {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    return (await _json("POST", f"{sandbox.url}/introspect", data={"token": token}, headers=headers))[1]


async def test_metadata_names_this_origin_on_both_well_known_paths(sandbox: Any) -> None:
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        status, body = await _json("GET", sandbox.url + path)
        assert status == 200
        assert body["issuer"] == sandbox.url
        assert body["authorization_endpoint"] == f"{sandbox.url}/oauth/authorize"
        assert body["code_challenge_methods_supported"] == ["S256"]
        assert "https://pdpp.dev/data-access" in body["authorization_details_types_supported"]
    _, prm = await _json("GET", f"{sandbox.url}/.well-known/oauth-protected-resource")
    assert prm["authorization_servers"] == [sandbox.url]


async def test_consent_page_names_the_app_and_grants_only_what_was_ticked(sandbox: Any) -> None:
    client_id = await _register(sandbox, name="Trip <Planner>")
    verifier, challenge = _pkce()
    async with ConsentBrowser() as browser:
        status, form, _ = await browser.open(_authorize_url(sandbox, client_id, challenge))
        assert status == 200
        assert "Trip &lt;Planner&gt;" in form.text
        assert "<Planner>" not in form.text
        assert form.buttons == ["approve", "deny"]
        assert all(form.streams.values())
        assert len(form.streams) == 15  # every stream of every connector, all ticked
        github = [v for v in form.streams if v.endswith("#repositories") or v.endswith("#issues")]
        status, location = await browser.submit(form, "approve", github)
    assert status == 302
    assert location
    status, token = await _exchange(sandbox, client_id, _query(location)["code"], verifier)
    assert status == 200, token
    assert token["token_type"] == "Bearer"
    assert token["expires_in"] > 0
    assert token["refresh_token"]
    assert [d["streams"] for d in token["authorization_details"]] == [
        [
            {"name": "repositories", "instance_ids": ["cin_github", "cin_github_orbit"]},
            {"name": "issues", "instance_ids": ["cin_github", "cin_github_orbit"]},
        ]
    ]
    assert await _schema_streams(sandbox, token["access_token"]) == (200, {"repositories", "issues"})
    status, _ = await _json(
        "GET",
        f"{sandbox.url}/v1/streams/messages/records",
        headers={"Authorization": f"Bearer {token['access_token']}"},
    )
    assert status == 401  # an ungranted stream stays closed
    answer = await _introspect(sandbox, token["access_token"])
    assert answer["active"] is True
    assert answer["pdpp_token_kind"] == "client"
    assert answer["grant_id"] == token["grant_id"]
    assert answer["client_id"] == client_id


async def test_authorization_details_narrow_what_the_page_offers(sandbox: Any) -> None:
    details = [
        {
            "type": "https://pdpp.dev/data-access",
            "source": {"kind": "connector", "id": "https://registry.pdpp.dev/connectors/spotify"},
            "access_mode": "read",
            "purpose_description": "Suggest concerts",
            "streams": [{"name": "top_artists"}],
        }
    ]
    client_id, code, verifier = await _code(sandbox, None, authorization_details=json.dumps(details))
    _, token = await _exchange(sandbox, client_id, code, verifier)
    assert await _schema_streams(sandbox, token["access_token"]) == (200, {"top_artists"})


async def test_refresh_rotates_and_an_old_refresh_token_is_refused(sandbox: Any) -> None:
    client_id, code, verifier = await _code(sandbox)
    _, first = await _exchange(sandbox, client_id, code, verifier)
    form = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id}
    status, second = await _json("POST", f"{sandbox.url}/oauth/token", data=form)
    assert status == 200
    assert second["access_token"] != first["access_token"]
    assert (await _schema_streams(sandbox, second["access_token"]))[0] == 200
    status, again = await _json("POST", f"{sandbox.url}/oauth/token", data=form)
    assert status == 400
    assert again["error"] == "invalid_grant"
    assert "access_token" not in again


async def test_deny_sends_access_denied_with_state_and_no_code(sandbox: Any) -> None:
    client_id = await _register(sandbox)
    _, challenge = _pkce()
    async with ConsentBrowser() as browser:
        _, form, _ = await browser.open(_authorize_url(sandbox, client_id, challenge))
        status, location = await browser.submit(form, "deny")
        assert status == 302
        assert location
        assert _query(location)["error"] == "access_denied"
        assert _query(location)["state"] == "st-123"
        assert "code" not in _query(location)
        status, _ = await browser.submit(form, "approve")  # the request was answered: no second chance
    assert status == 400


async def test_a_consent_answered_after_it_expired_is_refused(sandbox: Any) -> None:
    client_id = await _register(sandbox)
    _, challenge = _pkce()
    async with ConsentBrowser() as browser:
        _, form, _ = await browser.open(_authorize_url(sandbox, client_id, challenge))
        pending = sandbox.app[OAUTH].pending
        request_id = form.hidden["request_id"]
        pending[request_id] = replace(pending[request_id], expires=time.time() - 1)
        status, location = await browser.submit(form, "approve")
    assert status == 400
    assert location is None


async def test_a_forged_consent_post_without_the_browsers_cookie_is_refused(sandbox: Any) -> None:
    client_id = await _register(sandbox)
    _, challenge = _pkce()
    async with ConsentBrowser() as browser:
        _, form, _ = await browser.open(_authorize_url(sandbox, client_id, challenge))
    async with ConsentBrowser() as attacker:  # same form fields, another browser (no cookie)
        status, location = await attacker.submit(form, "approve")
    assert status == 400
    assert location is None


@pytest.mark.parametrize("fault", ["expired", "replayed", "wrong_verifier", "wrong_redirect", "other_client"])
async def test_faulty_code_exchanges_are_invalid_grant_with_no_token(sandbox: Any, fault: str) -> None:
    client_id, code, verifier = await _code(sandbox)
    redirect = REDIRECT
    first: Any = None
    if fault == "expired":
        codes = sandbox.app[OAUTH].codes
        codes[token_key(code)] = replace(codes[token_key(code)], expires=time.time() - 1)
    elif fault == "replayed":
        status, first = await _exchange(sandbox, client_id, code, verifier)
        assert status == 200
    elif fault == "wrong_verifier":
        verifier = _pkce()[0]
    elif fault == "wrong_redirect":
        redirect = "http://127.0.0.1:45678/other"
    else:
        client_id = await _register(sandbox, name="Other")
    status, body = await _exchange(sandbox, client_id, code, verifier, redirect)
    assert status == 400, body
    assert body["error"] == "invalid_grant"
    assert "access_token" not in body
    assert "refresh_token" not in body
    if first is not None:  # RFC 6749 §4.1.2: a replay revokes what the code already issued
        assert (await _introspect(sandbox, first["access_token"]))["active"] is False
        assert (await _schema_streams(sandbox, first["access_token"]))[0] == 401


async def test_authorize_faults_redirect_back_or_stop_at_an_error_page(sandbox: Any) -> None:
    client_id = await _register(sandbox)
    _, challenge = _pkce()
    async with ConsentBrowser() as browser:
        status, form, location = await browser.open(
            _authorize_url(sandbox, client_id, challenge, redirect_uri="https://evil.example/cb")
        )
        assert status == 400
        assert location is None
        assert not form.buttons
        status, _, location = await browser.open(_authorize_url(sandbox, "sbx_dcr_unknown", challenge))
        assert status == 400
        assert location is None
        for extra, error in (
            ({"code_challenge_method": "plain"}, "invalid_request"),
            ({"response_type": "token"}, "unsupported_response_type"),
            ({"authorization_details": '[{"type": "other"}]'}, "invalid_authorization_details"),
            ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
        ):
            status, _, location = await browser.open(_authorize_url(sandbox, client_id, challenge, **extra))
            assert status == 302
            assert location
            assert location.startswith(REDIRECT)
            assert _query(location)["error"] == error
            assert _query(location)["state"] == "st-123"
        # a loopback redirect may use another port than the registered one (RFC 8252 §7.3)
        status, form, _ = await browser.open(
            _authorize_url(sandbox, client_id, challenge, redirect_uri="http://127.0.0.1:50001/callback")
        )
        assert status == 200
        assert form.buttons


async def test_registration_refuses_unsafe_redirects_and_bad_metadata(sandbox: Any) -> None:
    url = f"{sandbox.url}/oauth/register"
    for body, error in (
        ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://app.example/cb#frag"]}, "invalid_redirect_uri"),
        ({"client_name": "x"}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}, "invalid_client_metadata"),
    ):
        status, answer = await _json("POST", url, json=body)
        assert status == 400, body
        assert answer["error"] == error
    status, answer = await _json("POST", url, data=b"not json", headers={"Content-Type": "application/json"})
    assert status == 400
    assert answer["error"] == "invalid_client_metadata"
