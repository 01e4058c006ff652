"""Every open of a credential-cache path, checked: the one place that touches the cache's files and folders.

Contract:

- A cache path is ``<root>/<folder>/<name>`` (``clients/<host>.json``, ``clients/.<host>.lock``,
  ``packages/NAME.json``); ``<root>/.gitignore`` is written beside them.
- The root, then the folder inside it, are opened with ``O_NOFOLLOW | O_DIRECTORY`` (a link
  is refused, never followed) and checked on the descriptor: a directory owned by this user,
  writable by nobody else. The file is opened relative to the folder's descriptor with
  ``O_NOFOLLOW | O_NONBLOCK`` and checked before a byte is read: a regular file (a FIFO, a
  device or a link is refused, so nothing hangs), owned by this user, no permission bits
  for group or others (600; a package file, which holds no token, may be readable by
  them), at most ``MAX_FILE_BYTES`` (read with that bound too).
- A refusal is a ``CacheRefused`` (a ``CredentialError``, exit 78) whose one line names the
  absolute path, what is wrong, and the exact fix (a ``chmod``, a ``chown``, or what to remove).
- ``read``: the bytes, ``None`` when the file, its folder or the root is missing.
  ``listed``: a folder's ``*.json`` files (hidden ones left out), ``[]`` when it is missing.
- Writes never follow or create through a link: a missing root or folder is made 0700 and
  any existing one is set to 0700 through its descriptor (never by path); a file is written
  by ``files.private.replace_in`` in the checked folder (a new ``O_EXCL`` temporary renamed
  over the name: a link there is replaced, its target untouched); ``.gitignore`` is created
  only when nothing has that name (``O_EXCL``, so a dangling link's target is never
  created); ``open_lock`` opens the lock file with ``O_NOFOLLOW`` (a link is refused, not
  created through).
- Standard library only (and ``local_verdict`` and ``files.private``, which are): a local
  door reads the cache before the SDK has loaded. Nothing here reads or writes a token's value in a message.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from pdpp_gateway.files.private import replace_in
from pdpp_gateway.local_verdict import CredentialError

MAX_FILE_BYTES: Final = 1 << 20  # a grant file is a few KB; a package file less
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_MODE: Final = 0o600
_DIR_MODE: Final = 0o700
_GITIGNORE: Final = b"*\n!.gitignore\n"


class CacheRefused(CredentialError):
    """A cache path that is not safe to use; ``message`` says which, why and the fix."""

    def __init__(self, path: Path, why: str, fix: str) -> None:
        super().__init__("cache_unsafe", f"refused the credential cache path {path}: {why}. Fix: {fix}")
        self.path = path
        self.why = why
        self.fix = fix


def read(path: Path, *, private: bool = True) -> bytes | None:
    """The file's bytes after the checks above; ``None`` when it (or its folder) is missing.
    ``private=False`` (a package file: provider URLs, no token) lets others read it, never write it."""
    with _folder(path.parent, create=False) as fds:
        if fds is None:
            return None
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fds[1])
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _refused_open(path, error, fds[1]) from None
        try:
            _check_file(fd, path, private=private)
            return _read_bounded(fd, path)
        finally:
            os.close(fd)


def listed(folder: Path) -> list[Path]:
    """The folder's ``*.json`` files, sorted (the folder and the root checked); ``[]`` when missing."""
    with _folder(folder, create=False) as fds:
        if fds is None:
            return []
        names = os.listdir(fds[1])
    return [folder / name for name in sorted(names) if name.endswith(".json") and not name.startswith(".")]


def write(path: Path, data: bytes) -> None:
    """Replace the file atomically with ``data`` (mode 600), creating the root and folder 0700."""
    with _folder(path.parent, create=True) as fds:
        assert fds is not None
        root_fd, folder_fd = fds
        _create_gitignore(root_fd)
        replace_in(folder_fd, path.name, data)


def remove(path: Path) -> None:
    """Delete the file (a link there is removed, not its target); nothing when it is missing."""
    with _folder(path.parent, create=False) as fds:
        if fds is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path.name, dir_fd=fds[1])


