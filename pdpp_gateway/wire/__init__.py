"""The wire kernel: what the MCP SDK would put on the wire, restated without importing it.

Contract: modules here import neither the SDK nor anything of the gateway's above the
foundation. Each restates one piece of the SDK's bytes, once, for the doors' early and
fast paths (the stdio early path, ``fast_start``; the hosted ``tools/call`` fast path,
``hosted.fast_call``) and the SDK handlers that must say the same (``server``,
``resources``):

- ``plain``: which ``tools/call`` and ``resources/read`` requests a door may answer
  without the SDK (one rule for both doors), and the 2026 envelope and ``initialize``
  params the SDK reads as written;
- ``line``: a line read before the SDK loads, only where the SDK's parser reads the same,
  and the id echoed as the SDK echoes it; ``sdk_line``: a line read by the SDK's parser;
  ``line_id``: the id of a line that parser refused;
- ``envelope``: ``resultType``, the ``serverInfo`` stamp, error objects, the exception
  answer and the stdio frame; ``call_result`` and ``read_result``: a tool call's and a
  resource read's ``result``; ``json_bytes``: values written as pydantic writes them;
- ``codes``: the JSON-RPC codes and the one HTTP status table; ``params``: what is wrong
  with params the SDK would refuse, in words.

``tests/wire`` is the oracle suite: one property-based test per restatement against the
real SDK (or pydantic's parser and writer, which the SDK uses).
"""
