"""Progress of the commands that wait for a summarizer, on stderr.

The same bars the daemon sends as ``$/progress`` (begin, reports with a phase
and a percentage, end), drawn on one line of stderr when it is a terminal;
nothing when stderr is not a terminal or ``--quiet`` was given, so scripts
see only results (stdout) and errors (stderr).
"""

from __future__ import annotations

import sys
from typing import TextIO


class StderrBar:
    """One bar: ``title: message (NN%)`` redrawn in place, cleared at the end."""

    def __init__(self, title: str, stream: TextIO) -> None:
        self.title, self.stream, self._ended, self._width = title, stream, False, 0
        self._draw("starting")

    def report(self, message: str, percentage: int | None = None) -> None:
        if not self._ended:
            self._draw(message if percentage is None else f"{message} ({percentage}%)")

    def end(self, message: str) -> None:
        if self._ended:
            return
        self._ended = True
        self.stream.write("\r" + " " * self._width + "\r")
        if message != "done":
            self.stream.write(f"{self.title}: {message}\n")
        self.stream.flush()

    def _draw(self, text: str) -> None:
        line = f"{self.title}: {text}"[:119]
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)


class _Silent:
    def report(self, message: str, percentage: int | None = None) -> None:
        return None

    def end(self, message: str) -> None:
        return None


class StderrProgress:
    """The command line's :class:`~pi_sessiond.service.interface.ProgressFactory`."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = not quiet and self.stream.isatty()

    async def begin(self, title: str, token: int | str | None) -> StderrBar | _Silent:
        return StderrBar(title, self.stream) if self.enabled else _Silent()
