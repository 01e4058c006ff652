"""aiohttp's CA-bundle reads run beside the stdio start-up's imports, and end complete.

The import runs in a fresh interpreter (this one has aiohttp already): after ``wait()`` both
of aiohttp's default TLS contexts hold exactly the trust store a context built the usual way
holds. A context made by another thread during the import loads its trust at once.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import textwrap
from pathlib import Path

import aiohttp
import pytest

from pdpp_gateway.fast_start.trust_aside import TrustLoad, import_aiohttp

FRESH = textwrap.dedent(
    """
    import json, ssl
    from pdpp_gateway.fast_start.trust_aside import TrustLoad, import_aiohttp

    original = ssl.SSLContext.set_default_verify_paths
    aiohttp, trust = import_aiohttp()
    trust.wait()
    connector = aiohttp.connector
    usual = ssl.create_default_context()
    print(json.dumps({
        "deferred": trust.deferred,
        "restored": ssl.SSLContext.set_default_verify_paths is original,
        "usual": usual.cert_store_stats(),
        "verified": connector._SSL_CONTEXT_VERIFIED.cert_store_stats(),
        "unverified": connector._SSL_CONTEXT_UNVERIFIED.cert_store_stats(),
        "verify_modes": [int(connector._SSL_CONTEXT_VERIFIED.verify_mode),
                         int(connector._SSL_CONTEXT_UNVERIFIED.verify_mode)],
    }))
    """
)


def test_aiohttp_contexts_hold_the_full_trust_store_once_waited() -> None:
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", FRESH], capture_output=True, text=True, check=True, timeout=60
    )
    facts = json.loads(done.stdout)
    assert facts["deferred"] == 2  # both contexts read the bundle aside
    assert facts["restored"]
    assert facts["usual"]["x509_ca"] > 0  # the machine has a CA bundle to compare with
    assert facts["verified"] == facts["usual"]
    assert facts["unverified"] == facts["usual"]
    assert facts["verify_modes"] == [int(ssl.CERT_REQUIRED), int(ssl.CERT_NONE)]


def test_only_the_importing_thread_defers(tmp_path: Path) -> None:
    module = tmp_path / "makes_contexts.py"
    module.write_text(
        textwrap.dedent(
            """
            import ssl, threading

            MINE = ssl.create_default_context()
            OTHERS = []
            helper = threading.Thread(target=lambda: OTHERS.append(ssl.create_default_context()))
            helper.start()
            helper.join()
            OTHERS_STATS_AT_ONCE = OTHERS[0].cert_store_stats()
            """
        )
    )
    sys.path.insert(0, str(tmp_path))
    try:
        made, trust = import_aiohttp("makes_contexts")
        assert trust.deferred == 1  # MINE only
        usual = ssl.create_default_context().cert_store_stats()
        assert usual == made.OTHERS_STATS_AT_ONCE
        trust.wait()
        assert made.MINE.cert_store_stats() == ssl.create_default_context().cert_store_stats()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("makes_contexts", None)


def test_already_imported_defers_nothing() -> None:
    module, trust = import_aiohttp()
    assert module is aiohttp
    assert trust.deferred == 0
    trust.wait()


def test_a_failed_read_is_raised_by_wait() -> None:
    def unreadable(context: ssl.SSLContext) -> None:
        raise ssl.SSLError("no CA bundle")

    trust = TrustLoad()
    trust.start(unreadable, ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
    with pytest.raises(ssl.SSLError, match="no CA bundle"):
        trust.wait()
