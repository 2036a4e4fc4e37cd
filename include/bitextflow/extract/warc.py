"""Reading HTTP responses out of WARC files with FastWARC, tolerant of damaged files.

Records are streamed one at a time (memory does not grow with the file). A damaged region (bad gzip
member, garbage between records, a cut-off file) is skipped: the reader looks for the next record
start (the next gzip member of a ``.warc.gz``, the next ``WARC/1.`` line of a plain WARC) and goes on,
so one bad byte never loses the rest of the shard. Every skip is counted under a named reason.

The source is a path or a binary stream. The extract task reads straight from S3 with
:meth:`bitextflow.storage.ObjectStore.open_read` (ranged GETs through a ``WARC_READ_BUFFER`` buffer,
no local copy); that stream is seekable, so skipping a damaged region is a seek forward (a new GET).
A stream that cannot seek is read too, but reading stops at its first damaged region.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import IO

from fastwarc.warc import ArchiveIterator, WarcRecordType

from bitextflow.counts import StageCounts
from bitextflow.extract.model import WarcResponse

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b\x08"
WARC_MAGIC = b"WARC/1."
_SCAN_CHUNK = 1 << 20
# Read buffer of a WARC streamed from S3: large enough that a ranged GET is not re-opened per record,
# small enough that a shard's reading memory does not depend on its size.
WARC_READ_BUFFER = 1 << 20


def _find(stream: IO[bytes], needle: bytes, start: int) -> int | None:
    """Offset of the first ``needle`` at or after ``start``, or None; reads in chunks."""
    stream.seek(start)
    position, carry = start, b""
    while True:
        chunk = stream.read(_SCAN_CHUNK)
        if not chunk:
            return None
        data = carry + chunk
        found = data.find(needle)
        if found >= 0:
            return position - len(carry) + found
        carry = data[-(len(needle) - 1) :]
        position += len(chunk)


def _header(record, name: str) -> str:
    return record.headers.get(name) or ""


def iter_responses(source: str | os.PathLike | IO[bytes], counts: StageCounts, max_page_bytes: int) -> Iterator[WarcResponse]:
    """HTTP response records of a WARC file (gzip or plain), in file order.

    ``counts`` gets one item per response record (kept later by the caller, or dropped here when the
    record is cut off) and one per damaged region skipped (``warc_corrupt``). Payloads longer than
    ``max_page_bytes`` are cut there and marked ``truncated="max_page_bytes"``.
    """
    own = not hasattr(source, "read")
    stream: IO[bytes] = open(source, "rb") if own else source  # type: ignore[arg-type]  # noqa: SIM115
    try:
        seekable = stream.seekable()
        start = stream.tell() if seekable else 0
        head = stream.read(2) if seekable else b""
        if seekable:
            stream.seek(start)
        magic = GZIP_MAGIC if head == GZIP_MAGIC[:2] else WARC_MAGIC
        last_offset = -1
        while True:
            try:
                for record in ArchiveIterator(stream, record_types=WarcRecordType.response, parse_http=True):
                    offset = record.stream_pos
                    if offset <= last_offset:  # a resync can land on a record already read
                        continue
                    last_offset = offset
                    response = _response(record, offset, counts, max_page_bytes)
                    if response is not None:
                        yield response
                return
            except OSError as exc:
                counts.seen()
                counts.drop("warc_corrupt")
                resume_from = max(last_offset, start) + 1
                log.warning("damaged WARC data after offset %d (%s); looking for the next record", resume_from - 1, exc)
                if not seekable:
                    return
                found = _find(stream, magic, resume_from)
                if found is None:
                    return
                start = found
                stream.seek(found)
    finally:
        if own:
            stream.close()


def _response(record, offset: int, counts: StageCounts, max_page_bytes: int) -> WarcResponse | None:
    expected = record.content_length
    body = record.reader.read(max_page_bytes + 1)  # an OSError here is a damaged region: counted by the caller
    counts.seen()
    truncated = _header(record, "WARC-Truncated")
    if len(body) > max_page_bytes:
        body, truncated = body[:max_page_bytes], "max_page_bytes"
    elif len(body) < expected:
        counts.drop("warc_record_cut_off")  # the file ends (or is damaged) inside this record
        return None
    http = record.http_headers
    status = (http.status_code if http is not None else None) or 0
    content_type = (record.http_content_type or "").strip().lower()
    return WarcResponse(
        url=_header(record, "WARC-Target-URI"),
        body=body,
        status=int(status),
        mime=content_type.split(";")[0].strip(),
        http_charset=record.http_charset,
        record_id=record.record_id or "",
        offset=offset,
        date=_header(record, "WARC-Date"),
        truncated=truncated,
        headers=tuple(http.astuples()) if http is not None else (),
    )
