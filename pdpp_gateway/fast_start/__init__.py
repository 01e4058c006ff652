"""Fast start for the stdio door: the first frames answered before the MCP SDK has loaded.

- ``answers``: which opening requests are answered early and with what bytes (no SDK import).
- ``answers.json``: those bytes, produced by the SDK itself (``build``), pinned by a test.
- ``session``: the caller's readers, then the early tool calls and resource reads
  (``calls``), then the SDK.
- ``trust_aside``: aiohttp imported with its CA-bundle reads beside the imports that follow.
- ``wire``: stdin/stdout for the whole process, and the hand-over from early answers to the SDK.
"""
