"""The terminal commands a person runs: demo, and the search → read-field evidence ladder."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from pdpp_gateway.local.credentials import write_credential
from tests.conftest import run_cli


def test_demo_runs_the_hosted_gateway_on_the_sandbox_and_prints_client_setup(tmp_path: Path) -> None:
    done = run_cli(
        "demo",
        "--port",
        "0",
        "--gateway-port",
        "0",
        "--cache-root",
        str(tmp_path / "cache"),
        "--once",
        "--rate-limit",
        "0",  # the same flag as serve: no limit for a demo run
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    url = re.search(r"MCP server URL:\s+(http://127\.0\.0\.1:\d+/mcp)", out)
    token = re.search(r"Demo token:\s+(\S+)", out)
    assert url, out
    assert token, out
    assert "tools: schema, query_records, aggregate, search, fetch, read_record_field" in out
    for stream in ("messages", "message_bodies", "issues", "recently_played", "pay_statements"):
        assert stream in out  # the schema index, as a model reads it
    assert "read_record_field {" in out  # the search evidence ladder
    # the built-in question, in a person's words, shows its fact (buried 20k characters deep)
    assert 'search {"query": "what did I pay for the Lisbon apartment deposit", "limit": 3}' in out
    assert "1,850 EUR" in out
    header = f"Authorization: Bearer {token.group(1)}"
    assert f'claude mcp add --transport http pdpp-sandbox {url.group(1)} --header "{header}"' in out
    assert f"codex mcp add pdpp-sandbox --url {url.group(1)} --bearer-token-env-var PDPP_SANDBOX_TOKEN" in out
    config = json.loads(out[out.index('{\n  "mcpServers"') : out.index("\n}\n") + 2])
    assert config["mcpServers"]["pdpp-sandbox"] == {
        "type": "http",
        "url": url.group(1),
        "headers": {"Authorization": f"Bearer {token.group(1)}"},
    }
    assert "stdio --provider-url" in out
    # Claude Desktop: the exact entry, starting this install's gateway by its absolute path
    rs = re.search(r"Sandbox RS:\s+(http://127\.0\.0\.1:\d+)", out)
    assert rs, out
    desktop = out[out.index("# claude-desktop: add to claude_desktop_config.json") :]
    entry = json.loads(desktop[desktop.index("{") : desktop.index("\n}\n") + 2])["mcpServers"]["pdpp-sandbox"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-5:] == [
        "stdio",
        "--provider-url",
        rs.group(1),
        "--cache-root",
        str(tmp_path / "cache"),
    ]
    assert f"claude mcp add --transport http pdpp-sandbox {url.group(1)}\n" in out  # OAuth sign-in, no header
    assert " connect http://127.0.0.1:" in out  # the terminal path to approve one's own grant


def _printed_commands(output: str) -> list[str]:
    """Every command line the CLI printed (each runs to the end of its line)."""
    return re.findall(r"(pdpp-gateway (?:read-field|call|resource|search) .*)$", output, re.M)


def _run_printed(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a printed command exactly as a person would paste it into a shell."""
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(  # noqa: S603 - bash running a command our own CLI printed
        ["bash", "-c", command],  # noqa: S607
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=cwd,
    )


