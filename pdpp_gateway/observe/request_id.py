"""The id of the HTTP request being served, for every log line and span it causes.

Contract: ``REQUEST_ID`` is set by the hosted door per request (``hosted/ops.py``) and read by
``logs`` (the ``request_id`` of a JSON line) and ``tracing`` (a span's ``pdpp.request_id``);
it is ``None`` outside a request (the stdio door, start-up). Its own module so that the two
readers need not import each other for it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Final

REQUEST_ID: Final[ContextVar[str | None]] = ContextVar("request_id", default=None)
