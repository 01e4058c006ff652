"""Logging set-up for every front door: diagnostics go to stderr, never stdout.

Contract: ``configure_logging`` sends all records to stderr (stdout may carry protocol
frames), one line each, and quiets the chattiest libraries. Secrets are kept out by
construction: no module logs a token, an Authorization header or a query value.
"""

from __future__ import annotations

import logging
import sys


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("mcp", "httpx", "httpx2", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
