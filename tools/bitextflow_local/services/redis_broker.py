"""A private Redis: the Celery broker of the distributed profile, under ``.local/redis``.

It listens on 127.0.0.1 only (``bind``, ``protected-mode yes``), on a free port unless
``BITEXTFLOW_REDIS_PORT`` names one, with a password generated at each start (``requirepass``). The password
is in its configuration file, which is private (0600), rather than on its command line, which every local
user can read. The readiness check sends the password only once the ``redis-server`` started here holds the
port (:func:`~bitextflow_local.services.processes.wait_listening`): a program that took the port first, making
the server fail to bind, gets nothing. Nothing is persisted: a queued task lost with a restart of the stack is queued again by the
scheduler, which owns the state of every task.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from pathlib import Path

import redis

from bitextflow_local.services.private import write_private
from bitextflow_local.services.processes import loopback_port, stop_process_group, wait_listening

MISSING = "`redis-server` is not installed; install the Debian package redis-server"


def redis_server() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError(MISSING)
    return found


def _quoted(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


class RedisServer:
    """Start ``redis-server`` with its configuration in ``folder`` now; stop it with :meth:`stop`."""

    def __init__(self, folder: Path, start_timeout: float = 30.0) -> None:
        self.folder = folder
        self.port = loopback_port("BITEXTFLOW_REDIS_PORT")
        self.password = secrets.token_hex(24)
        self.log_path = folder / "redis.log"
        config = folder / "redis.conf"
        write_private(
            config,
            "bind 127.0.0.1\n"
            "protected-mode yes\n"
            f"port {self.port}\n"
            f"requirepass {self.password}\n"
            'save ""\n'
            "appendonly no\n"
            f"dir {_quoted(folder)}\n",
        )
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                [redis_server(), str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready(time.monotonic() + start_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, deadline: float) -> None:
        # the password goes to the port only once this redis-server is seen holding it
        wait_listening(self._process, self.port, deadline, "redis-server", self.log_path)
        client = redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_connect_timeout=1)
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError as exc:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])
                    raise RuntimeError(f"Redis did not start on 127.0.0.1:{self.port} ({exc}); {self.log_path}:\n{tail}") from exc
                time.sleep(0.1)
            finally:
                client.close()

    def url(self) -> str:
        """The broker URL with the password: for settings files that are private, never for messages."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def stop(self, grace: float = 15.0) -> None:
        stop_process_group(self._process, grace)
