"""Serve the local site on 127.0.0.1, in a background thread (tests, benchmarks) or in the foreground (demo).

It binds loopback addresses only, so the crawl target is never exposed to the network. A web of many
sites (:mod:`bitextflow_local.localsite.multisite`) is served by :func:`serve_sites`: one server per site,
each on its own address of 127.0.0.0/8 (which Linux routes to the loopback interface) and all on one port,
so that every site is a host of its own to the crawler.
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import os
import signal
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import TypeVar

from bitextflow.errors import StageError

HOST = "127.0.0.1"
LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
# When a web is served on any free port, the port the first site got may be taken on another site's address.
_FREE_PORT_ATTEMPTS = 5

# Explicit, so that responses do not depend on the machine's /etc/mime.types.
CONTENT_TYPES: dict[str, str] = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".xml": "application/xml",
    ".js": "text/javascript; charset=utf-8",
    ".png": "image/png",
    ".gif": "image/gif",
    ".jpg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".pdf": "application/pdf",
    ".gz": "application/gzip",
}


class PortInUse(StageError):
    """The port asked for is taken on the address asked for."""


class _SiteRequestHandler(SimpleHTTPRequestHandler):
    """Static files with exact content types, keep-alive, no request log and no directory listings.

    Listings are refused (404) because a crawler must discover pages through links, as on a real site.
    """

    protocol_version = "HTTP/1.1"
    # Closes idle keep-alive connections, so that stopped servers do not keep handler threads alive long.
    timeout = 30

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        return CONTENT_TYPES.get(Path(path).suffix.lower(), "application/octet-stream")

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(404, "Not Found")

    def log_message(self, format: str, *args: object) -> None:
        """Silent: a crawl makes thousands of requests and the log would bury the pipeline's output."""


class SiteServer:
    """A running server; `base_url` ends with a slash, so site-relative paths can be appended to it."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name="localsite-server", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        """The TCP port actually bound (useful when asked for port 0)."""
        return int(self._httpd.server_address[1])

    @property
    def host(self) -> str:
        """The loopback address bound (127.0.0.1 unless :func:`serve` was given another)."""
        return str(self._httpd.server_address[0])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/` (or the address bound)."""
        return f"http://{self.host}:{self.port}/"

    def stop(self) -> None:
        """Stop accepting requests and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> SiteServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        self.stop()


def serve(docroot: Path, port: int = 0, host: str = HOST) -> SiteServer:
    """Serve `docroot` on `host`:`port` (0 picks a free port) from a daemon thread; `host` must be an
    address of 127.0.0.0/8."""
    docroot = Path(docroot)
    if not docroot.is_dir():
        raise StageError(f"{docroot} is not a directory: build the local site first (bitextflow-local site build)")
    try:
        if ipaddress.ip_address(host) not in LOOPBACK:
            raise ValueError(host)
    except ValueError:
        raise StageError(f"the local site is served on loopback addresses only (127.0.0.0/8), not on {host!r}") from None
    handler = functools.partial(_SiteRequestHandler, directory=str(docroot))
    try:
        httpd = ThreadingHTTPServer((host, port), handler)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise PortInUse(f"port {port} on {host} is already in use; choose another with --port") from error
        raise
    return SiteServer(httpd)


class SiteServers:
    """Running servers, one per site of a web, all on one port; keyed by their address."""

    def __init__(self, servers: Mapping[str, SiteServer]) -> None:
        self.servers = dict(servers)

    @property
    def port(self) -> int:
        """The TCP port every site is served on."""
        return next(iter(self.servers.values())).port

    def stop(self) -> None:
        """Stop every server; at once, because each shutdown waits up to half a second for its serving loop."""
        with ThreadPoolExecutor(max_workers=max(1, len(self.servers))) as pool:
            list(pool.map(SiteServer.stop, self.servers.values()))

    def __enter__(self) -> SiteServers:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        self.stop()


def serve_sites(docroots: Mapping[str, Path], port: int = 0) -> SiteServers:
    """Serve each docroot on its own loopback address (the mapping's key), all on `port` (0: one that is free
    on every address)."""
    if not docroots:
        raise StageError("no site to serve: build the web first (bitextflow-local site multi)")
    attempts_left = _FREE_PORT_ATTEMPTS if port == 0 else 1
    while True:
        started: dict[str, SiteServer] = {}
        try:
            site_port = port
            for host, docroot in docroots.items():
                started[host] = serve(docroot, site_port, host)
                site_port = started[host].port  # asked for any port, the first site picks it for all
            return SiteServers(started)
        except BaseException as error:
            SiteServers(started).stop()  # never leave the sites started so far running
            attempts_left -= 1
            if not isinstance(error, PortInUse) or attempts_left == 0:
                raise


def serve_forever(docroot: Path, port: int, on_ready: Callable[[SiteServer], None] | None = None) -> None:
    """Serve until SIGINT or SIGTERM, then stop cleanly; for the demo. Must run in the main thread.

    `on_ready` is called once the port is bound, for example to print the URL.
    """
    _serve_until_stopped(lambda: serve(docroot, port), on_ready)


def serve_sites_forever(docroots: Mapping[str, Path], port: int, on_ready: Callable[[SiteServers], None] | None = None) -> None:
    """:func:`serve_forever` for a web of sites (:func:`serve_sites`)."""
    _serve_until_stopped(lambda: serve_sites(docroots, port), on_ready)


Running = TypeVar("Running", SiteServer, SiteServers)


def _serve_until_stopped(start: Callable[[], Running], on_ready: Callable[[Running], None] | None) -> None:
    """Start serving, call `on_ready`, wait for SIGINT or SIGTERM, stop; the signal handlers are restored after."""
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    previous_handlers = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with start() as running:
            if on_ready is not None:
                on_ready(running)
            stop_requested.wait()
    finally:
        for sig, handler in previous_handlers.items():
            signal.signal(sig, handler)
