"""The stdin pump hands the SDK exactly the lines written, however the pipe splits them."""

from __future__ import annotations

import os
import threading

from pdpp_gateway.fast_start.answers import EarlyResponder
from pdpp_gateway.fast_start.wire import READ_BYTES, StdinPump, Wire


def _pump_lines(payload: bytes) -> list[str]:
    """Feed ``payload`` through a real pipe into a pump (no early answers) and collect every line."""
    read_fd, write_fd = os.pipe()
    sink = os.open(os.devnull, os.O_WRONLY)
    pump = StdinPump(read_fd, Wire(sink), EarlyResponder(None, "test"))
    pump.hand_over()
    pump.start()

    def write() -> None:
        view = memoryview(payload)
        while view:  # odd-sized writes, so lines and UTF-8 sequences straddle reads
            written = os.write(write_fd, view[:7_777])
            view = view[written:]
        os.close(write_fd)

    writer = threading.Thread(target=write)
    writer.start()
    lines = []
    while (line := pump.next_line()) != "":
        lines.append(line)
    writer.join()
    os.close(read_fd)
    os.close(sink)
    return lines


def test_long_lines_and_split_characters_arrive_whole() -> None:
    long_line = '{"q": "' + "é☃" * (3 * READ_BYTES) + '"}'
    payload = f"{long_line}\n\nshort\n{long_line}".encode()
    lines = _pump_lines(payload)
    assert lines == [long_line + "\n", "\n", "short\n", long_line]


def test_many_short_lines_in_one_read() -> None:
    lines = _pump_lines(b"".join(b'{"id": %d}\r\n' % n for n in range(5000)))
    assert lines == [f'{{"id": {n}}}\n' for n in range(5000)]
