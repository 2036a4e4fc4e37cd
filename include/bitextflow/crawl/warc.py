"""WARC/1.1 output of the crawler: request and response records, gzip per record, rotated by size.

Shards are written to a local temporary file and uploaded whole, so a WARC object in S3 is always a
sequence of complete records; the list of uploaded keys is what the crawl hands to the extract stage.

For checkpoints, :meth:`RotatingWarcWriter.checkpoint` also uploads the shard being written, as far as
it goes, and returns its length; :meth:`RotatingWarcWriter.resume` downloads it again and cuts it
back to that length (a killed crawl may have uploaded more records after the checkpoint: they belong
to pages the resumed crawl fetches again). Every record is its own gzip member, so any record
boundary is a valid end of file.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# httpx hands us decoded bodies; headers describing the wire encoding would make the record lie.
_WIRE_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}


class RotatingWarcWriter:
    """Writes records into numbered shards and calls ``upload(local_path, shard_name)`` for each closed one.

    ``upload`` returns the key (or name) it stored the shard under. ``download(shard_name, local_path)``
    is only needed to resume from a checkpoint. ``info`` fields go into a ``warcinfo`` record at the
    start of every shard.
    """

    def __init__(
        self,
        upload: Callable[[Path, str], str],
        max_bytes: int,
        prefix: str = "crawl",
        download: Callable[[str, Path], None] | None = None,
        info: dict[str, str] | None = None,
    ):
        self._upload = upload
        self._download = download
        self._max_bytes = max_bytes
        self._prefix = prefix
        self._info = info or {}
        self._dir = tempfile.TemporaryDirectory(prefix="bitextflow-warc-")
        self._index = 0
        self._file: io.BufferedWriter | None = None
        self._writer: WARCWriter | None = None
        self.uploaded: list[str] = []

    @property
    def _path(self) -> Path:
        return Path(self._dir.name) / self._shard_name()

    def _open(self) -> WARCWriter:
        if self._writer is None:
            fresh = not self._path.exists()
            self._file = open(self._path, "ab")  # noqa: SIM115 - closed in _close
            self._writer = WARCWriter(self._file, gzip=True, warc_version="1.1")
            if fresh and self._info:
                self._writer.write_record(self._writer.create_warcinfo_record(self._shard_name(), self._info))
        return self._writer

    def _shard_name(self, index: int | None = None) -> str:
        return f"{self._prefix}-{self._index if index is None else index:05d}.warc.gz"

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
        self._file.flush()
        if self._file.tell() >= self._max_bytes:
            self._close()

    def _close(self) -> None:
        if self._file is None:
            return
        self._file.close()
        local = self._path
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

    @property
    def shard_names(self) -> list[str]:
        """Names of every shard written so far, the open one included."""
        return [self._shard_name(i) for i in range(self._index + (1 if self._path.exists() else 0))]

    # -- checkpoints ----------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, Any]:
        """Upload the open shard as far as it goes; the returned state restores the writer here."""
        size = 0
        if self._file is not None:
            self._file.flush()
            size = self._file.tell()
            self._upload(self._path, self._shard_name())
        return {"index": self._index, "bytes": size, "uploaded": list(self.uploaded)}

    def resume(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`checkpoint` state: its uploaded shards, and its open shard cut to length."""
        if self._file is not None:
            raise RuntimeError("resume() must come before the first record")
        self._index = state["index"]
        self.uploaded = list(state["uploaded"])
        if state["bytes"]:
            if self._download is None:
                raise RuntimeError("resuming a partly written shard needs a download function")
            self._download(self._shard_name(), self._path)
            with open(self._path, "r+b") as shard:
                shard.truncate(state["bytes"])
