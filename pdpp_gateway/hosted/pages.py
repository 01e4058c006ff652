"""Placeholder until the connect page lands (replaced in this same change)."""

from __future__ import annotations

from typing import Final

ICON_SVG: Final = b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12"/></svg>'


def connect_page(mcp_url: str, provider_url: str) -> str:
    return f"<!doctype html><title>Connect an AI app</title><code id=mcp-url>{mcp_url}</code>"


def llms_txt(mcp_url: str, provider_url: str) -> str:
    return f"# PDPP\n\n{mcp_url}\n"
