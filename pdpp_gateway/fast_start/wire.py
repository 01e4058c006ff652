"""stdin and stdout of the stdio door, from the first instruction to the last frame.

Contract:

- ``claim_stdio()`` takes fd 0 and fd 1 for the protocol before anything else runs:
  private duplicates carry the wire, fd 0 then reads the null device and fd 1 writes to
  stderr, for the rest of the process. Stray output from any library, print or child
  process lands on stderr and never inside a frame (the SDK's ``stdio_server`` does the
  same, but only once the SDK has loaded).
- ``Wire.write(frame)`` writes whole frames, one writer at a time: frames never interleave.
- ``StdinPump`` is one daemon thread reading stdin: UTF-8 with invalid bytes replaced and
  universal newlines, the very text the SDK's ``stdio_server`` would read. Before the
  hand-over it keeps every line and offers it to the ``EarlyResponder``; early answers
  are written once ``open_gate()`` is called (the credential check passed) and are never
  written if it is not. Early calls (and their cancellations) go to the sink given to
  ``attach_calls`` (kept in order until then) and are not kept for the SDK. Once the
  responder stops, the pump reads no further until the hand-over (the pipe pushes back
  on the client, as it would against the SDK).
- ``hand_over()`` gives the SDK every line kept so far, in order, then live lines. Its
  answers to the early-answered requests are not written (``EarlyAnswers.claim``); live
  lines wait until every one of those has been claimed, so a client reusing an id after
  its answer can never be confused.
- ``SdkStdin`` / ``WireOut`` are the file objects the SDK's ``stdio_server`` reads and
  writes (through ``anyio.wrap_file``); ``SdkStdin`` asks a ``check`` callable about
  each line and skips the lines it has answered itself.
"""

from __future__ import annotations

import codecs
import collections
import io
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Final

from pdpp_gateway.fast_start.answers import Answer, EarlyCall, EarlyCancel, EarlyResponder

READ_BYTES: Final = 64 * 1024
LIVE_QUEUE_LINES: Final = 64
SETTLE_SECONDS: Final = 30.0
_EOF: Final = ""
_log = logging.getLogger(__name__)


