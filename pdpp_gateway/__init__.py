"""pdpp-gateway: an MCP gateway for grant-scoped, read-only PDPP resource-server reads."""

__version__ = "0.1.0"
