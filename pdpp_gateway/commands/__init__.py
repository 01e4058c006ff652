"""CLI subcommand modules (see ``pdpp_gateway.cli`` for their shape)."""
