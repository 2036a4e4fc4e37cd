"""Child processes that run in their own process group (session) and are stopped as a whole."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_process_group(process: subprocess.Popen, grace: float) -> None:
    """SIGTERM the child's process group, then SIGKILL what is left after ``grace`` seconds.

    Whole groups, because Airflow's and SeaweedFS's own children outlive a signal to the leader.
    """
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()
