"""The middleware library installs and runs alone, as a gateway that is not PDPP would use it.

Once per module, a fresh virtual environment (``venv --without-pip``, in a temporary
directory) gets ``middleware[http]`` and nothing else, installed by this environment's pip
(``pip --python``) from a copy of ``middleware/`` (so no build output lands in the
checkout): pip builds the wheel in its isolated build environment (setuptools from the
package registry, as on any machine) and takes the dependencies from the registry,
through its own cache. Where the registry cannot be reached these tests skip and say so.

Then the library's example, ``middleware/src/mcp_gateway_middleware/examples/notes_gateway.py``, runs from that
environment as a user would start it, and the tests talk to it over real HTTP.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "middleware/src/mcp_gateway_middleware/examples/notes_gateway.py"
WRITER_KEY = "key-alice-5d21"
MCP_EXTRA = {"cli", "sdk", "sdk_aiohttp", "sdk_kernel", "sdk_stdio"}  # the modules of the extra [mcp]
READER_KEY = "key-bob-90e4"


def plain_environment() -> dict[str, str]:
    """This process's environment without Python's own variables (no ``PYTHONPATH`` that
    could reach this checkout)."""
    return {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}


def registry_unreachable(place: Path) -> str | None:
    """pip's last words when it cannot fetch setuptools from the registry now (``None``: it
    can, so an install that failed failed for another reason)."""
    probe = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--only-binary=:all:"]
    probe += ["--dest", str(place / "probe"), "setuptools>=77"]
    done = subprocess.run(probe, capture_output=True, text=True, env=plain_environment())  # noqa: S603
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no output"])[-1][:300]


@dataclass(frozen=True)
class FreshVenv:
    python: Path  # its interpreter
    home: Path  # a directory outside the checkout, to run it from

    @property
    def prefix(self) -> Path:
        return self.python.parents[1]


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> FreshVenv:
    """A fresh virtual environment holding only ``middleware[http]`` and its dependencies."""
    place = tmp_path_factory.mktemp("middleware-alone")
    source = shutil.copytree(
        ROOT / "middleware",
        place / "middleware",
        ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"),
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(place / "venv")], check=True)  # noqa: S603
    python = place / "venv" / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    done = subprocess.run(  # noqa: S603
        [*pip, "install", "--no-input", f"{source}[http]"],
        capture_output=True,
        text=True,
        cwd=place,
        env=plain_environment(),
    )
    if done.returncode != 0:
        unreachable = registry_unreachable(place)
        if unreachable is not None:
            pytest.skip(
                f"the package registry cannot be reached (pip cannot fetch setuptools>=77: {unreachable})"
            )
        pytest.fail("pip could not install middleware[http] alone:\n" + (done.stdout + done.stderr)[-4000:])
    return FreshVenv(python, place)


def test_the_library_installs_without_the_pdpp_product(fresh_venv: FreshVenv) -> None:
    probe = (
        "import importlib, importlib.resources, importlib.util, json, pkgutil, mcp_gateway_middleware as m\n"
        "modules = sorted(i.name for i in pkgutil.iter_modules(m.__path__))\n"
        "missing = {}\n"
        "for name in modules:\n"
        "    try: importlib.import_module(f'mcp_gateway_middleware.{name}')\n"
        "    except ModuleNotFoundError as error: missing[name] = str(error)\n"
        "print(json.dumps({'file': m.__file__, 'modules': modules, 'missing': missing,"
        " 'typed': importlib.resources.files(m).joinpath('py.typed').is_file(),"
        " 'absent': [n for n in ('pdpp_gateway', 'mcp') if importlib.util.find_spec(n) is None]}))"
    )
    done = subprocess.run(  # noqa: S603
        [str(fresh_venv.python), "-c", probe],
        capture_output=True,
        text=True,
        cwd=fresh_venv.home,  # not the checkout, whose pdpp_gateway/ the '' on sys.path would find
        env=plain_environment(),
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert Path(seen["file"]).is_relative_to(fresh_venv.prefix)  # the venv's copy, not the checkout's
    shipped = sorted(path.stem for path in (ROOT / "middleware/src/mcp_gateway_middleware").glob("[!_]*.py"))
    assert seen["modules"] == shipped
    # every module imports with only what pyproject declares for [http]; the MCP binding's say
    # which extra they need
    assert set(seen["missing"]) == MCP_EXTRA
    for name, said in seen["missing"].items():
        assert (
            said
            == f"mcp_gateway_middleware.{name} needs the MCP SDK: pip install 'mcp-gateway-middleware[mcp]'"
        )
    assert seen["typed"]  # py.typed ships: a user's mypy reads the library's types
    assert seen["absent"] == ["pdpp_gateway", "mcp"]  # neither the PDPP product nor the MCP SDK


@pytest.fixture(scope="module")
def notes_url(fresh_venv: FreshVenv) -> Iterator[str]:
    """The example gateway, started from the fresh environment; its ``/call`` URL."""
    keys = fresh_venv.home / "keys.json"
    keys.write_text(
        json.dumps(
            {WRITER_KEY: {"name": "alice", "kind": "writer"}, READER_KEY: {"name": "bob", "kind": "reader"}}
        )
    )
    process = subprocess.Popen(  # noqa: S603
        [str(fresh_venv.python), str(EXAMPLE), "--keys", str(keys), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=keys.parent,
        env=plain_environment(),
        start_new_session=True,
    )
    assert process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        if not line.startswith("notes gateway on http://127.0.0.1:"):
            process.kill()
            pytest.fail(f"the example did not start: {line!r}\n{process.communicate(timeout=30)[1][-3000:]}")
        yield line.split(" on ", 1)[1].strip()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


async def call(url: str, tool: str, key: str | None = WRITER_KEY, **arguments: Any) -> tuple[int, Any]:
    headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, json={"tool": tool, "arguments": arguments}, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_a_tool_call_through_the_installed_stages_is_answered(notes_url: str) -> None:
    status, added = await call(
        notes_url, "add_note", title=" Boiler service ", body="Tuesday 9am", shelf="home"
    )
    assert (status, added["is_error"]) == (200, False)
    assert added["text"] == "Added 'Boiler service' to shelf 'home'."
    status, found = await call(notes_url, "search", key=READER_KEY, query="boiler")
    assert status == 200
    assert found["structured"] == {"hits": ["Boiler service"], "unavailable": []}
    assert found["text"] == "1 note(s) match 'boiler': Boiler service."


async def test_a_bad_argument_is_refused_with_the_typed_error(notes_url: str) -> None:
    status, answer = await call(notes_url, "search", query=7)
    assert (status, answer["is_error"]) == (200, True)
    error = answer["structured"]["error"]
    assert (error["code"], error["param"]) == ("invalid_arguments", "query")
    status, refused = await call(notes_url, "add_note", key=READER_KEY, title="Mine", body="x")
    assert refused["text"] == "read_only_key: A reader key can search but not write; use a writer key."


async def test_a_call_without_a_bearer_is_refused_before_any_tool(notes_url: str) -> None:
    status, refused = await call(notes_url, "add_note", key=None, title="Unsigned", body="x")
    assert (status, refused["error"]["code"]) == (401, "missing_key")
    _, found = await call(notes_url, "search", query="unsigned")
    assert found["structured"]["hits"] == []  # the note never reached a shelf


def test_the_wheel_and_the_sdist_carry_the_license_and_the_examples(
    fresh_venv: FreshVenv, tmp_path: Path
) -> None:
    import tarfile
    import zipfile

    source = fresh_venv.home / "middleware"
    pip = [sys.executable, "-m", "pip", "--python", str(fresh_venv.python)]
    built = subprocess.run(  # noqa: S603
        [*pip, "wheel", "--no-deps", "--no-input", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        env=plain_environment(),
    )
    assert built.returncode == 0, built.stderr[-3000:]
    subprocess.run(  # noqa: S603
        [*pip, "install", "--no-input", "setuptools>=77"],
        check=True,
        capture_output=True,
        env=plain_environment(),
    )
    sdist = subprocess.run(  # noqa: S603
        [
            str(fresh_venv.python),
            "-c",
            f"from setuptools import build_meta; build_meta.build_sdist({str(tmp_path)!r})",
        ],
        capture_output=True,
        text=True,
        cwd=source,
        env=plain_environment(),
    )
    assert sdist.returncode == 0, sdist.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    (archive,) = tmp_path.glob("*.tar.gz")
    in_wheel = zipfile.ZipFile(wheel).namelist()
    with tarfile.open(archive) as tar:
        in_sdist = [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]
    examples = sorted(p.name for p in (ROOT / "middleware/src/mcp_gateway_middleware/examples").glob("*.py"))
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in in_wheel)
    assert {"LICENSE", "CHANGELOG.md", "README.md"} <= set(in_sdist)
    for example in examples:
        assert f"mcp_gateway_middleware/examples/{example}" in in_wheel
        assert f"src/mcp_gateway_middleware/examples/{example}" in in_sdist


@pytest.fixture
def with_mcp_extra(fresh_venv: FreshVenv) -> FreshVenv:
    """The fresh environment with the extra ``[mcp]`` added (used last in this module)."""
    pip = [sys.executable, "-m", "pip", "--python", str(fresh_venv.python)]
    done = subprocess.run(  # noqa: S603
        [*pip, "install", "--no-input", f"{fresh_venv.home / 'middleware'}[http,mcp]"],
        capture_output=True,
        text=True,
        env=plain_environment(),
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return fresh_venv


async def test_with_the_mcp_extra_an_installed_example_serves_an_sdk_client(
    with_mcp_extra: FreshVenv, aiohttp_server: Any
) -> None:
    from aiohttp import web
    from mcp import Client, StdioServerParameters

    async def search(request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == "Bearer shelf-token"
        return web.json_response(
            {"books": [{"isbn": "9780441013593", "title": "Dune", "author": "F. Herbert"}]}
        )

    app = web.Application()
    app.router.add_get("/search", search)
    catalogue = await aiohttp_server(app)
    launch = StdioServerParameters(
        command=str(with_mcp_extra.python),
        args=["-m", "mcp_gateway_middleware.examples.books_gateway", "--stdio"],
        env={"CATALOGUE_URL": str(catalogue.make_url("/")), "CATALOGUE_TOKEN": "shelf-token"},
        cwd=str(with_mcp_extra.home),
    )
    async with Client(launch, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        answer = await client.call_tool("search_books", {"query": "dune"})
    assert answer.content[0].text == "1 book(s): Dune by F. Herbert (9780441013593)"  # type: ignore[union-attr]
