"""A stdin line that is not a JSON-RPC message gets a JSON-RPC error, never silence.

Raw lines go to a real ``python -m pdpp_gateway stdio``: not JSON → -32700 with id null;
params that are not an object → -32602 with the request's id; any other malformed
message (an id that is neither an integer nor a string included) → -32600 with its id
when it can be read. A line the SDK's parser refuses is answered with its true reason
(nesting past the parser's depth, however deep; a number past 4,300 digits; a raw
control character; a lone surrogate escape) and its id when that can be read safely.
Each costs one stderr line that says what was wrong and never repeats the line. The
session carries on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pdpp_gateway.local.credentials import write_credential
from tests.conftest import run_cli
from tests.frames import INITIALIZED, initialize

SECRET = "sbx_secret_in_a_bad_line"
DEEP_CALL = (  # first of the bad lines: after the handshake, the early path reads it before the SDK
    '{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"schema","arguments":{"x":'
    + "[" * 300
    + "]" * 300
    + "}}}"
)
BAD_LINES = [
    (DEEP_CALL, 20, -32700),
    # 1,000 deep ended the session once (the id was read again by a recursive parser)
    (
        '{"jsonrpc":"2.0","id":21,"method":"tools/list","params":{"x":' + "[" * 1000 + "]" * 1000 + "}}",
        21,
        -32700,
    ),
    (
        '{"jsonrpc":"2.0","method":"tools/list","params":{"x":'
        + '{"a":' * 5000
        + "1"
        + "}" * 5000
        + '},"id":"deep"}',
        "deep",
        -32700,
    ),
    ('{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', None, -32700),  # an id that cannot be written back
    ('{"jsonrpc":"2.0","id":22,"method":"ping","params":{"n":' + "9" * 5000 + "}}", 22, -32700),
    ('{"jsonrpc":"2.0","id":23,"method":"ping","params":{"s":"a\x00b"}}', 23, -32700),
    (f'this is not json {{"token": "{SECRET}"}}', None, -32700),
    ('[{"jsonrpc":"2.0","id":5,"method":"ping"}]', None, -32600),
    (f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"{SECRET}"}}', 7, -32602),
    ('{"jsonrpc":"2.0","id":"eight","method":"tools/list","params":[1]}', "eight", -32602),
    ('{"jsonrpc":"1.0","id":9,"method":"ping"}', 9, -32600),
    ('{"jsonrpc":"2.0","id":10.5,"method":"ping"}', None, -32600),  # the SDK alone: a notification
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', None, -32600),
    ('{"jsonrpc":"2.0","id":11,"method":42}', 11, -32600),
    ('{"jsonrpc":"2.0","method":"notifications/initialized","params":"x"}', None, -32602),
    # params the SDK's model refuses with a bare "Invalid request parameters": said in words
    (
        '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"schema","arguments":[1]}}',
        15,
        -32602,
    ),
    ('{"jsonrpc":"2.0","id":16,"method":"resources/read","params":{"uri":7}}', 16, -32602),
    # JSON, but the SDK's parser refuses a lone surrogate escape: the id is still readable
    (
        '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"search","arguments":{"query":"\\ud800"}}}',
        14,
        -32700,
    ),
]
MALFORMED_RESPONSE = '{"jsonrpc":"2.0","id":12,"result":"not an object"}'
PING = '{"jsonrpc":"2.0","id":13,"method":"ping"}'


def serve(tmp_path: Path, sandbox: Any, lines: list[str]) -> Any:
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, sandbox.url, sandbox.tokens["client_broad"])
    return run_cli(
        "stdio",
        "--provider-url",
        sandbox.url,
        "--cache-root",
        str(cache_root),
        stdin="".join(line + "\n" for line in lines),
    )


@pytest.mark.parametrize("first", [True, False], ids=["before-the-handshake", "after-the-handshake"])
def test_every_bad_line_is_answered_and_the_session_goes_on(
    tmp_path: Path, shared_sandbox: Any, first: bool
) -> None:
    handshake = [json.dumps(initialize()), json.dumps(INITIALIZED)]
    bad = [text for text, _, _ in BAD_LINES] + [MALFORMED_RESPONSE, "   "]
    lines = [*bad, *handshake, PING] if first else [*handshake, *bad, PING]
    done = serve(tmp_path, shared_sandbox, lines)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(text) for text in done.stdout.splitlines()]
    errors = sorted(
        (reply["id"] is None, str(reply["id"]), reply["error"]["code"])
        for reply in replies
        if "error" in reply
    )
    expected = sorted((request_id is None, str(request_id), code) for _, request_id, code in BAD_LINES)
    assert errors == expected
    answered = {reply["id"] for reply in replies if "result" in reply}
    assert answered == {1, 13}  # initialize and the last ping; the malformed response got nothing
    for reply in replies:
        if "error" in reply:
            assert reply["error"]["message"].split(":")[0] in {
                "Parse error",
                "Invalid Request",
                "Invalid params",
            }
    said = {reply["id"]: reply["error"]["message"] for reply in replies if "error" in reply}
    for deep in (20, 21, "deep"):  # the true reason, not a surrogate escape
        assert "nests arrays or objects deeper than the 200 levels" in said[deep]
    assert "more digits than the server reads" in said[22]
    assert "raw control character" in said[23]
    assert "surrogate" in said[14]
    assert '"arguments" must be a JSON object' in said[15]
    assert '"uri", a pdpp:// URI string (got number)' in said[16]
    assert done.stderr.count("stdin: answered") == len(BAD_LINES)
    assert done.stderr.count("stdin: dropped a malformed JSON-RPC response") == 1
    assert SECRET not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