def claim_stdio() -> tuple[int, int]:
    """Private duplicates of fd 0 and fd 1; fd 0 becomes the null device, fd 1 stderr."""
    wire_in, wire_out = _private_copy(0), _private_copy(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _private_copy(fd: int) -> int:
    """A copy of ``fd`` above the standard range, not inherited by child processes."""
    try:
        import fcntl
    except ImportError:  # Windows: os.dup's copy is not inheritable either
        return os.dup(fd)
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


def _read(fd: int) -> bytes:
    """The next bytes of ``fd`` (``b""`` at its end), waiting even on a non-blocking pipe."""
    while True:
        try:
            return os.read(fd, READ_BYTES)
        except BlockingIOError:
            import select

            select.select([fd], [], [])
        except OSError:
            return b""


class Wire:
    """The protocol's stdout: whole frames, one at a time."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def write(self, frame: bytes) -> None:
        with self._lock:
            view = memoryview(frame)
            while view:
                view = view[os.write(self._fd, view) :]


class EarlyAnswers:
    """The frames written before the hand-over, by request id, until the SDK's own answer drops."""

    def __init__(self) -> None:
        self._frames: dict[str, Answer] = {}
        self._lock = threading.Lock()
        self.settled = threading.Event()
        self.settled.set()

    def add(self, answer: Answer) -> None:
        with self._lock:
            self._frames[answer.id_key] = answer
            self.settled.clear()

    def claim(self, id_key: str) -> Answer | None:
        """The early answer to ``id_key``, once: the SDK's own answer to it is not written."""
        with self._lock:
            answer = self._frames.pop(id_key, None)
            if not self._frames:
                self.settled.set()
        return answer


class StdinPump:
    """The one reader of stdin: early answers first, then the SDK's lines."""

    def __init__(self, fd: int, wire: Wire, responder: EarlyResponder) -> None:
        self._fd = fd
        self._wire = wire
        self._responder = responder
        self._lock = threading.Lock()
        self._gate_open = False
        self._held: list[bytes] = []
        self._kept: list[str] = []  # every line read before the hand-over, in order
        self._eof = False
        self._handed_over = threading.Event()
        self._replay: collections.deque[str] = collections.deque()
        self._live: queue.Queue[str] = queue.Queue(LIVE_QUEUE_LINES)
        self._settle_checked = False
        self._calls: list[EarlyCall | EarlyCancel] = []  # until a sink is attached
        self._call_sink: Callable[[EarlyCall | EarlyCancel], None] | None = None
        self.early = EarlyAnswers()
        self.changed = threading.Event()  # set when stdin ends before the hand-over
        self._thread = threading.Thread(target=self._run, name="stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def open_gate(self) -> None:
        """The credential check passed: write the early answers held so far, and later ones at once."""
        with self._lock:
            self._gate_open = True
            for frame in self._held:
                self._wire.write(frame)
            self._held.clear()

    @property
    def responder(self) -> EarlyResponder:
        return self._responder

    def attach_calls(self, sink: Callable[[EarlyCall | EarlyCancel], None]) -> None:
        """From now on each early call (and its cancellation) goes to ``sink``, from the pump's
        thread; those read before are given to it at once, in order."""
        with self._lock:
            for call in self._calls:
                sink(call)
            self._calls.clear()
            self._call_sink = sink

    def served_early(self) -> bool:
        """stdin ended and every line was answered (or needed no answer) early: nothing is left
        but the early calls (none before a sink is attached; the sink's own once it is)."""
        with self._lock:
            return self._eof and not self._responder.stopped and self._gate_open and not self._calls

    def hand_over(self) -> None:
        """From now on the SDK reads: first every line kept so far, then live ones."""
        with self._lock:
            self._replay.extend(self._kept)
            if self._eof:
                self._replay.append(_EOF)
            self._kept.clear()
            self._handed_over.set()

    def next_line(self) -> str:
        """The SDK's next line (``""`` at the end); blocks until the hand-over."""
        self._handed_over.wait()
        if self._replay:
            return self._replay.popleft()
        if not self._settle_checked:
            self._settle_checked = True
            if not self.early.settled.wait(SETTLE_SECONDS):
                _log.warning(
                    "the SDK did not answer every early-answered request within %.0f s", SETTLE_SECONDS
                )
        return self._live.get()

    def _run(self) -> None:
        decoder = io.IncrementalNewlineDecoder(
            codecs.getincrementaldecoder("utf-8")("replace"), translate=True
        )
        pieces: list[str] = []  # the line read so far, joined once when it ends: linear in its size
        while True:
            chunk = _read(self._fd)
            text = decoder.decode(chunk, final=not chunk)
            if "\n" in text:
                first, *lines, last = text.split("\n")
                pieces.append(first)
                self._take("".join(pieces) + "\n")
                for line in lines:
                    self._take(line + "\n")
                pieces = [last] if last else []
            elif text:
                pieces.append(text)
            if not chunk:
                if pieces:
                    self._take("".join(pieces))
                self._take(_EOF)
                return

    def _take(self, line: str) -> None:
        with self._lock:
            handed_over = self._handed_over.is_set()
            if not handed_over:
                self._keep(line)
            stopped = self._responder.stopped
        if handed_over:
            self._live.put(line)
        elif stopped and line != _EOF:
            self._handed_over.wait()  # read no further until the SDK takes over

    def _keep(self, line: str) -> None:
        if line == _EOF:
            self._eof = True
            self.changed.set()
            return
        outcome = self._responder.respond(line)
        if isinstance(outcome, EarlyCall | EarlyCancel):  # never the SDK's: not kept for it
            if self._call_sink is None:
                self._calls.append(outcome)
            else:
                self._call_sink(outcome)
            return
        self._kept.append(line)
        if isinstance(outcome, Answer):
            self.early.add(outcome)
            if self._gate_open:
                self._wire.write(outcome.frame)
            else:
                self._held.append(outcome.frame)


class SdkStdin:
    """The SDK's stdin: the pump's lines, minus those ``check`` answered itself."""

    def __init__(self, pump: StdinPump, check: Callable[[str], bool]) -> None:
        self._pump = pump
        self._check = check

    def readline(self) -> str:
        while True:
            line = self._pump.next_line()
            if line == _EOF or self._check(line):
                return line


class WireOut:
    """The SDK's stdout: each flushed write goes out as one frame."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._pending: list[str] = []

    def write(self, text: str) -> int:
        self._pending.append(text)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            frame, self._pending = "".join(self._pending).encode(), []
            self._wire.write(frame)
