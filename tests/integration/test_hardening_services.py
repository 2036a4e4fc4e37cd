"""The Celery profile's Redis and PostgreSQL trust only the server they started (docs/security.md): with an impostor on
the port, the real server fails to bind, and the start fails without sending anything to the impostor; libpq refuses
a cleartext password exchange. Real redis-server and PostgreSQL (Debian packages) started through the services
module alone, no Airflow; the impostors are small socket servers on 127.0.0.1."""

from __future__ import annotations

import contextlib
import shutil
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import free_port

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="the Debian packages redis-server and postgresql are not installed"
)

SSL_REQUEST, GSSENC_REQUEST = 80877103, 80877104


class Impostor:
    """Listens on 127.0.0.1:``port`` before the real server starts; records every byte a client sends it."""

    def __init__(self, port: int, answer: Callable[[bytes], bytes | None]):
        self.received = bytearray()
        self._answer = answer
        self._server = socket.create_server(("127.0.0.1", port))
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                with contextlib.suppress(OSError):
                    while chunk := connection.recv(65536):
                        self.received += chunk
                        reply = self._answer(chunk)
                        if reply is None:
                            break
                        connection.sendall(reply)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()


@contextlib.contextmanager
def impostor(answer: Callable[[bytes], bytes | None]) -> Iterator[tuple[int, Impostor]]:
    port = free_port()
    server = Impostor(port, answer)
    try:
        yield port, server
    finally:
        server.close()


def redis_impostor(chunk: bytes) -> bytes:
    """Says yes to everything, as a server that wants the password would."""
    return b"+PONG\r\n" if b"PING" in chunk.upper() else b"+OK\r\n"


def postgres_impostor(chunk: bytes) -> bytes | None:
    """Refuses encryption, then asks for the password in cleartext (AuthenticationCleartextPassword)."""
    if len(chunk) == 8 and struct.unpack("!II", chunk)[1] in (SSL_REQUEST, GSSENC_REQUEST):
        return b"N"
    if chunk[:1] == b"p":  # the password message: what the impostor was after
        return None
    return b"R" + struct.pack("!II", 8, 3)


def test_redis_with_an_impostor_on_its_port_fails_to_start_and_sends_it_nothing(tmp_path: Path, monkeypatch) -> None:
    from bitextflow_local.services.redis_broker import RedisServer

    with impostor(redis_impostor) as (port, fake):
        monkeypatch.setenv("BITEXTFLOW_REDIS_PORT", str(port))
        with pytest.raises(RuntimeError, match=rf"redis-server exited: it does not hold 127.0.0.1:{port} .*nothing was sent"):
            RedisServer(tmp_path / "redis", start_timeout=20)
    assert bytes(fake.received) == b"", "the impostor received the broker's password"


def test_postgres_with_an_impostor_on_its_port_fails_to_start_and_sends_it_nothing(tmp_path: Path, monkeypatch) -> None:
    from bitextflow_local.services.postgres import PostgresServer

    with impostor(postgres_impostor) as (port, fake):
        monkeypatch.setenv("BITEXTFLOW_POSTGRES_PORT", str(port))
        with pytest.raises(RuntimeError, match=rf"PostgreSQL exited: it does not hold 127.0.0.1:{port} "):
            PostgresServer(tmp_path / "postgres", start_timeout=30)
    password = (tmp_path / "postgres" / "password").read_text().strip()
    assert password.encode() not in fake.received and not fake.received, "the impostor received the database password"


def test_libpq_refuses_a_server_that_asks_for_the_password_in_cleartext() -> None:
    import psycopg2

    from bitextflow_local.services.postgres import REQUIRE_AUTH

    with impostor(postgres_impostor) as (port, fake):
        with pytest.raises(psycopg2.OperationalError, match="server requested a cleartext password"):
            psycopg2.connect(host="127.0.0.1", port=port, user="airflow", password="s3cret-pw", dbname="airflow",
                             connect_timeout=2, require_auth=REQUIRE_AUTH)  # fmt: skip
    assert b"s3cret-pw" not in fake.received


def test_the_real_servers_start_and_their_urls_insist_on_scram(tmp_path: Path, monkeypatch) -> None:
    import psycopg2
    import redis

    from bitextflow_local.services.postgres import PostgresServer
    from bitextflow_local.services.redis_broker import RedisServer

    for name in ("BITEXTFLOW_REDIS_PORT", "BITEXTFLOW_POSTGRES_PORT"):
        monkeypatch.delenv(name, raising=False)
    broker = RedisServer(tmp_path / "redis")
    try:
        assert redis.Redis.from_url(broker.url()).ping()
    finally:
        broker.stop()
    database = PostgresServer(tmp_path / "postgres")
    try:
        url = database.url()
        assert url.endswith("/airflow?require_auth=scram-sha-256")
        with contextlib.closing(psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://"))) as connection:
            with connection.cursor() as cursor:
                cursor.execute("SHOW password_encryption")
                assert cursor.fetchone() == ("scram-sha-256",)
        assert "require_auth" not in database.url("postgresql+asyncpg")
    finally:
        database.stop()
