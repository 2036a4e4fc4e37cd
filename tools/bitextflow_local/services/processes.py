"""Child processes that run in their own process group (session) and are stopped as a whole."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path


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


def listening_process_holds(process: subprocess.Popen, port: int) -> bool:
    """Whether ``process`` (alive) holds the socket that listens on 127.0.0.1:``port``, read from Linux's /proc.

    A port picked free and released, or named by the environment, can be taken by any local user before the
    server binds it: the server then fails to bind and exits, and a readiness check that connects to the port
    talks to whatever listens there, password included. Looking at the listening socket's owner first means a
    password is only ever sent to the server started here (once it holds 127.0.0.1:``port``, no one else can bind it).
    """
    if process.poll() is not None:
        return False
    address = f"0100007F:{port:04X}"  # 127.0.0.1 in /proc/net/tcp's little-endian hex
    listening = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == address and fields[3] == "0A":  # TCP_LISTEN
            listening.add(f"socket:[{fields[9]}]")
    for descriptor in Path(f"/proc/{process.pid}/fd").iterdir():
        try:
            if os.readlink(descriptor) in listening:
                return True
        except OSError:  # closed meanwhile
            continue
    return False


def wait_listening(process: subprocess.Popen, port: int, deadline: float, name: str, log_path: Path) -> None:
    """Wait until ``process`` holds 127.0.0.1:``port`` (:func:`listening_process_holds`); raise, with the end of
    ``log_path``, when it exits first (another program holds the port), or at ``deadline``."""
    while not listening_process_holds(process, port):
        if process.poll() is not None or time.monotonic() > deadline:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
            why = "exited" if process.poll() is not None else "does not listen yet"
            raise RuntimeError(
                f"{name} {why}: it does not hold 127.0.0.1:{port} (another program may listen there; free the port or "
                f"choose another); nothing was sent to that port. {log_path}:\n{tail}"
            )
        time.sleep(0.05)
