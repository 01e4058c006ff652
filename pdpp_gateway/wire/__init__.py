"""The wire: what the MCP SDK would put on the wire, restated without importing it.

Contract: modules here import neither the SDK nor anything of the gateway's above the
foundation; each restates one piece of the SDK's bytes (a JSON-RPC line's id, the JSON-RPC
codes, the request params both protocol eras send, a tool call's result), so the doors'
early and fast paths answer exactly what the SDK would. The differential tests against the
real SDK are their oracle.
"""
