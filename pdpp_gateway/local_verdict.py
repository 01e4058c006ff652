"""A local door's verdict on a bearer: the kind it may read with, or the error that stops it.

Contract: ``judge(facts, provider_url)`` is a local door's use of ``caller.authenticate``
(local doors read ``/v1`` with the token itself, so a package token is refused as an owner
token is): the accepted kind, or the ``CredentialError`` of the rejection
(``CredentialRejected``, with the RS's status, when the RS itself answered 401/403). Each
error's message is one stderr-ready line from the one table (``refusals.REFUSALS``):
what happened and the exact fix (``pdpp-gateway connect <provider-url>``), and its exit
code is the table's. Nothing here reads or writes the credential cache, so the RS readers
(``rs.token_kind``, ``rs.start_probe``) use it without depending on the cache.
"""

from __future__ import annotations

from typing import Final

from pdpp_gateway.caller import BearerFacts, Caller, Rejection, TokenKind, authenticate
from pdpp_gateway.refusals import REFUSALS, explain, local_connect

REFUSED_KINDS: Final = frozenset({TokenKind.OWNER, TokenKind.PACKAGE})


class CredentialError(Exception):
    """No usable scoped credential; ``message`` is one stderr-ready line; the exit code
    is the table's for ``code`` (``refusals.REFUSALS``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.exit_code = int(REFUSALS[code].exit_code)


class CredentialRejected(CredentialError):
    """The RS itself refused the token; ``status`` is its 401 or 403 (a 401 may be renewable)."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(code, message)
        self.status = status


def problem(code: str, detail: str, provider_url: str = "<provider-url>") -> CredentialError:
    """A problem of the cache itself (or of the command line): the table's words for
    ``code`` with ``detail`` (which file, which value) in parentheses."""
    message, step = explain(Rejection(code), local_connect(provider_url))
    return CredentialError(code, f"{message.removesuffix('.')} ({detail}). {step}")


def refused(
    rejection: Rejection, provider_url: str, *, status: int | None = None, connect: str | None = None
) -> CredentialError:
    """The local doors' form of a rejection: one line saying what and what to do;
    ``connect`` words the way to a grant when ``local_connect``'s would not do."""
    message, step = explain(rejection, connect or local_connect(provider_url))
    line = f"{provider_url}: {message} {step}"
    if status is not None:
        return CredentialRejected(rejection.code, line, status)
    return CredentialError(rejection.code, line)


def judge(facts: BearerFacts, provider_url: str, *, status: int | None = None) -> TokenKind:
    """The kind a local door may read with (``client``), or the rejection's error.
    Local doors read ``/v1`` with the token itself, so a package token is refused."""
    outcome: Caller[object] | Rejection = authenticate(facts)
    if isinstance(outcome, Rejection):
        raise refused(outcome, provider_url, status=status)
    return outcome.kind
