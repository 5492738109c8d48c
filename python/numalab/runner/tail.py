"""The measured command's standard output, passed on as it comes and its end kept: a program
that prints its own time (NPB's "Time in seconds =", results/reported.py) says it at the end."""

from __future__ import annotations

import fcntl
import os
import pty
import termios
import threading
from typing import IO

#: Bytes of the output kept (NPB's closing summary is about 2 KiB).
KEEP_BYTES = 64 << 10
#: Seconds to wait for the pipe to close once the command has ended: a background process it
#: left holding the pipe does not hold numalab.
DRAIN_S = 2.0


def open_channel(dest: int | None) -> tuple[int, IO[bytes]]:
    """The command's end and numalab's end of the command's stdout: a pseudo-terminal when
    ``dest`` is a terminal, so the program still sees one (``isatty``) and writes each line as it
    comes, as it would without numalab; else a pipe."""
    if dest is not None and os.isatty(dest):
        ours, theirs = pty.openpty()
        attrs = termios.tcgetattr(theirs)
        attrs[1] &= ~termios.ONLCR  # pass "\n" through as "\n": the terminal beyond translates it
        termios.tcsetattr(theirs, termios.TCSANOW, attrs)
        try:  # the program's idea of the width is the real terminal's
            fcntl.ioctl(theirs, termios.TIOCSWINSZ, fcntl.ioctl(dest, termios.TIOCGWINSZ, b"\0" * 8))
        except OSError:
            pass
    else:
        ours, theirs = os.pipe()
    return theirs, os.fdopen(ours, "rb", buffering=0)


class Tail:
    """Reads ``pipe`` on a thread, writes every byte to ``dest`` (a file descriptor; None: discard)
    and keeps the last ``KEEP_BYTES``."""

    def __init__(self, pipe: IO[bytes], dest: int | None):
        self._fd = pipe.fileno()
        self._pipe = pipe
        self._dest = dest
        self._kept = b""
        self._thread = threading.Thread(target=self._copy, name="numalab-stdout", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, 1 << 16)
            except OSError:  # EIO: a pseudo-terminal's other side is closed
                break
            if not chunk:
                break
            self._kept = (self._kept + chunk)[-KEEP_BYTES:]
            self._write(chunk)
        self._pipe.close()

    def _write(self, chunk: bytes) -> None:
        while chunk and self._dest is not None:
            try:
                n = os.write(self._dest, chunk)
            except OSError:
                self._dest = None  # the reader went away (a closed pipe): keep reading, stop passing on
                return
            chunk = chunk[n:]

    def text(self) -> str:
        """What was kept, once the pipe has closed (or ``DRAIN_S`` has passed)."""
        self._thread.join(DRAIN_S)
        return self._kept.decode("utf-8", "replace")
