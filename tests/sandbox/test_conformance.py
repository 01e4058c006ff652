"""Conformance: every real RS capture, replayed against the sandbox, has the same shape.

For each capture in ``shared/samples/rs`` the equivalent request goes to the sandbox
(same route and parameters, the same kind of token, sandbox data in place of the
capture's ids and words) and must answer with the same status, the same error code and
the same body shape: every key the reference sent is present with the same JSON type.
Sub-trees whose keys are data (a record's own fields, per-field capability maps, JSON
Schema properties) are compared as "an object" only. Captures of behaviour the sandbox
deliberately differs on (client filters and expand, which it honours) are replayed with
the reference switch on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "rs"
WORK_MAIL, BROAD, OWNER, PACKAGE, BOGUS = "client_work_mail", "client_broad", "owner", "package", "bogus"

# The reference's owner had one gmail connection; the sandbox's has two (Work, Personal), and a
# fan-in page has no cursor by design, so the owner's gmail reads name the Work connection.
_ONE_MAIL, _WORK = "connector_id=gmail", "&connection_id=cin_mail_work"
# capture file prefix -> (token name or None, reference rules, {old: new} substitutions in the URL)
REPLAYS: dict[str, tuple[str | None, bool, dict[str, str]]] = {
    "01": (None, False, {}),
    "02": (None, False, {}),
    "04": (None, False, {}),
    "05": (WORK_MAIL, True, {}),
    "06": (WORK_MAIL, True, {}),
    "07": (WORK_MAIL, True, {}),
    "08": (OWNER, False, {}),
    "10": (BROAD, True, {}),
    "11": (WORK_MAIL, False, {}),
    "12": (WORK_MAIL, True, {}),
    "13": (WORK_MAIL, False, {}),
    "14": (WORK_MAIL, False, {}),
    "15": (WORK_MAIL, False, {}),
    "16": (WORK_MAIL, False, {}),
    "17": (WORK_MAIL, True, {}),
    "18": (OWNER, False, {_ONE_MAIL: _ONE_MAIL + _WORK}),
    "19": (OWNER, False, {_ONE_MAIL: _ONE_MAIL + _WORK}),
    "20": (BROAD, False, {}),
    "21": (WORK_MAIL, False, {"msg_001_0": "msg_work_0001"}),
    "22": (WORK_MAIL, True, {"msg_001_0": "msg_work_0001"}),
    "23": (WORK_MAIL, False, {}),
    "24": (WORK_MAIL, False, {}),
    "25": (WORK_MAIL, False, {}),
    "26": (WORK_MAIL, False, {}),
    "27": (WORK_MAIL, False, {}),
    "28": (WORK_MAIL, False, {}),
    "29": (WORK_MAIL, True, {}),
    "30": (WORK_MAIL, False, {"vacation+travel+plans": "lisbon+flight"}),
    "31": (WORK_MAIL, False, {"money+owed+for+consulting": "invoice+consulting"}),
    "32": (OWNER, False, {"risotto": "invoice"}),
    "33": (None, False, {}),
    "34": (BOGUS, False, {}),
    "35": (BOGUS, False, {}),
    "36": (WORK_MAIL, False, {}),
    "37": (WORK_MAIL, True, {}),
    "38": (WORK_MAIL, False, {}),
    "39": (WORK_MAIL, False, {}),
    "40": (PACKAGE, False, {}),
}
NOT_RS = {
    "03": "authorization-server metadata (AS, not RS)",
    "41": "hosted /mcp (the gateway's door)",
    "42": "hosted /mcp",
    "43": "hosted /mcp",
    "44": "hosted /mcp",
    "45": "AS reference-dataset summary",
    "09": "owner full schema (left out of the captures)",
}
# Sub-trees whose keys are data, not shape.
OPAQUE = (
    "field_capabilities",
    "properties",
    "granted_connections",
)
# Members of a capture the sandbox leaves out on purpose because it has no such thing
# (see the docstring of pdpp_gateway.sandbox.discovery): compared as absent-is-fine.
NOT_SERVED = {
    "01": (
        "$.capabilities.client_event_subscriptions",  # no webhooks
    ),
    "02": (
        "$.pdpp_agent_discovery.cli",  # no agent-connect endpoint for the CLI to use
        "$.pdpp_agent_discovery.skill_name",
        "$.pdpp_agent_discovery.mcp.authorization",  # no OAuth or device-code endpoints
    ),
}


def _captures() -> list[Path]:
    return sorted(CAPTURES.glob("[0-9][0-9]-*.json")) if CAPTURES.is_dir() else []


def _generic(path: str) -> str:
    return re.sub(r"\[\d*\]", "[]", path)


def _nullable_paths() -> frozenset[str]:
    """Member paths the captures themselves show both as null and as a value (e.g. ``links.next``)."""
    seen: dict[str, set[bool]] = {}

    def walk(value: Any, path: str) -> None:
        seen.setdefault(path, set()).add(value is None)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for item in value:
                walk(item, f"{path}[]")

    for capture in _captures():
        walk(json.loads(capture.read_text())["body"], "$")
    return frozenset(path for path, kinds in seen.items() if kinds == {True, False})


# Null or not, these follow from the request itself, so a replay of the same request must
# agree exactly even though the captures show them both ways.
REQUEST_DETERMINED = frozenset(
    {"$.links.next", "$.field", "$.group_by", "$.group_by_time", "$.granularity", "$.time_zone"}
)
NULLABLE = _nullable_paths() - REQUEST_DETERMINED


def shape_problems(expected: Any, actual: Any, path: str = "$", *, skip: tuple[str, ...] = ()) -> list[str]:
    """Keys of ``expected`` missing from ``actual`` or carrying another JSON type.

    Null is a type like any other: a null where the reference sent a value (or the other way
    round) is a mismatch, unless the captures show that data-dependent member both ways
    (``NULLABLE``, e.g. a stream's ``last_updated``).
    """
    if path in skip:
        return []
    if expected is None or actual is None:
        if (expected is None) == (actual is None) or _generic(path) in NULLABLE:
            return []
        return [f"{path}: expected {'null' if expected is None else 'a value'}, got {actual!r:.40}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {type(actual).__name__}"]
        record_fields = path.endswith((".data.data", "].data")) or (
            path.endswith(".data") and expected.get("object") is None and ".expanded." in path
        )
        if path.endswith(OPAQUE) or record_fields:  # a record's own fields are data, not shape
            return []
        problems: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                if f"{path}.{key}" not in skip:
                    problems.append(f"{path}.{key}: missing")
            else:
                problems.extend(shape_problems(value, actual[key], f"{path}.{key}", skip=skip))
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected an array"]
        if expected and actual and not path.endswith(("groups", "labels", "to", "primary_key")):
            return shape_problems(expected[0], actual[0], f"{path}[]", skip=skip)
        return []
    numeric = (int, float)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return [] if type(expected) is type(actual) else [f"{path}: expected {type(expected).__name__}"]
    if isinstance(expected, numeric) and isinstance(actual, numeric):
        return []
    return (
        []
        if type(expected) is type(actual)
        else [f"{path}: expected {type(expected).__name__}, got {type(actual).__name__}"]
    )


def next_link_of(body: dict[str, Any], cursor: str) -> str:
    """The reference's ``links.next``: ``links.self`` with its cursor replaced (captures 14, 15, 28, 30)."""
    path, _, query = body["links"]["self"].partition("?")
    kept = [part for part in query.split("&") if part and not part.startswith("cursor=")]
    return f"{path}?{'&'.join([*kept, f'cursor={cursor}'])}"


def _captures_or_skip() -> list[Path]:
    captures = _captures()
    if not captures:
        pytest.skip(f"no RS captures in {CAPTURES} (shared/samples/rs is not beside the repository)")
    return captures


def test_next_link_rule_matches_the_captures() -> None:
    paged = []
    for capture in _captures_or_skip():
        body = json.loads(capture.read_text())["body"]
        if isinstance(body, dict) and body.get("next_cursor"):
            assert body["links"]["next"] == next_link_of(body, body["next_cursor"]), capture.name
            paged.append(capture.name)
    assert paged, "no capture has a next_cursor: the rule was checked against nothing"


def test_null_is_a_shape_except_where_the_captures_show_both() -> None:
    assert shape_problems({"a": None}, {"a": "x"}) == ["$.a: expected null, got 'x'"]
    assert shape_problems({"a": 1}, {"a": None}) == ["$.a: expected a value, got None"]
    assert shape_problems({"a": None}, {"a": None}) == []
    assert shape_problems({"links": {"next": "/v1/x?cursor=y"}}, {"links": {"next": None}}) == [
        "$.links.next: expected a value, got None"
    ]


def test_members_the_captures_show_both_ways_may_be_null() -> None:
    _captures_or_skip()
    assert "$.data[].last_updated" in NULLABLE  # shown both ways by capture 11
    assert (
        shape_problems({"data": [{"last_updated": "2026-01-01"}]}, {"data": [{"last_updated": None}]}) == []
    )


@pytest.mark.skipif(not CAPTURES.is_dir(), reason="shared/samples/rs is not beside the repository")
def test_every_capture_is_either_replayed_or_excluded_with_a_reason() -> None:
    prefixes = {path.name[:2] for path in _captures()}
    assert prefixes <= set(REPLAYS) | set(NOT_RS)
    assert len(prefixes & set(REPLAYS)) >= 38


@pytest.mark.skipif(not CAPTURES.is_dir(), reason="shared/samples/rs is not beside the repository")
@pytest.mark.parametrize(
    ("name", "recorded"),
    [
        pytest.param(p.name, json.loads(p.read_text()), id=p.name[:2])
        for p in _captures()
        if p.name[:2] in REPLAYS
    ],
)
async def test_capture_replays_with_the_same_status_code_and_shape(
    name: str, recorded: dict[str, Any], sandbox_factory: Callable[..., Any]
) -> None:
    token_name, reference, substitutions = REPLAYS[name[:2]]
    server = await sandbox_factory(reference_client_rules=reference)
    url = urlsplit(recorded["request"]["url"])
    target = url.path + (f"?{url.query}" if url.query else "")
    for old, new in substitutions.items():
        target = target.replace(old, new)
    headers = {}
    if token_name == BOGUS:
        headers["Authorization"] = "Bearer bogus-token"
    elif token_name is not None:
        headers["Authorization"] = f"Bearer {server.tokens[token_name]}"
    async with aiohttp.ClientSession(headers=headers) as session:
        if (
            "cursor=" in target and "/records" in target
        ):  # a cursor is the sandbox's own: take it from page one
            async with session.get(server.url + target.split("&cursor=")[0]) as first:
                target = target.split("&cursor=")[0] + "&cursor=" + (await first.json())["next_cursor"]
        async with session.get(server.url + target) as response:
            status = response.status
            body = await response.json(content_type=None)
            response_headers = response.headers
    assert status == recorded["status"], (name, body)
    expected = recorded["body"]
    if isinstance(expected, dict) and expected.get("object") == "record":
        # A record's own fields are the data set's, not the envelope's shape.
        expected = {key: value for key, value in expected.items() if key != "data"}
    if isinstance(expected, dict) and isinstance(expected.get("error"), dict):
        assert body["error"]["code"] == expected["error"]["code"], body
        assert body["error"]["type"] == expected["error"]["type"]
    assert shape_problems(expected, body, skip=NOT_SERVED.get(name[:2], ())) == [], name
    if isinstance(body, dict) and "next" in body.get("links", {}):  # links.next follows next_cursor
        cursor = body.get("next_cursor")
        assert body["links"]["next"] == (None if cursor is None else next_link_of(body, cursor)), body[
            "links"
        ]
    assert "request-id" in {key.lower() for key in response_headers}
    if status == 401:
        assert response_headers["WWW-Authenticate"].startswith('Bearer resource_metadata="')
        assert body["error"]["resource_metadata"] in response_headers["WWW-Authenticate"]
