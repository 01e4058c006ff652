"""Shared test set-up: the sandbox RS fixtures come from the sandbox's pytest plugin."""

pytest_plugins = ["pdpp_gateway.sandbox.pytest_plugin"]
