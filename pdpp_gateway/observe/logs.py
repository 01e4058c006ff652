"""Logging set-up for every front door: diagnostics go to stderr, never stdout.

Contract: ``configure_logging`` sends all records to stderr (stdout may carry protocol
frames), one line each, and quiets the chattiest libraries. With ``json_lines=True``
(the hosted door) each line is one JSON object with ``ts``, ``level``, ``logger``,
``msg``, the current ``request_id`` (set per HTTP request through ``request_id.REQUEST_ID``), the
current ``trace_id`` when tracing is on (``tracing``), and
any ``extra={"fields": {...}}`` members. Secrets are kept out by construction: no
module logs a token, an Authorization header or a query value.
"""

from __future__ import annotations

import logging
import sys
import time

from pdpp_gateway.observe.request_id import REQUEST_ID


class JsonLines(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        import orjson  # here, not at the top: the stdio door logs plain lines and starts faster without it

        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id:
            entry["request_id"] = request_id
        trace = _trace_id()
        if trace:
            entry["trace_id"] = trace
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def _trace_id() -> str | None:
    from pdpp_gateway.observe.tracing import trace_id  # light: OpenTelemetry only when tracing is on

    return trace_id()


def configure_logging(level: str = "INFO", *, json_lines: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonLines() if json_lines else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("mcp", "httpx", "httpx2", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
