"""A grant comes only from where the person put it: a ``.pdpp`` in the working directory (a
cloned project can ship one, and MCP clients start servers in a project's directory) is
read only when the person opts in, and is then named by its absolute path on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from pdpp_gateway.local.credentials import write_credential
from tests.conftest import as_person, gateway_env, run_cli


@pytest.fixture
def planted(tmp_path: Path, shared_sandbox: Any) -> tuple[Path, Path]:
    """(the person's home, a project directory): the person's own grant covers Work mail;
    the project ships a ``.pdpp`` whose grant covers someone's Slack instead."""
    home, project = tmp_path / "home", tmp_path / "project"
    own = home / ".local" / "share" / "pdpp-gateway"
    write_credential(own, shared_sandbox.url, shared_sandbox.tokens["client_work_mail"], grant_id="grt_mine")
    write_credential(
        project / ".pdpp", shared_sandbox.url, shared_sandbox.tokens["client_chat"], grant_id="grt_planted"
    )
    return home, project


def test_a_pdpp_in_the_working_directory_is_ignored_without_the_opt_in(
    planted: tuple[Path, Path], shared_sandbox: Any
) -> None:
    home, project = planted
    local = project / ".pdpp"
    done = run_cli("call", "schema", "--provider-url", shared_sandbox.url, env=as_person(home), cwd=project)
    assert done.returncode == 0, done.stderr
    assert "cin_mail_work" in done.stdout  # the person's own grant
    assert "cin_slack_acme" not in done.stdout
    notices = [line for line in done.stderr.splitlines() if str(local) in line]
    assert len(notices) == 1, done.stderr  # said once
    assert "ignoring" in notices[0]
    assert "--trust-cwd-cache" in notices[0]
    assert "PDPP_TRUST_CWD_CACHE=1" in notices[0]
    listed = run_cli("connect", "--list", env=as_person(home), cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "grant=grt_mine" in listed.stdout
    assert "grt_planted" not in listed.stdout
    assert f"ignoring {local}" in listed.stderr
    printed = run_cli("client-config", "--client", "claude-desktop", env=as_person(home), cwd=project)
    assert printed.returncode == 0, printed.stderr
    assert str(local) not in printed.stdout  # the entry serves the person's own cache


async def test_an_mcp_client_starting_stdio_in_the_project_gets_the_persons_own_grant(
    planted: tuple[Path, Path], shared_sandbox: Any
) -> None:
    home, project = planted
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "pdpp_gateway", "stdio", "--provider-url", shared_sandbox.url],
        env=gateway_env(as_person(home)),
        cwd=project,  # where a desktop client or an IDE starts the server
    )
    async with Client(params, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        result = await client.call_tool("schema", {})
    assert not result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "cin_mail_work" in text
    assert "cin_slack_acme" not in text


@pytest.mark.parametrize(
    "opt_in", [(["--trust-cwd-cache"], {}), ([], {"PDPP_TRUST_CWD_CACHE": "1"})], ids=["flag", "env"]
)
def test_with_the_opt_in_it_is_used_and_named_by_its_absolute_path(
    planted: tuple[Path, Path], shared_sandbox: Any, opt_in: tuple[list[str], dict[str, str]]
) -> None:
    home, project = planted
    flags, env = opt_in
    local = project / ".pdpp"
    person = as_person(home) | env
    done = run_cli("call", "schema", "--provider-url", shared_sandbox.url, *flags, env=person, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "cin_slack_acme" in done.stdout  # the grant the person chose to use
    assert "cin_mail_work" not in done.stdout
    assert f"using the credential cache in the working directory, {local}" in done.stderr
    listed = run_cli("connect", "--list", *flags, env=person, cwd=project)
    assert "grant=grt_planted" in listed.stdout
    assert "grant=grt_mine" in listed.stdout
    assert str(local) in listed.stderr
    printed = run_cli("client-config", "--client", "claude-desktop", *flags, env=person, cwd=project)
    assert printed.returncode == 0, printed.stderr
    (entry,) = json.loads(printed.stdout.split("\n", 1)[1])["mcpServers"].values()
    assert entry["args"][-2:] == ["--cache-root", str(local)]  # the entry names it absolutely
