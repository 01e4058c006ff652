"""The hosted Streamable HTTP front door (aiohttp)."""