def test_cli_search_then_read_field_walks_the_evidence_ladder(tmp_path: Path, shared_sandbox: Any) -> None:
    cache = tmp_path / ".pdpp"
    write_credential(cache, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    common = ["--provider-url", shared_sandbox.url, "--cache-root", str(cache)]
    found = run_cli("search", "storage unit locker", *common)
    assert found.returncode == 0, found.stderr
    assert "read_record_field {" not in found.stdout  # continuations are commands, not MCP JSON
    read_more = re.search(r"read more: (pdpp-gateway read-field .*)$", found.stdout, re.M)
    assert read_more, found.stdout
    read = _run_printed(read_more.group(1), tmp_path)
    assert read.returncode == 0, read.stderr
    assert "locker code is 4417-B" in read.stdout  # the fact, read from a bounded window, no export
    header = read.stdout.splitlines()[0]
    assert "complete=false" in header  # a window of a long body, not the whole record
    for label in ("next", "previous"):
        step = re.search(rf"^{label}: (pdpp-gateway read-field .*)$", read.stdout, re.M)
        assert step, read.stdout
        moved = _run_printed(step.group(1), tmp_path)
        assert moved.returncode == 0, moved.stderr
        assert "chars" in moved.stdout.splitlines()[0]


def test_every_command_the_cli_prints_runs_as_printed(tmp_path: Path, shared_sandbox: Any) -> None:
    cache = tmp_path / ".pdpp"
    write_credential(cache, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    common = ["--provider-url", shared_sandbox.url, "--cache-root", str(cache)]
    outputs = [
        run_cli("search", "invoice", "--limit", "4", *common),
        run_cli("search", "citystorage", "--limit", "2", *common),  # metadata-only hits: fetch
        run_cli("call", "query_records", '{"stream":"attachments","connection_id":"cin_mail_work"}', *common),
        run_cli("call", "fetch", '{"id":"cin_mail_work/message_bodies:body_porto_trip"}', *common),
        run_cli("read-field", "cin_mail_work/attachments:att_0000", "blob_ref", *common),
    ]
    commands: list[str] = []
    for done in outputs:
        assert done.returncode == 0, done.stderr
        assert not re.search(r"\b(?:read_record_field|fetch|search|query_records) \{", done.stdout), (
            done.stdout
        )
        commands += _printed_commands(done.stdout)
    kinds = {
        command.split()[1] + (" " + command.split()[2] if command.split()[1] == "call" else "")
        for command in commands
    }
    assert {"read-field", "call search", "call fetch", "resource"} <= kinds, commands
    for command in dict.fromkeys(commands):
        done = _run_printed(command, tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.strip(), command
    blob = next(c for c in commands if c.startswith("pdpp-gateway resource pdpp://blob/"))
    saved = _run_printed(f"{blob} --output {tmp_path / 'blob.bin'}", tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert (tmp_path / "blob.bin").read_bytes()[:4] in (b"\x89PNG", b"%PDF")


def test_read_field_takes_the_connection_id_an_ambiguity_asks_for(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    cache = tmp_path / ".pdpp"
    write_credential(cache, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    common = ["--provider-url", shared_sandbox.url, "--cache-root", str(cache)]
    ambiguous = run_cli("read-field", "messages:msg_shared_0001", "subject", *common)
    assert ambiguous.returncode == 1
    assert "ambiguous_connection" in ambiguous.stderr
    assert "cin_mail_work" in ambiguous.stderr
    picked = run_cli(
        "read-field", "messages:msg_shared_0001", "subject", "--connection-id", "cin_mail_work", *common
    )
    assert picked.returncode == 0, picked.stderr
    assert "Shared calendar invite" in picked.stdout
    assert "complete=true" in picked.stdout.splitlines()[0]


def test_cli_errors_are_typed_and_go_to_stderr(tmp_path: Path, shared_sandbox: Any) -> None:
    cache = tmp_path / ".pdpp"
    write_credential(cache, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    done = run_cli(
        "read-field",
        "messages:../../etc/passwd",
        "body",
        "--provider-url",
        shared_sandbox.url,
        "--cache-root",
        str(cache),
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Error invalid_id" in done.stderr
    no_cache = run_cli(
        "search", "x", "--provider-url", shared_sandbox.url, "--cache-root", str(tmp_path / "none")
    )
    assert no_cache.returncode == 78
    assert f"pdpp-gateway connect {shared_sandbox.url}" in no_cache.stderr


def test_terminal_commands_use_a_package_and_every_printed_command_runs(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    cache = tmp_path / ".pdpp"
    chat_url = shared_sandbox.url.replace("127.0.0.1", "localhost")  # the same RS under a second name
    write_credential(cache, shared_sandbox.url, shared_sandbox.tokens["client_work_mail"])
    write_credential(cache, chat_url, shared_sandbox.tokens["client_chat"])
    (cache / "packages").mkdir()
    (cache / "packages" / "work.json").write_text(json.dumps({"providers": [shared_sandbox.url, chat_url]}))
    common = ["--package", "work", "--cache-root", str(cache)]
    # pinned lexical: its merged page pages on with a package cursor (a fused page has none)
    found = run_cli("search", "Lisbon", "--limit", "4", "--mode", "lexical", *common)
    assert found.returncode == 0, found.stderr
    assert "cin_mail_work/" in found.stdout
    assert "cin_slack_acme/" in found.stdout
    commands = _printed_commands(found.stdout)
    next_page = [c for c in commands if c.startswith("pdpp-gateway call search") and "pkg1." in c]
    assert next_page, found.stdout
    assert all("--package work" in command for command in commands)
    for command in dict.fromkeys(commands):
        done = _run_printed(command, tmp_path)
        assert done.returncode == 0, (command, done.stderr)
    shared_sandbox.calls.clear()
    routed = run_cli(
        "call", "query_records", '{"stream":"messages","connection_id":"cin_slack_acme","limit":2}', *common
    )
    assert routed.returncode == 0, routed.stderr
    data_reads = {call.token_name for call in shared_sandbox.calls if call.path.startswith("/v1/streams")}
    assert data_reads == {"client_chat"}
    twice = run_cli(
        "search",
        "x",
        "--provider-url",
        shared_sandbox.url,
        "--provider-url",
        shared_sandbox.url + "/",
        "--cache-root",
        str(cache),
    )
    assert twice.returncode == 64
    assert "named twice" in twice.stderr


def test_the_demo_writes_nothing_in_the_current_directory(tmp_path: Path) -> None:
    here, data = tmp_path / "here", tmp_path / "data"
    here.mkdir()
    done = run_cli(
        "demo", "--once", "--port", "0", "--gateway-port", "0", "--rate-limit", "0",
        cwd=here, env={"XDG_DATA_HOME": str(data)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(here.iterdir()) == []
    cache = data / "pdpp-gateway" / "demo"
    assert f"the demo grant is cached in {cache}" in done.stdout
    assert any(cache.rglob("*.json"))


def test_the_demo_steps_aside_from_busy_default_ports(tmp_path: Path) -> None:
    import socket

    from pdpp_gateway.files.ports import port_or_free

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        free = port_or_free("127.0.0.1", None, busy, "sandbox RS")
        assert free not in {0, busy}  # taken: a free one, chosen before the server binds
        assert port_or_free("127.0.0.1", busy, 7663, "sandbox RS") == busy  # named: kept, fails on its own
        named = run_cli("sandbox", "--port", str(busy))
        assert named.returncode == 64
        assert "address already in use" in named.stderr


def test_the_demo_runs_with_its_default_ports_taken(tmp_path: Path) -> None:
    import contextlib
    import socket

    with contextlib.ExitStack() as stack:
        for port in (7663, 7664):  # held here, unless another program holds it already
            holder = stack.enter_context(socket.socket())
            with contextlib.suppress(OSError):
                holder.bind(("127.0.0.1", port))
                holder.listen()
        done = run_cli(  # its own data directory: no ports remembered from another test's demo
            "demo", "--once", "--cache-root", str(tmp_path / "cache"), env={"XDG_DATA_HOME": str(tmp_path)}
        )
    assert done.returncode == 0, done.stderr
    assert "port 7663 is in use by another program" in done.stderr
    assert "port 7664 is in use by another program" in done.stderr
    assert "MCP server URL:  http://127.0.0.1:" in done.stdout
    assert ":7664/mcp" not in done.stdout


def test_a_mistyped_option_shows_its_command_s_usage_and_the_option_meant() -> None:
    wrong = run_cli("serve", "--provder-url", "https://data.example.com")
    assert wrong.returncode == 64
    assert wrong.stderr.startswith("usage: pdpp-gateway serve ")  # the command's own usage
    assert "unrecognized arguments: --provder-url https://data.example.com; did you mean --provider-url?" in (
        wrong.stderr
    )


def test_a_mistyped_command_suggests_the_nearest() -> None:
    wrong = run_cli("conect", "http://127.0.0.1:7664/mcp")
    assert wrong.returncode == 64
    assert "unknown command 'conect'; did you mean 'connect'?" in wrong.stderr


def test_connect_to_a_loopback_address_without_a_scheme_says_to_try_http() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = run_cli("connect", f"127.0.0.1:{port}/mcp", "--no-browser")
    assert done.returncode == 69
    assert f"start the URL with http://127.0.0.1:{port}" in done.stderr


def test_usage_errors_exit_64_and_every_option_says_what_it_does() -> None:
    import argparse

    from pdpp_gateway.cli import build_parser

    wrong = run_cli("search", "--no-such-option", "x")
    assert wrong.returncode == 64  # the README's usage code, not argparse's 2
    assert "unrecognized arguments: --no-such-option" in wrong.stderr
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if action.option_strings and "-h" not in action.option_strings:
                assert action.help, (name, action.option_strings)
    assert "(default: 127.0.0.1)" in run_cli("sandbox", "--help").stdout


def test_only_an_address_of_this_machine_reads_as_loopback() -> None:
    from pdpp_gateway.local.oauth_flow import is_loopback

    assert all(is_loopback(host) for host in ("localhost", "127.0.0.1", "127.3.4.5", "::1"))
    assert not any(is_loopback(host) for host in ("127.example.com", "10.0.0.1", "data.example.com", None))
