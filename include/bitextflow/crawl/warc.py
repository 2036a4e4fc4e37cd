"""WARC/1.1 output of the crawler: request and response records, gzip per record, rotated by size.

Shards are written to a local temporary file and uploaded whole, so a WARC object in S3 is always
complete; the list of uploaded keys is what the crawl hands to the extract stage.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# httpx hands us decoded bodies; headers describing the wire encoding would make the record lie.
_WIRE_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}


class RotatingWarcWriter:
    """Writes records into numbered shards and calls ``upload(local_path, shard_name)`` for each closed one."""

    def __init__(self, upload: Callable[[Path, str], str], max_bytes: int, prefix: str = "crawl"):
        self._upload = upload
        self._max_bytes = max_bytes
        self._prefix = prefix
        self._dir = tempfile.TemporaryDirectory(prefix="bitextflow-warc-")
        self._index = 0
        self._file: io.BufferedWriter | None = None
        self._writer: WARCWriter | None = None
        self.uploaded: list[str] = []

    def _open(self) -> WARCWriter:
        if self._writer is None:
            path = Path(self._dir.name) / self._shard_name()
            self._file = open(path, "wb")  # noqa: SIM115 - closed in _close
            self._writer = WARCWriter(self._file, gzip=True, warc_version="1.1")
        return self._writer

    def _shard_name(self) -> str:
        return f"{self._prefix}-{self._index:05d}.warc.gz"

    def write_exchange(
        self,
        url: str,
        request_headers: list[tuple[str, str]],
        status: int,
        reason: str,
        response_headers: list[tuple[str, str]],
        body: bytes,
        truncated: bool = False,
    ) -> None:
        """One fetched URL: a response record and the request that produced it, linked by WARC-Concurrent-To."""
        writer = self._open()
        path = url.split("/", 3)[3] if url.count("/") >= 3 else ""
        request = writer.create_warc_record(
            url,
            "request",
            http_headers=StatusAndHeaders(f"GET /{path} HTTP/1.1", request_headers, is_http_request=True),
        )
        headers = [(k, v) for k, v in response_headers if k.lower() not in _WIRE_HEADERS]
        headers.append(("Content-Length", str(len(body))))
        warc_headers = {"WARC-Truncated": "length"} if truncated else None
        response = writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=StatusAndHeaders(f"{status} {reason}", headers, protocol="HTTP/1.1"),
            warc_headers_dict=warc_headers,
        )
        request.rec_headers.add_header("WARC-Concurrent-To", response.rec_headers.get_header("WARC-Record-ID"))
        writer.write_record(response)
        writer.write_record(request)
        assert self._file is not None
        if self._file.tell() >= self._max_bytes:
            self._close()

    def _close(self) -> None:
        if self._file is None:
            return
        self._file.close()
        local = Path(self._file.name)
        self.uploaded.append(self._upload(local, self._shard_name()))
        local.unlink()
        self._file = None
        self._writer = None
        self._index += 1

    def close(self) -> list[str]:
        """Upload the open shard; returns the keys of all shards, in order."""
        self._close()
        self._dir.cleanup()
        return self.uploaded
