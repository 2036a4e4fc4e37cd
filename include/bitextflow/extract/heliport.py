"""heliport, the language identifier of 220 languages, as a child process: one text in, one answer out.

heliport (Jaume Zaragoza-Bernabeu's Rust port of HeLI-OTS, Jauhiainen et al. 2022, "HeLI-OTS, Off-the-shelf Language
Identifier for Text", LREC) is GPLv3, so the project never imports it: its command line runs in an environment of its
own (``.venv-heliport``, built by ``bitextflow-local prepare``; :func:`bitextflow.settings.heliport_executable`), as
bicleaner-ai does, and this module speaks to it through pipes. ``heliport identify -b 1 -s`` reads a line, answers it
at once with ``<code>\\t<confidence>``, and says ``und`` where the confidence is under the language's threshold.

Started once per process on first use (loading the model took 1-4 s here and takes about 0.9 GB), and started again once if
it dies. Nothing waits unbounded: an answer that does not come within :data:`ANSWER_SECONDS` (the first one within
:data:`FIRST_ANSWER_SECONDS`) stops the process and raises :class:`~bitextflow.errors.StageError` naming the command.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import select
import subprocess
import time
from pathlib import Path

from bitextflow.errors import StageError
from bitextflow.text.languages import HELIPORT_CLUSTERS, UNKNOWN, from_iso639_3

log = logging.getLogger(__name__)

#: heliport's answer when no language passes its confidence threshold.
UNDETERMINED = "und"
#: Seconds the first answer may take (the model loads first); each later one.
FIRST_ANSWER_SECONDS = 120.0
ANSWER_SECONDS = 20.0
#: Characters of a text sent: identification needs no more, and a line stays small in the pipe.
MAX_CHARS = 2000


class Heliport:
    """heliport's command line ``executable`` as a long-lived child process (see the module docstring)."""

    def __init__(self, executable: Path) -> None:
        if not executable.is_file():
            raise StageError(
                f"extract.language_identifier is heliport but {executable} does not exist: run `bitextflow-local prepare "
                "<pair config>` (it builds heliport's environment), set BITEXTFLOW_HELIPORT, or set "
                "extract.language_identifier: cld2"
            )
        self.executable = executable
        self._process: subprocess.Popen[bytes] | None = None
        self._pending = b""
        self._answered = False
        atexit.register(self.close)

    def identify(self, text: str) -> str:
        """The language of ``text`` in the project's spelling (a cluster's code, such as ``hbs``, as it is), or
        :data:`~bitextflow.text.languages.UNKNOWN` where heliport is not sure."""
        line = " ".join(text[:MAX_CHARS].split())
        if not line:
            return UNKNOWN
        answer = ""
        for attempt in (1, 2):
            try:
                answer = self._ask(line)
                break
            except (BrokenPipeError, EOFError):
                self.close()
                if attempt == 2:
                    raise StageError(f"heliport ({self.executable}) stopped twice while identifying a text") from None
                log.warning("heliport (%s) stopped; starting it again", self.executable)
        code = answer.split("\t", 1)[0]
        if code == UNDETERMINED:
            return UNKNOWN
        return code if code in HELIPORT_CLUSTERS else from_iso639_3(code)

    def _ask(self, line: str) -> str:
        process = self._started()
        assert process.stdin is not None
        process.stdin.write(line.encode("utf-8", "replace") + b"\n")
        process.stdin.flush()
        return self._answer(process, ANSWER_SECONDS if self._answered else FIRST_ANSWER_SECONDS)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._pending, self._answered = b"", False
            self._process = subprocess.Popen(
                [str(self.executable), "-q", "identify", "--batch-size", "1", "--print-scores"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        return self._process

    def _answer(self, process: subprocess.Popen[bytes], seconds: float) -> str:
        assert process.stdout is not None
        deadline = time.monotonic() + seconds
        descriptor = process.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([descriptor], [], [], left)[0]:
                self.close()
                raise StageError(f"heliport ({self.executable}) gave no answer within {seconds:.0f} s; it was stopped")
            chunk = os.read(descriptor, 65536)
            if not chunk:
                raise EOFError
            self._pending += chunk
        answer, self._pending = self._pending.split(b"\n", 1)
        self._answered = True
        return answer.decode("utf-8", "replace")

    def close(self) -> None:
        """Stop the child process (a later :meth:`identify` starts another)."""
        process, self._process = self._process, None
        if process is None:
            return
        process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a line still buffered for a process that died: nobody reads it
                    stream.close()
