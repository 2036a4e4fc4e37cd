"""A private PostgreSQL cluster: the metadata database of the distributed profile, under ``.local/postgres``.

The cluster is initialised once (``initdb``: password authentication only, for local and TCP connections
alike) with a generated password kept in ``.local/postgres/password`` (0600), then runs as ``postgres`` in the
foreground of its own process group, so the supervisor stops it like every other service. It listens on
127.0.0.1 only, on a free port unless ``BITEXTFLOW_POSTGRES_PORT`` names one, and has no Unix socket: the
default folder (/var/run/postgresql) belongs to the system's own cluster, and a socket path under a deep
project home would pass the 107-byte limit of Unix socket paths. Nothing connects before the server started here
holds its port (:func:`~bitextflow_local.services.processes.wait_listening`), and libpq clients (this module, Airflow,
Celery's result backend) refuse every authentication but SCRAM (``require_auth=scram-sha-256``).

PostgreSQL refuses to run as root. As root (a container, CI), initdb and the server run in a user namespace
in which root is the ``postgres`` user: the files stay root's and private under ``.local/``, and no other
user needs to reach them.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psycopg2

from bitextflow_local.services.private import write_private
from bitextflow_local.services.processes import loopback_port, stop_process_group, wait_listening

DATABASE = "airflow"
USER = "airflow"
#: libpq's ``require_auth``: SCRAM only, never the cleartext or MD5 exchange a server may ask for. SCRAM proves both
#: ways: a server that does not hold the password's verifier cannot complete it, and learns nothing it could replay.
REQUIRE_AUTH = "scram-sha-256"
DEBIAN_BIN = Path("/usr/lib/postgresql")
MISSING = "PostgreSQL's `initdb` is not installed (looked on PATH and in /usr/lib/postgresql/*/bin); install the Debian package postgresql"


def bin_dir() -> Path:
    """The folder of ``initdb`` and ``postgres``: where the ``initdb`` on PATH really is (Debian links only some
    programs into /usr/bin), else the newest /usr/lib/postgresql/<version>/bin."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    versions = sorted(
        (path.parent for path in DEBIAN_BIN.glob("*/bin/initdb") if path.parts[-3].isdigit()),
        key=lambda folder: int(folder.parent.name),
    )
    if not versions:
        raise RuntimeError(MISSING)
    return versions[-1]


def _as_postgres_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    if shutil.which("unshare") is None:
        raise RuntimeError("PostgreSQL refuses to run as root and `unshare` is missing; install the Debian package util-linux")
    return ["unshare", "--user", "--map-user=postgres", "--map-group=postgres", *command]


class PostgresServer:
    """Initialise (once) and start the cluster in ``folder`` now; stop it with :meth:`stop`."""

    def __init__(self, folder: Path, start_timeout: float = 60.0) -> None:
        self.folder = folder
        self.data_dir = folder / "data"
        self.port = loopback_port("BITEXTFLOW_POSTGRES_PORT")
        self.log_path = folder / "postgres.log"
        self._bin = bin_dir()
        password_file = folder / "password"
        if not (self.data_dir / "PG_VERSION").is_file():
            self._initdb(password_file)
        self.password = password_file.read_text().strip()
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                _as_postgres_user([
                    str(self._bin / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
                    "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                ]),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            self._create_database(time.monotonic() + start_timeout)
        except BaseException:
            self.stop()
            raise

    def _initdb(self, password_file: Path) -> None:
        # A half-made cluster (initdb killed) has no PG_VERSION yet and is made again.
        shutil.rmtree(self.data_dir, ignore_errors=True)
        write_private(password_file, secrets.token_hex(24) + "\n")
        result = subprocess.run(
            _as_postgres_user([
                str(self._bin / "initdb"), "-D", str(self.data_dir), "-U", USER, f"--pwfile={password_file}",
                "--auth=scram-sha-256", "--encoding=UTF8", "--no-locale",
            ]),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed for {self.data_dir}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")

    def _connect(self, database: str):
        return psycopg2.connect(
            host="127.0.0.1", port=self.port, user=USER, password=self.password, dbname=database, connect_timeout=2,
            require_auth=REQUIRE_AUTH,
        )  # fmt: skip

    def _create_database(self, deadline: float) -> None:
        # the password goes to the port only once this postgres is seen holding it
        wait_listening(self._process, self.port, deadline, "PostgreSQL", self.log_path)
        while True:
            try:
                connection = self._connect("postgres")
                break
            except psycopg2.OperationalError as exc:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])
                    raise RuntimeError(
                        f"PostgreSQL did not start on 127.0.0.1:{self.port} ({exc}); {self.log_path}:\n{tail}"
                    ) from exc
                time.sleep(0.2)
        # CREATE DATABASE cannot run in a transaction, and psycopg2's `with connection` opens one
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
                if cursor.fetchone() is None:
                    cursor.execute(f"CREATE DATABASE {DATABASE}")
        finally:
            connection.close()

    def url(self, scheme: str = "postgresql+psycopg2") -> str:
        """The database URL with the password: for settings files that are private, never for messages. libpq
        (psycopg2) refuses any authentication but SCRAM (``require_auth``); asyncpg has no such option."""
        query = f"?require_auth={REQUIRE_AUTH}" if "psycopg2" in scheme else ""
        return f"{scheme}://{USER}:{self.password}@127.0.0.1:{self.port}/{DATABASE}{query}"

    def stop(self, grace: float = 30.0) -> None:
        """Fast shutdown (SIGINT: clients are disconnected, not waited for), SIGKILL after ``grace`` seconds."""
        stop_process_group(self._process, grace, first=signal.SIGINT)
