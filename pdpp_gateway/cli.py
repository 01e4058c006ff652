"""The ``pdpp-gateway`` command line: one subcommand per module under ``commands/``.

Contract: each command module exposes ``HELP`` (one line), ``configure(parser)`` and
``run(args) -> int`` (the process exit code). Command modules keep their top-level
imports light (the MCP SDK takes about a second to import), so ``--help`` is fast, and a
command line naming a command imports only that command's module (the stdio door's
start-up is timed).
Nothing here prints to stdout except what a command deliberately prints; the stdio
server keeps stdout for protocol frames only. A usage error (an unknown option, a missing
or malformed argument) is one usage line and exit 64, as the README's tables say: an
unknown option shows its own command's usage and the option it most likely meant, an
unknown command the nearest command; each option's ``--help`` line states its default.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from pdpp_gateway import __version__

# Subcommand name -> module. Order is the order shown in --help.
COMMANDS: dict[str, str] = {
    "connect": "pdpp_gateway.commands.connect",
    "client-config": "pdpp_gateway.commands.client_config",
    "stdio": "pdpp_gateway.commands.stdio",
    "serve": "pdpp_gateway.commands.serve",
    "search": "pdpp_gateway.commands.search",
    "read-field": "pdpp_gateway.commands.read_field",
    "call": "pdpp_gateway.commands.call",
    "resource": "pdpp_gateway.commands.resource",
    "sandbox": "pdpp_gateway.sandbox.command",
    "demo": "pdpp_gateway.commands.demo",
}


def _load(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


USAGE_EXIT = 64  # EX_USAGE, as the README's exit tables say (argparse alone exits 2)


class _Parser(argparse.ArgumentParser):
    """argparse, exiting 64 on a usage error, with each option's default in its help."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message}\n")


class _ShowDefaults(argparse.HelpFormatter):
    """Adds "(default: X)" to an option's help when it has a real default the help does not
    already state."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text.lower()
            or default is None
            or default is False
            or default == []
            or default == argparse.SUPPRESS
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only the ``only`` command's (one module imported, not eight)."""
    parser = _Parser(
        prog="pdpp-gateway",
        description="MCP gateway for grant-scoped, read-only access to a PDPP resource server.",
    )
    parser.add_argument("--version", action="version", version=f"pdpp-gateway {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for name in COMMANDS if only is None else (only,):
        module = _load(name)
        sub = subparsers.add_parser(
            name, help=module.HELP, description=module.HELP, formatter_class=_ShowDefaults
        )
        module.configure(sub)
        sub.set_defaults(_run=module.run, _parser=sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    known = words[0] if words and words[0] in COMMANDS else None
    parser = build_parser(known)
    if known is None and words and not words[0].startswith("-"):
        near = difflib.get_close_matches(words[0], COMMANDS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        parser.error(f"unknown command {words[0]!r}{hint} (commands: {', '.join(COMMANDS)})")
    args, extra = parser.parse_known_args(words)
    if extra:  # the command's own usage, and the option it most likely meant
        command: argparse.ArgumentParser = args._parser
        options = [name for action in command._actions for name in action.option_strings]
        near = difflib.get_close_matches(extra[0], options, n=1) if extra[0].startswith("-") else []
        hint = f"; did you mean {near[0]}?" if near else ""
        command.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    try:
        code: int = args._run(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
