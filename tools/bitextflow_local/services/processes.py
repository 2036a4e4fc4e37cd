"""Child processes that run in their own process group (session) and are stopped as a whole."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time


def stop_process_group(process: subprocess.Popen, grace: float, first: signal.Signals = signal.SIGTERM) -> None:
    """Send ``first`` (SIGTERM unless the program shuts down better on another) to the child's process group,
    then SIGKILL what is left after ``grace`` seconds.

    Whole groups, because Airflow's and SeaweedFS's own children outlive a signal to the leader.
    """
    stop_process_groups([process], grace, first)


def stop_process_groups(processes: list[subprocess.Popen], grace: float, first: signal.Signals = signal.SIGTERM) -> None:
    """:func:`stop_process_group` for several children at once: all are signalled, then all get the same ``grace``."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        try:
            os.killpg(process.pid, first)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    for process in running:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def loopback_port(variable: str) -> int:
    """The port named by the environment variable ``variable``, else a free port on 127.0.0.1."""
    if os.environ.get(variable):
        return int(os.environ[variable])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
