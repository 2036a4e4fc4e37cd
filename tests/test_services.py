"""The demo's local stack: started in its own process groups, loopback only, stopped cleanly."""

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_services_up_listen_on_loopback_only_and_stop_cleanly(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    for name in ("dags", "plugins", "include"):
        (home / name).symlink_to(ROOT / name)
    env = {
        **os.environ,
        "BITEXTFLOW_HOME": str(home),
        "BITEXTFLOW_SITE_PORT": str(free_port()),
        "BITEXTFLOW_AIRFLOW_PORT": str(free_port()),
    }
    command = [str(Path(sys.executable).parent / "bitextflow"), "services"]
    up = subprocess.run([*command, "up"], env=env, capture_output=True, text=True, timeout=420)
    assert up.returncode == 0, up.stderr + (home / ".local" / "stack.log").read_text(errors="replace")[-3000:]
    try:
        state = json.loads((home / ".local" / "stack.json").read_text())
        supervisor = psutil.Process(state["pid"])
        processes = [supervisor, *supervisor.children(recursive=True)]
        assert len({p.pid for p in processes}) >= 6, "supervisor, weed and four Airflow components"
        listening = [c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in {p.pid for p in processes}]
        assert listening
        assert {c.laddr.ip for c in listening} <= {"127.0.0.1", "::1"}, listening
        assert stat.S_IMODE((home / ".local" / "services.env").stat().st_mode) == 0o600
        assert subprocess.run([*command, "up"], env=env, capture_output=True, text=True).stdout.startswith("services already running")
    finally:
        down = subprocess.run([*command, "down"], env=env, capture_output=True, text=True, timeout=180)
    assert down.returncode == 0 and "services stopped" in down.stdout
    assert not [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not (home / ".local" / "stack.json").exists()