def open_lock(path: Path) -> int:
    """A descriptor on the lock file ``path`` (created 600, root and folder 0700); the caller closes it."""
    with _folder(path.parent, create=True) as fds:
        assert fds is not None
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path.name, flags, _FILE_MODE, dir_fd=fds[1])
        except OSError as error:
            raise _refused_open(path, error, fds[1]) from None
    try:
        _check_file(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def _folder(folder: Path, *, create: bool) -> Iterator[tuple[int, int] | None]:
    """Descriptors on the checked root and folder; ``None`` when one is missing and not ``create``."""
    root = folder.parent
    root_fd = _open_dir(root, os.fspath(root), None, create=create)
    if root_fd is None:
        yield None
        return
    try:
        folder_fd = _open_dir(folder, folder.name, root_fd, create=create)
        if folder_fd is None:
            yield None
            return
        try:
            yield root_fd, folder_fd
        finally:
            os.close(folder_fd)
    finally:
        os.close(root_fd)


def _open_dir(shown: Path, name: str, dir_fd: int | None, *, create: bool) -> int | None:
    """The checked directory ``name`` (relative to ``dir_fd``), made 0700 when ``create``."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            return None
        if dir_fd is None:
            shown.parent.mkdir(parents=True, exist_ok=True)  # the person's own folders, above the root
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            os.mkdir(name, _DIR_MODE, dir_fd=dir_fd)
        return _open_dir(shown, name, dir_fd, create=False)
    except OSError as error:
        raise _refused_open(shown, error, dir_fd) from None
    try:
        _check_dir(fd, shown)
        if create:
            os.fchmod(fd, _DIR_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_dir(fd: int, path: Path) -> None:
    info = os.fstat(fd)
    _check_owner(info, path)
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheRefused(
            path,
            f"the folder is writable by other users (mode {stat.S_IMODE(info.st_mode):03o}), so anyone "
            "could swap a grant in",
            f"chmod 700 {_quoted(path)}",
        )


def _check_file(fd: int, path: Path, *, private: bool = True) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise CacheRefused(
            path,
            f"it is not a regular file ({_kind(info.st_mode)}) and is never read",
            f"rm {_quoted(path)}, then connect again",
        )
    _check_owner(info, path)
    if info.st_mode & (0o077 if private else 0o022):
        raise CacheRefused(
            path,
            f"other users may {'read or ' if private else ''}change it (mode {stat.S_IMODE(info.st_mode):03o}"
            f"{'; it holds a bearer token' if private else ''})",
            f"chmod 600 {_quoted(path)}",
        )
    if info.st_size > MAX_FILE_BYTES:
        raise CacheRefused(
            path,
            f"it is {info.st_size} bytes, more than any cache file holds ({MAX_FILE_BYTES})",
            f"rm {_quoted(path)}, then connect again",
        )


def _check_owner(info: os.stat_result, path: Path) -> None:
    me = os.geteuid()
    if info.st_uid != me:
        raise CacheRefused(
            path,
            f"it belongs to uid {info.st_uid}, not to you (uid {me})",
            f"remove it (rm -r {_quoted(path)}); if it is yours after all: chown {me} {_quoted(path)}",
        )


def _read_bounded(fd: int, path: Path) -> bytes:
    chunks: list[bytes] = []
    left = MAX_FILE_BYTES + 1
    while left > 0:
        chunk = os.read(fd, min(left, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:  # it grew after the check
        raise CacheRefused(
            path, f"it is more than {MAX_FILE_BYTES} bytes", f"rm {_quoted(path)}, then connect again"
        )
    return data


def _create_gitignore(root_fd: int) -> None:
    """``.gitignore`` in the root, made only when nothing (not even a dangling link) has the name."""
    try:
        fd = os.open(
            ".gitignore",
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=root_fd,
        )
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as handle:
        handle.write(_GITIGNORE)


def _refused_open(path: Path, error: OSError, dir_fd: int | None) -> CredentialError:
    """Why ``path`` could not be opened: a link (or not a folder) is refused with its fix;
    anything else is an unreadable cache."""
    try:
        mode = os.lstat(path.name if dir_fd is not None else path, dir_fd=dir_fd).st_mode
    except OSError:
        mode = 0
    if error.errno in (errno.ELOOP, errno.ENOTDIR) or stat.S_ISLNK(mode):
        what = (
            "a symbolic link, which is never followed"
            if stat.S_ISLNK(mode)
            else f"not a folder ({_kind(mode)})"
        )
        return CacheRefused(
            path, f"it is {what}", f"rm {_quoted(path)} (and copy in what it pointed to, if that is yours)"
        )
    return CacheRefused(
        path, f"it cannot be opened ({error.strerror})", f"check its permissions: ls -ld {_quoted(path)}"
    )


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a file"),
    ):
        if test(mode):
            return name
    return "not a file"


def _quoted(path: Path) -> str:
    import shlex  # only a refusal needs it

    return shlex.quote(str(path))
