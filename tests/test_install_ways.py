"""pdpp-gateway installs the ways Python people install a project, with its middleware built in.

From a copy of this checkout (so no build output lands in it), into a fresh virtual environment
(``venv --without-pip``) through this environment's pip (``pip --python``), each as a user types it:
``pip install <checkout>``, ``pip install -e <checkout>``, ``pip install git+file://<repository>``
and ``pip wheel <checkout>``. pip builds in its isolated build environment (setuptools from the
package registry, as on any machine). Dependencies are not installed (``--no-deps``: they come
from the registry, and this test is about what the project's own build does): every way gives
one ``pdpp-gateway`` holding both ``pdpp_gateway`` and ``mcp_gateway_middleware``, with their
``py.typed`` markers. Where the registry cannot be reached these tests skip and say so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.middleware.test_installs_alone import plain_environment, registry_unreachable

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"pdpp_gateway", "mcp_gateway_middleware"}


def _copy(place: Path) -> Path:
    """This checkout's project files (no build output, no virtual environment) under ``place``."""
    ignored = shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", "node_modules"
    )
    return shutil.copytree(ROOT, place / "checkout", ignore=ignored)


def _run(command: list[str], place: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, cwd=place, env=plain_environment())  # noqa: S603
    if done.returncode != 0:
        unreachable = registry_unreachable(place)
        if unreachable is not None:
            pytest.skip(
                f"the package registry cannot be reached (pip cannot fetch setuptools>=77: {unreachable})"
            )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done


def _installed(place: Path, *target: str) -> set[str]:
    """The top-level packages a fresh environment holds after ``pip install --no-deps <target>``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(place / "venv")], check=True)  # noqa: S603
    python = place / "venv" / "bin" / "python"
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-input", "--no-deps", *target],
        place,
    )
    probe = f"import importlib.util as u; print(' '.join(n for n in {sorted(PACKAGES)!r} if u.find_spec(n)))"
    done = subprocess.run(  # noqa: S603
        [str(python), "-c", probe], capture_output=True, text=True, cwd=place, env=plain_environment()
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("editable", [False, True], ids=["install", "editable"])
def test_pip_installs_a_checkout_with_its_middleware(tmp_path: Path, editable: bool) -> None:
    checkout = _copy(tmp_path)
    assert _installed(tmp_path, *(["-e"] if editable else []), str(checkout)) == PACKAGES


def test_pip_installs_from_a_git_repository(tmp_path: Path) -> None:
    checkout = _copy(tmp_path)
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run([*git, *step], check=True, capture_output=True)  # noqa: S603
    assert _installed(tmp_path, f"git+file://{checkout}") == PACKAGES


def test_pip_wheel_builds_one_wheel_with_both_packages(tmp_path: Path) -> None:
    checkout = _copy(tmp_path)
    wheels = tmp_path / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-input", "--no-deps", "-w", str(wheels), str(checkout)],
        tmp_path,
    )
    (wheel,) = wheels.glob("pdpp_gateway-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")} == PACKAGES
    assert {f"{package}/py.typed" for package in PACKAGES} <= set(names)
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    requires = [
        line
        for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist")
    ]
    assert not any("mcp-gateway-middleware" in line or "file:" in line for line in requires)
