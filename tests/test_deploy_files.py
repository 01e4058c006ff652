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
    assert [line for line in lines if line and not line.startswith("#")] == ["."]  # this project, whole


def test_the_middleware_library_is_built_in_with_every_dependency_it_needs() -> None:
    library = tomllib.loads((ROOT / "middleware" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {_name(requirement) for requirement in PYPROJECT["dependencies"]}
    # no dependency on a distribution no index serves: the library's source root is one of ours
    assert library["name"] not in names
    found = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "middleware/src" in found["packages"]["find"]["where"]
    assert "mcp_gateway_middleware*" in found["packages"]["find"]["include"]
    # what the library needs to import, its HTTP and Redis stages included, this project installs
    needed = [
        *library["dependencies"],
        *(d for extra in library["optional-dependencies"].values() for d in extra),
    ]
    assert {_name(requirement) for requirement in needed} <= names


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;@ ]", requirement, maxsplit=1)[0].lower()


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


def test_the_guide_quotes_the_nginx_configuration_the_tests_run() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("### Behind a reverse proxy, or at a path prefix")
    section = readme[start : readme.index("\n### ", start + 1)]
    (quoted,) = re.findall(r"```nginx\n(.*?)```", section, re.DOTALL)
    assert quoted == (ROOT / "config" / "nginx" / "pdpp-gateway.conf").read_text(encoding="utf-8")
    # the flags it tells each replica to start with exist, and name the prefix the file serves
    for flag in (
        "--public-url",
        "--trusted-proxy",
        "--rs-internal-url",
        "--allowed-host",
        "--allowed-prefix",
    ):
        assert flag in section
    assert "proxy_set_header X-Forwarded-Prefix /pdpp;" in quoted
    assert "https://data.example.com/pdpp --trusted-proxy" in section
