"""Cache files are used only when they are what ``connect`` wrote: real files and folders the
person owns, private to them. Anything else is refused with the exact fix on every command
that reads the cache, before a byte of it is read; writes never follow or create through a link."""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pdpp_gateway.local.credentials import cache_file_for, write_credential
from tests.conftest import as_person, run_cli

URL = "http://127.0.0.1:9"  # never asked: every refusal comes before the RS
TOKEN = "tok_person_secret_0123"
READERS = {
    "connect --list": ["connect", "--list"],
    "client-config": ["client-config"],
    "stdio": ["stdio", "--provider-url", URL],
    "call": ["call", "schema", "--provider-url", URL],
}


def _own_cache(home: Path) -> Path:
    """The person's per-user cache, holding one grant for ``URL``; its file's path."""
    return write_credential(home / ".local" / "share" / "pdpp-gateway", URL, TOKEN, grant_id="grt_mine")


def _refused_everywhere(home: Path, tmp_path: Path, *expected: str) -> None:
    """Every command that reads the cache exits 78, saying ``expected``, never the token."""
    for name, args in READERS.items():
        done = run_cli(*args, env=as_person(home), cwd=tmp_path, timeout=60)
        assert done.returncode == 78, (name, done.stderr)
        for words in expected:
            assert words in done.stderr, (name, done.stderr)
        assert TOKEN not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr, name


def test_a_grant_file_others_can_read_is_refused_with_the_chmod(tmp_path: Path) -> None:
    path = _own_cache(tmp_path / "home")
    path.chmod(0o644)
    _refused_everywhere(tmp_path / "home", tmp_path, "mode 644", f"chmod 600 {shlex.quote(str(path))}")


def test_a_clients_folder_others_can_write_is_refused_with_the_chmod(tmp_path: Path) -> None:
    clients = _own_cache(tmp_path / "home").parent
    clients.chmod(0o777)
    _refused_everywhere(tmp_path / "home", tmp_path, "writable by other users", f"chmod 700 {clients}")


def test_a_symlinked_grant_file_is_refused_and_its_target_never_shown(tmp_path: Path) -> None:
    victim = write_credential(
        tmp_path / "someone", "https://victim.example", "tok_victim", grant_id="grt_victim"
    )
    path = _own_cache(tmp_path / "home")
    path.unlink()
    path.symlink_to(victim)
    _refused_everywhere(tmp_path / "home", tmp_path, "symbolic link", f"rm {path}")
    listed = run_cli("connect", "--list", env=as_person(tmp_path / "home"), cwd=tmp_path)
    assert "victim.example" not in listed.stdout + listed.stderr
    assert "grt_victim" not in listed.stdout + listed.stderr


@pytest.mark.parametrize(
    "plant",
    [lambda path: os.mkfifo(path, 0o600), lambda path: path.symlink_to("/dev/zero")],
    ids=["fifo", "link-to-dev-zero"],
)
def test_a_fifo_or_a_device_link_is_refused_before_anything_is_read(
    tmp_path: Path, plant: Callable[[Path], None]
) -> None:
    path = _own_cache(tmp_path / "home")
    path.unlink()
    plant(path)
    # run_cli's timeout fails the test if a command blocks on the FIFO or reads /dev/zero
    _refused_everywhere(tmp_path / "home", tmp_path, str(path), f"rm {path}")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_grant_file_is_refused_with_the_chown(tmp_path: Path) -> None:
    path = _own_cache(tmp_path / "home")
    os.chown(path, 4321, 4321)
    _refused_everywhere(tmp_path / "home", tmp_path, "uid 4321", f"chown {os.geteuid()} {path}")


def test_a_dangling_lock_or_gitignore_link_never_gets_its_target_created(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / ".local" / "share" / "pdpp-gateway"
    write_credential(root, URL, TOKEN, connector="gmail")
    path = write_credential(root, URL, "tok_second", connector="github")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".gitignore").unlink()
    (root / ".gitignore").symlink_to(elsewhere / "gitignore-target")
    forgot = run_cli("connect", URL, "--forget", "--connector", "github", env=as_person(home), cwd=tmp_path)
    assert forgot.returncode == 0, forgot.stderr  # written, without writing through the link
    assert not (elsewhere / "gitignore-target").exists()
    assert (root / ".gitignore").is_symlink()
    lock = path.parent / f".{path.stem}.lock"
    lock.unlink()
    lock.symlink_to(elsewhere / "lock-target")
    refused = run_cli("connect", URL, "--forget", env=as_person(home), cwd=tmp_path)
    assert refused.returncode == 78, refused.stderr
    assert f"rm {lock}" in refused.stderr
    assert not (elsewhere / "lock-target").exists()
    assert cache_file_for(URL, root).exists()  # nothing was forgotten


def test_a_linked_clients_folder_is_refused_and_its_target_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    clients = _own_cache(home).parent
    target = tmp_path / "shared-folder"
    clients.rename(target)
    target.chmod(0o755)
    clients.symlink_to(target)
    refused = run_cli("connect", URL, "--forget", env=as_person(home), cwd=tmp_path)
    assert refused.returncode == 78, refused.stderr
    assert f"refused the credential cache path {clients}: it is a symbolic link" in refused.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o755  # not chmodded through the link
    assert cache_file_for(URL, target.parent / "x").name in os.listdir(target)  # nothing removed
    _refused_everywhere(home, tmp_path, "symbolic link", f"rm {clients}")


def test_a_package_file_may_be_read_by_others_but_never_through_a_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    packages = _own_cache(home).parent.parent / "packages"
    packages.mkdir()
    shared = tmp_path / "someone-elses-package.json"
    shared.write_text('{"providers": ["https://victim.example"]}')
    (packages / "work.json").symlink_to(shared)
    done = run_cli("stdio", "--package", "work", env=as_person(home), cwd=tmp_path)
    assert done.returncode == 78, done.stderr
    assert f"rm {packages / 'work.json'}" in done.stderr
    assert "victim.example" not in done.stderr
    (packages / "work.json").unlink()
    (packages / "work.json").write_text(f'{{"providers": ["{URL}"]}}')
    (packages / "work.json").chmod(0o644)  # provider URLs, no token: others may read it
    done = run_cli("call", "schema", "--package", "work", env=as_person(home), cwd=tmp_path)
    assert "cache_unsafe" not in done.stderr
    assert "refused the credential cache path" not in done.stderr
    assert done.returncode == 69, done.stderr  # read, then the RS (nothing listens there) cannot be asked
