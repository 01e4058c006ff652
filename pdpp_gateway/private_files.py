"""Files only their owner may read, written whole or not at all.

Contract: ``write_private(path, text)`` creates ``path``'s directory (0700, and makes an
existing one 0700), writes ``text`` to a temporary file beside it (0600 from its first
byte), then ``os.replace``s it onto ``path``: a reader sees the old file or the new one,
never half of one, and a failed write leaves no temporary file behind. Standard library
only (a local door writes its credential cache through it before the SDK has loaded).
"""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    import tempfile  # only writers need it (and it costs a local door's start ~10 ms)

    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
