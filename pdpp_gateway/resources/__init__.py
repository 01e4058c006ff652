"""MCP resources: stream metadata, records and blobs, each read one forwarded GET.

``reads`` parses a resource URI and routes it through the tool pipeline, ``answers`` shapes the
answer (or the JSON-RPC error) without the SDK, ``handlers`` registers both with the SDK server.
"""
