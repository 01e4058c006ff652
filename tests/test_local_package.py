"""Local package files and member facts, without a server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdpp_gateway.local.package import (
    EVERY_STREAM,
    PackageError,
    facts_from_cache,
    facts_from_schema,
    package_providers,
)


def test_facts_of_a_multi_connector_grant_keep_every_connection_and_stream() -> None:
    document = {
        "data": {
            "bearer": {"token_kind": "client", "grant_id": "grt_b"},
            "connectors": [
                {
                    "connector_key": "gmail",
                    "granted_connections": [
                        {"connection_id": "cin_w", "display_name": "Work"},
                        {"connection_id": "cin_p", "display_name": "Personal"},
                    ],
                    "streams": [{"name": "messages"}, {"name": "threads"}],
                },
                {
                    "connector_key": "slack",
                    "granted_connections": [{"connection_id": "cin_s"}],
                    "streams": [{"name": "messages"}, {"name": "channels"}],
                },
            ],
        }
    }
    facts = facts_from_schema(document)
    assert facts is not None
    assert facts.grant_id == "grt_b"
    assert facts.connection_ids == ("cin_w", "cin_p", "cin_s")
    assert facts.streams == ("messages", "threads", "channels")
    assert facts.connector_key is None  # several connectors: no one key
    assert facts.display_name is None  # several connections: no one name
    assert facts_from_schema({"bearer": {"token_kind": "client"}}) is None


def test_facts_from_the_recorded_grant_fall_back_to_every_stream(tmp_path: Path) -> None:
    recorded = tmp_path / "a.json"
    recorded.write_text(
        json.dumps(
            {
                "credential": {"access_token": "t", "grant_id": "grt_a"},
                "authorization_details": [{"streams": [{"name": "notes", "instance_ids": ["cin_n"]}]}],
            }
        )
    )
    recorded.chmod(0o600)  # a grant file as the cache keeps it
    facts = facts_from_cache(recorded)
    assert (facts.grant_id, facts.connection_ids, facts.streams) == ("grt_a", ("cin_n",), ("notes",))
    garbled = tmp_path / "b.json"
    garbled.write_text("not json")
    garbled.chmod(0o600)
    assert facts_from_cache(garbled).streams == EVERY_STREAM


def test_package_file_members_are_normalised_in_order(tmp_path: Path) -> None:
    (tmp_path / "packages").mkdir()
    (tmp_path / "packages" / "p.json").write_text(
        json.dumps({"providers": ["b.example", "http://a.example/"]})
    )
    assert package_providers([], "p", tmp_path) == ["https://b.example", "http://a.example"]
    (tmp_path / "packages" / "q.json").write_text(json.dumps({"providers": ["a.example"], "extra": 1}))
    with pytest.raises(PackageError, match="unknown keys \\(extra\\)"):
        package_providers([], "q", tmp_path)
