"""Is a provider answering at all? One brief, bounded look, for commands that name providers.

Contract: ``not_answering(urls, seconds)`` asks every provider at once for its RFC 9728
protected-resource metadata (no token, nothing read but the status) and returns, for
each one that gave no HTTP answer within ``seconds`` (connection refused, host name not
resolving, no answer in time), why in a few words. A provider that answers anything,
even an error status, is answering and is not listed. It never raises for a provider's
failure and takes about ``seconds`` at most in all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final

PROBE_SECONDS: Final = 3.0


async def not_answering(urls: Sequence[str], seconds: float = PROBE_SECONDS) -> dict[str, str]:
    """``{url: why}`` for the providers among ``urls`` that did not answer in ``seconds``."""
    import aiohttp

    from pdpp_gateway.local.oauth_flow import well_known
    from pdpp_gateway.rs.client import why_unreachable

    timeout = aiohttp.ClientTimeout(total=seconds)

    async def why_not(session: aiohttp.ClientSession, url: str) -> str | None:
        try:
            async with session.get(
                well_known(url, "oauth-protected-resource"), timeout=timeout, allow_redirects=False
            ):
                return None
        except TimeoutError:
            return f"no answer within {seconds:g} s"
        except aiohttp.ClientConnectorError as error:
            return why_unreachable(error)
        except aiohttp.ClientError as error:
            return type(error).__name__

    async with aiohttp.ClientSession() as session:
        reasons = await asyncio.gather(*(why_not(session, url) for url in urls))
    return {url: reason for url, reason in zip(urls, reasons, strict=True) if reason is not None}
