"""Files only their owner may read, written whole or not at all.

Contract:

- ``replace_in(dir_fd, name, data)`` writes ``data`` to a new temporary file in the directory
  ``dir_fd`` (``O_EXCL | O_NOFOLLOW``, mode 0600 from its first byte) and renames it over
  ``name`` there: a reader sees the old file or the new one, never half of one; a link at
  ``name`` is replaced, its target untouched; a failed write leaves no temporary file
  behind. The credential cache (``local.cache_files``, through its checked folder) and
  ``write_private`` both write through it.
- ``write_private(path, text)`` creates ``path``'s directory (0700, and makes an existing one
  0700), then writes ``text`` with ``replace_in``.

Standard library only (a local door writes its credential cache through it before the SDK
has loaded).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

_FILE_MODE = 0o600


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fchmod(fd, 0o700)
        replace_in(fd, path.name, text.encode())
    finally:
        os.close(fd)


def replace_in(dir_fd: int, name: str, data: bytes) -> None:
    """Replace ``name`` in the directory ``dir_fd`` with ``data``, atomically (mode 0600)."""
    temp = f".tmp-{os.urandom(8).hex()}{Path(name).suffix}"  # not secrets: its import costs a start ~7 ms
    fd = os.open(
        temp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        _FILE_MODE,
        dir_fd=dir_fd,
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
