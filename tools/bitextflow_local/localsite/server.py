"""Serve the local site on 127.0.0.1, in a background thread (tests, benchmarks) or in the foreground (demo).

It binds the loopback address only, so the crawl target is never exposed to the network.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType

from bitextflow.errors import StageError

HOST = "127.0.0.1"

# Explicit, so that responses do not depend on the machine's /etc/mime.types.
CONTENT_TYPES: dict[str, str] = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".png": "image/png",
    ".gif": "image/gif",
    ".jpg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".pdf": "application/pdf",
    ".gz": "application/gzip",
}


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
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/`."""
        return f"http://{HOST}:{self.port}/"

    def stop(self) -> None:
        """Stop accepting requests and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> SiteServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        self.stop()


def serve(docroot: Path, port: int = 0) -> SiteServer:
    """Serve `docroot` on 127.0.0.1:`port` (0 picks a free port) from a daemon thread."""
    docroot = Path(docroot)
    if not docroot.is_dir():
        raise StageError(f"{docroot} is not a directory: build the local site first (bitextflow-local site build)")
    handler = functools.partial(_SiteRequestHandler, directory=str(docroot))
    try:
        httpd = ThreadingHTTPServer((HOST, port), handler)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise StageError(f"port {port} on {HOST} is already in use; choose another with --port") from error
        raise
    return SiteServer(httpd)


def serve_forever(docroot: Path, port: int, on_ready: Callable[[SiteServer], None] | None = None) -> None:
    """Serve until SIGINT or SIGTERM, then stop cleanly; for the demo. Must run in the main thread.

    `on_ready` is called once the port is bound, for example to print the URL.
    """
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    previous_handlers = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with serve(docroot, port) as server:
            if on_ready is not None:
                on_ready(server)
            stop_requested.wait()
    finally:
        for sig, handler in previous_handlers.items():
            signal.signal(sig, handler)
