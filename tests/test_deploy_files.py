"""What a PaaS reads from the repository agrees with the project, and the README's Deploy
section names only settings that exist.

A buildpack finds the runtime in ``.python-version`` and installs from ``requirements.txt``;
the ``Procfile``'s web process reads ``config/gateway.toml`` and ``$PORT``; ``LICENSE`` is the
license ``pyproject.toml`` declares. A variable the Deploy section tells an operator to set
that the gateway does not read would be silently ignored in production.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from pdpp_gateway.settings import CONFIG_ENV, ENV_NAMES, load_settings

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def deploy_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("### Deploy (a PaaS, or any host)")
    return readme[start : readme.index("\n### ", start + 1)]


def test_the_deploy_section_names_only_variables_the_gateway_reads() -> None:
    named = set(re.findall(r"\bPDPP_[A-Z_]+\b", deploy_section()))
    assert {"PDPP_PROVIDER_URL", "PDPP_PUBLIC_URL", "PDPP_REDIS_URL", "PDPP_WORKERS"} <= named
    assert named - {*ENV_NAMES.values(), CONFIG_ENV} == set()


def test_the_runtime_the_buildpack_installs_is_one_the_project_supports() -> None:
    (version,) = (ROOT / ".python-version").read_text(encoding="utf-8").split()
    wanted = re.fullmatch(r">=(\d+)\.(\d+)", PYPROJECT["requires-python"])
    assert wanted is not None
    assert tuple(int(part) for part in version.split(".")[:2]) >= (int(wanted[1]), int(wanted[2]))
    assert f"`.python-version` ({version};" in deploy_section()
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    # the middleware library from this repository, then this project, as their pyproject files say
    assert [line for line in lines if not line.startswith("#")] == ["./middleware", "."]
    library = tomllib.loads((ROOT / "middleware" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (pin,) = [d for d in PYPROJECT["dependencies"] if d.startswith(library["name"])]
    # exactly the folder's version, a local one (PEP 440 "+label"), which no package index serves:
    # pip never fetches a package of that name published by someone else
    assert pin.endswith(f"=={library['version']}")
    assert "+" in library["version"]


def test_the_procfile_web_process_reads_the_committed_settings_and_port() -> None:
    (web,) = [line for line in (ROOT / "Procfile").read_text().splitlines() if line.startswith("web:")]
    command = shlex.split(web.removeprefix("web:"))
    assert command[:2] == ["pdpp-gateway", "serve"]
    assert command[command.index("--port") + 1] == "$PORT"
    config = ROOT / command[command.index("--config") + 1]
    settings = load_settings({}, {"PDPP_PROVIDER_URL": "https://data.example.com"}, config)
    assert settings.config_file == str(config)
    assert settings.provider_url == "https://data.example.com"


def test_the_license_file_is_the_one_pyproject_declares() -> None:
    assert PYPROJECT["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert "APPENDIX: How to apply the Apache License to your work." in text
