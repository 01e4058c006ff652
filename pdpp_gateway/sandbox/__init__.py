"""A faithful local PDPP resource server with realistic sample data.

The embedded upstream of the demo and of the test suite: the ``/v1`` read surface,
error envelopes, discovery documents and introspection, over SQLite (FTS5 for search).
Entry points: ``app.create_app``, ``testing.start_sandbox``, the ``sandbox`` CLI command.
"""
