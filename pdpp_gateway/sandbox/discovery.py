"""Discovery documents and RFC 7662 introspection for the sandbox (it is its own AS).

Contract: ``/.well-known/oauth-protected-resource`` (the RS resource: token kinds owner
and client, capabilities, discovery hints) and ``/.well-known/oauth-protected-resource/mcp``
(the hosted MCP resource: ``resource`` = ``<origin>/mcp``, token kinds client and
mcp_package, ``pdpp_agent_discovery.mcp``); ``GET /`` the discovery index;
``POST /introspect`` (form ``token=``, HTTP Basic client credentials; wrong credentials
401 with ``WWW-Authenticate: Basic realm="introspection"``; a body that is not UTF-8 form
data 400 ``invalid_request``).

The metadata documents carry every member of the reference's (captures 01/02) that the
sandbox can state truthfully. Left out on purpose, because the sandbox has no such thing:
``capabilities.client_event_subscriptions`` (no webhooks) and ``pdpp_agent_discovery.cli`` / ``.skill_name`` /
``.mcp.authorization`` (it serves no device-code or agent-connect endpoint; its
authorization-code flow is described by its own RFC 8414 metadata, see ``oauth``). Active answers carry
``iss`` (the sandbox origin), ``aud`` (the RS origin, or a fixture's foreign audience), ``exp``, ``pdpp_token_kind`` and the
grant; inactive ones are ``{"active": false, "inactive_reason": ...}``. Package tokens
list their members with each child's own token (a sandbox extension, see ``config``).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from typing import Any

from aiohttp import web

from pdpp_gateway.sandbox import vectors
from pdpp_gateway.sandbox.access import CONNECTION_SUFFIX, STATUS_OVERRIDES, principal_of
from pdpp_gateway.sandbox.config import PRINCIPALS, TOKENS, Principal, SandboxConfig, with_suffix
from pdpp_gateway.sandbox.envelope import json_response, origin
from pdpp_gateway.sandbox.manifests import Catalog
from pdpp_gateway.sandbox.oauth_store import OAUTH

TOKEN_LIFETIME_SECONDS = 3600


def protected_resource(request: web.Request, config: SandboxConfig) -> web.Response:
    base = origin(request, config.public_origin)
    return json_response(
        {
            "resource": base,
            "resource_name": "PDPP Sandbox Resource Server",
            "authorization_servers": [base],
            "bearer_methods_supported": ["header"],
            "pdpp_core_query_base": f"{base}/v1",
            "pdpp_token_kinds_supported": ["owner", "client"],
            "pdpp_self_export_supported": True,
            "pdpp_provider_connect_version": "draft-2026-04-16",
            "pdpp_discovery_hints": {
                "schema_endpoint": "/v1/schema",
                "query_base": "/v1",
                "connectors_endpoint": "/v1/connectors",
                "streams_endpoint_template": "/v1/streams/{stream}",
                "aggregate": {"endpoint_template": "/v1/streams/{stream}/aggregate"},
                "changes_since_bootstrap": "beginning",
                "blob_indirection": "data.blob_ref.fetch_url",
                "search": {
                    "endpoint": "/v1/search",
                    "scope_param": "streams[]",
                    "filter_requires_single_stream": True,
                },
                "hybrid_pagination_supported": False,
                "owner_polyfill_requires_source_kind_connector": True,
            },
            "capabilities": {
                "lexical_retrieval": {
                    "supported": True,
                    "endpoint": "/v1/search",
                    "cursor_supported": True,
                    "count_supported": False,
                    "cross_stream": True,
                    "snippets": True,
                    "default_limit": 25,
                    "max_limit": 100,
                    "index_state": "built",
                    "score": {
                        "kind": "bm25",
                        "order": "lower_is_better",
                        "supported": True,
                        "value_semantics": "implementation_relative",
                    },
                },
                "semantic_retrieval": {
                    "supported": True,
                    "endpoint": "/v1/search/semantic",
                    "cursor_supported": True,
                    "count_supported": False,
                    "cross_stream": True,
                    "snippets": True,
                    "default_limit": 25,
                    "max_limit": 100,
                    "stability": "experimental",
                    "index_state": "built",
                    "lexical_blending": False,
                    "query_input": "text",
                    "model": vectors.MODEL,
                    "dimensions": vectors.DIMENSIONS,
                    "distance_metric": vectors.DISTANCE_METRIC,
                    "score": {
                        "comparable_with": {
                            "backend_identity": f"profile={vectors.PROFILE};model={vectors.MODEL};"
                            f"dtype={vectors.DTYPE};dimensions={vectors.DIMENSIONS};metric={vectors.DISTANCE_METRIC}",
                            "dimensions": vectors.DIMENSIONS,
                            "distance_metric": vectors.DISTANCE_METRIC,
                            "model": vectors.MODEL,
                            "profile_id": vectors.PROFILE,
                            "dtype": vectors.DTYPE,
                        },
                        "kind": "semantic_distance",
                        "order": "lower_is_better",
                        "supported": True,
                        "value_semantics": "distance",
                    },
                    "language_bias": {"note": "English word embeddings (WordLlama).", "primary": "en"},
                },
                "hybrid_retrieval": {
                    "supported": True,
                    "endpoint": "/v1/search/hybrid",
                    "cursor_supported": False,
                    "count_supported": False,
                    "cross_stream": True,
                    "default_limit": 25,
                    "max_limit": 100,
                    "stability": "experimental",
                    "sources": ["lexical", "semantic"],
                },
            },
        }
    )


def protected_resource_mcp(request: web.Request, config: SandboxConfig) -> web.Response:
    base = origin(request, config.public_origin)
    return json_response(
        {
            "resource": f"{base}/mcp",
            "resource_name": "PDPP Sandbox Hosted MCP Resource",
            "authorization_servers": [base],
            "bearer_methods_supported": ["header"],
            "pdpp_core_query_base": f"{base}/v1",
            "pdpp_token_kinds_supported": ["client", "mcp_package"],
            "pdpp_self_export_supported": True,
            "pdpp_provider_connect_version": "draft-2026-04-16",
            "pdpp_agent_discovery": {
                "advisory": True,
                "recommended_flow": "pdpp connect",
                "mcp": {
                    "endpoint": f"{base}/mcp",
                    "transport": "streamable_http",
                    "no_owner_token": True,
                    "setup_intent": "grant_scoped_read",
                    "tool_surface": "profile_free_normal_read",
                },
            },
        }
    )


def root_index(request: web.Request, config: SandboxConfig) -> web.Response:
    base = origin(request, config.public_origin)
    return json_response(
        {
            "object": "pdpp_discovery_index",
            "role": "resource_server",
            "resource_name": "PDPP Sandbox",
            "reference_revision": "pdpp-gateway-sandbox",
            "links": {
                "well_known": f"{base}/.well-known/oauth-protected-resource",
                "schema": f"{base}/v1/schema",
                "core_query_base": f"{base}/v1",
                "connectors": f"{base}/v1/connectors",
            },
        }
    )


def _authorised(request: web.Request, config: SandboxConfig) -> bool:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return False
    try:
        user, _, secret = base64.b64decode(header[6:]).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return hmac.compare_digest(user, config.introspection_client_id) and hmac.compare_digest(
        secret, config.introspection_client_secret
    )


def authorization_details(principal: Principal, catalog: Catalog) -> list[dict[str, Any]]:
    by_connector: dict[str, list[dict[str, Any]]] = {}
    for name, grant in principal.streams.items():
        for connector in catalog.connectors:
            if connector.stream(name) is None:
                continue
            ids = [c.connection_id for c in connector.connections if c.connection_id in grant.connections]
            if ids:
                entry: dict[str, Any] = {"name": name, "instance_ids": ids}
                if grant.fields is not None:
                    entry["fields"] = list(grant.fields)
                by_connector.setdefault(connector.source_id, []).append(entry)
    return [
        {
            "type": "https://pdpp.dev/data-access",
            "access_mode": "read",
            "source": {"kind": "connector", "id": source},
            "streams": streams,
        }
        for source, streams in by_connector.items()
    ]


def _introspection(
    principal: Principal, base: str, catalog: Catalog, overrides: dict[str, str], catalog_suffix: str = ""
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "active": True,
        "pdpp_token_kind": principal.kind,
        "subject_id": "sub_sandbox_person",
        "client_id": principal.client_id,
        "iss": base,
        "aud": principal.audience or base,
        "exp": int(principal.expires_at or time.time() + TOKEN_LIFETIME_SECONDS),
    }
    if principal.kind == "client":
        answer["grant_id"] = principal.grant_id
        answer["authorization_details"] = authorization_details(principal, catalog)
    if principal.kind == "mcp_package":
        members = []
        for name in principal.members:
            child = with_suffix(PRINCIPALS[name], catalog_suffix)
            if overrides.get(name, child.status) != "active":
                continue
            details = authorization_details(child, catalog)
            connections = sorted({i for d in details for s in d["streams"] for i in s["instance_ids"]})
            first = catalog.connector_of(connections[0]) if connections else None
            display = catalog.connection(connections[0]) if connections else None
            members.append(
                {
                    "access_token": TOKENS[name],
                    "grant_id": child.grant_id,
                    "connection_ids": connections,
                    "streams": sorted(child.streams),
                    "source": {
                        "id": first.source_id if first else None,
                        "connector_key": first.key if first else None,
                        "display_name": display.display_name if display else None,
                    },
                }
            )
        answer.update(
            grant_package_id=principal.package_id,
            package={"package_id": principal.package_id, "members": members},
        )
    return answer


async def introspect(request: web.Request, config: SandboxConfig, catalog: Catalog) -> web.Response:
    if not _authorised(request, config):
        return json_response(
            {
                "error": {
                    "type": "authentication_error",
                    "code": "context.authentication_failed",
                    "message": "Introspection client authentication failed",
                }
            },
            401,
            {"WWW-Authenticate": 'Basic realm="introspection"'},
        )
    try:
        form = await request.post()
    except (UnicodeDecodeError, ValueError):  # not UTF-8 form data, or a broken multipart body
        return json_response(
            {
                "error": {
                    "type": "invalid_request_error",
                    "code": "invalid_request",
                    "message": "The introspection request must be an application/x-www-form-urlencoded "
                    "UTF-8 body with token=...",
                }
            },
            400,
        )
    token = form.get("token")
    overrides = request.app.get(STATUS_OVERRIDES, {})
    suffix = request.app.get(CONNECTION_SUFFIX, "")
    principal = (
        principal_of(token, overrides, request.app.get(OAUTH), suffix) if isinstance(token, str) else None
    )
    if principal is None:
        return json_response({"active": False, "inactive_reason": "token_unknown"})
    if principal.status != "active":
        return json_response({"active": False, "inactive_reason": f"grant_{principal.status}"})
    if principal.expires_at is not None and principal.expires_at < time.time():
        return json_response({"active": False, "inactive_reason": "token_expired"})
    return json_response(
        _introspection(principal, origin(request, config.public_origin), catalog, dict(overrides), suffix)
    )
