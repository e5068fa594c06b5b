"""Live streams of a running process: a stdin writer and line generators fed by a reader thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any

from ._process import ProcessInputBuffer

__all__ = ["OutputLines", "WriterInput"]


class WriterInput(ProcessInputBuffer):
    """A process' stdin over two callables: ``write(bytes)`` and ``close()`` (EOF).

    :param write: Sends bytes to the process.
    :param close: Ends the input; called once, however often :meth:`close` is.
    """

    def __init__(self, write: Callable[[bytes], None], close: Callable[[], None]) -> None:
        self._write = write
        self._close = close
        self.closed = False

    def write(self, data: str | bytes) -> None:
        if self.closed:
            raise RuntimeError("the standard input of this process is closed (EOF was sent)")
        self._write(data.encode() if isinstance(data, str) else data)

    def flush(self) -> None:
        """Nothing to do: every write is sent at once."""

    def close(self) -> None:
        """Send EOF (once)."""
        if not self.closed:
            self.closed = True
            self._close()


class OutputLines(Generator[str, None, None]):
    """One output stream of a running process as a generator of lines, read ahead by a thread.

    The thread keeps reading so that a process never blocks on a full pipe; ``next()`` gives the
    next line not yet taken (blocking until one comes or the stream ends). :attr:`lines` keeps
    every line for the result. ``read()`` returns the next chunk of bytes, ``b""`` at the end.

    :param read: Reads the next chunk of the stream.
    :param unified_newlines: Drop a carriage return before each newline.
    """

    def __init__(self, read: Callable[[], bytes], *, unified_newlines: bool = False, name: str = "output") -> None:
        self.lines: list[str] = []
        self.eof = False
        self._read = read
        self._unified = unified_newlines
        self._taken = 0
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._pump, name=f"mh-{name}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        pending = b""
        try:
            while True:
                try:
                    chunk = self._read()
                except (OSError, ValueError, EOFError):
                    chunk = b""
                if not chunk:
                    break
                pending += chunk
                *complete, pending = pending.split(b"\n")
                if complete:
                    self._add([self._decode(line) for line in complete])
            if pending:
                self._add([self._decode(pending)])
        finally:
            with self._ready:
                self.eof = True
                self._ready.notify_all()

    def _decode(self, line: bytes) -> str:
        text = line.decode(errors="replace")
        return text.removesuffix("\r") if self._unified else text

    def _add(self, lines: list[str]) -> None:
        with self._ready:
            self.lines.extend(lines)
            self._ready.notify_all()

    def finish(self, timeout: float | None = None) -> None:
        """Wait until the stream has been read to its end."""
        self._thread.join(timeout)

    def send(self, value: Any) -> str:
        with self._ready:
            self._ready.wait_for(lambda: self.eof or self._taken < len(self.lines))
            if self._taken >= len(self.lines):
                raise StopIteration
            line = self.lines[self._taken]
            self._taken += 1
            return line

    def throw(
        self,
        typ: type[BaseException] | BaseException,
        val: object = None,
        tb: TracebackType | None = None,
    ) -> str:
        if isinstance(typ, BaseException):
            raise typ
        raise typ(val) if val is not None else typ()
