"""Asynchronous HTTP fetching with hard limits (httpx.AsyncClient).

One :class:`Fetcher` per crawl: connect/read/total timeouts, a body cap enforced while streaming (on
the decoded bytes, with a bounded decompressor, so a gzip bomb inflates no further than the cap), a
content-type allow-list checked on the headers before any body is read, retries with exponential
backoff on 5xx answers and timeouts, robots.txt fetching, and the private-address guard on every
connection. It never follows redirects itself: the crawler turns a redirect into a new frontier entry,
so the target goes through dedup, scope, robots and politeness like any other URL.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from dataclasses import dataclass, field

import httpx

from bitextflow.config import CrawlConfig
from bitextflow.crawl.guard import AddressGuard, AddressRefused, guarded_transport
from bitextflow.policy.robots import ROBOTS_MAX_BYTES

_CHUNK = 65_536
#: What :meth:`Fetcher.fetch_site_file` gives when no answer came: status 0, which robots.txt reads as unreachable
#: (RFC 9309: a full disallow) and TDMRep as a reservation (:mod:`bitextflow.policy.tdmrep`).
NO_ANSWER = 0


@dataclass
class FetchResult:
    """The outcome of one URL: a response (``status`` > 0) or an ``error`` naming why there is none."""

    url: str
    status: int = 0
    reason: str = ""
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    truncated: bool = False
    mime: str = ""
    content_type: str = ""
    error: str = ""
    detail: str = ""
    attempts: int = 1
    seconds: float = 0.0

    @property
    def location(self) -> str:
        return next((v for k, v in self.response_headers if k.lower() == "location"), "")


class _Refused(Exception):
    def __init__(self, error: str, detail: str = "", status: int = 0):
        super().__init__(detail or error)
        self.error = error
        self.detail = detail
        self.status = status


class _Decoder:
    """Content-Encoding decoding that never produces more than it is asked for.

    A gzip body may hold several members one after the other (RFC 1952 2.2); each is decoded in turn, as
    gzip(1) and browsers do. Bytes after the last member that do not start a new one are ignored, also as
    gzip(1) does ("trailing garbage ignored").
    """

    _GZIP_MAGIC = b"\x1f\x8b"

    def __init__(self, encoding: str):
        encoding = encoding.strip().lower()
        self._gzip = encoding in ("gzip", "x-gzip")
        if encoding in ("", "identity"):
            self._zlib = None
        elif self._gzip or encoding == "deflate":
            self._zlib = zlib.decompressobj(47 if self._gzip else 15)
            self._raw_fallback = encoding == "deflate"
        else:
            raise _Refused("unsupported_encoding", f"Content-Encoding {encoding!r}")
        self._started = False
        self._next_member = False
        self._finished = False

    #: bytes handed to zlib at a time: at the end of each member zlib copies what is left of its input
    #: (``unused_data``), so a body fed whole cost its length per member (4 MB of empty members: 13 s), a piece its own
    _PIECE = 16_384

    def feed(self, chunk: bytes, limit: int) -> bytes:
        if self._zlib is None:
            return chunk[:limit]
        if len(chunk) <= self._PIECE:
            return self._feed(chunk, limit)
        view = memoryview(chunk)
        out = bytearray()
        for start in range(0, len(chunk), self._PIECE):
            if len(out) >= limit or self._finished:
                break
            out += self._feed(view[start : start + self._PIECE], limit - len(out))
        return bytes(out)

    def _feed(self, chunk: bytes | memoryview, limit: int) -> bytes:
        out = bytearray()
        data: bytes | memoryview = chunk
        while data and len(out) < limit and not self._finished:
            try:
                produced = self._zlib.decompress(data, limit - len(out))
            except zlib.error:
                if self._raw_fallback and not self._started:  # "deflate" sent as a raw stream (old IIS)
                    self._zlib = zlib.decompressobj(-15)
                    self._raw_fallback = False
                    continue
                if self._next_member:  # not a member after all: trailing garbage
                    self._finished = True
                    break
                raise _Refused("decoding_error", "corrupt compressed body") from None
            out += produced
            self._started = True
            self._next_member = self._next_member and not produced
            data = self._zlib.unconsumed_tail
            if not data and self._zlib.eof:
                data = self._zlib.unused_data
                if self._gzip and data[:2] == self._GZIP_MAGIC[: len(data)]:
                    self._zlib = zlib.decompressobj(47)  # the next member (maybe split across chunks)
                    self._next_member = True
                else:
                    self._finished = True
        return bytes(out)


class DecodingError(ValueError):
    """Bytes that are not the gzip stream they claim to be."""


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    """``data`` inflated (all its gzip members) to at most ``limit`` bytes, as the fetcher inflates bodies: a file
    served gzipped without a ``Content-Encoding`` (``sitemap.xml.gz``) is no larger a risk than a gzipped body."""
    try:
        return _Decoder("gzip").feed(data, limit)
    except _Refused as refused:
        raise DecodingError(refused.detail) from None


def _mime(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


class Fetcher:
    """GET with limits; see the module docstring."""

    def __init__(self, config: CrawlConfig, guard: AddressGuard, transport: httpx.AsyncBaseTransport | None = None):
        self.config = config
        self.guard = guard
        limits = httpx.Limits(max_connections=config.concurrency, max_keepalive_connections=config.concurrency)
        timeout = httpx.Timeout(
            connect=config.connect_timeout_seconds,
            read=config.read_timeout_seconds,
            write=config.read_timeout_seconds,
            pool=config.timeout_seconds,
        )
        self.client = httpx.AsyncClient(
            transport=transport or guarded_transport(guard, limits),
            timeout=timeout,
            follow_redirects=False,
            max_redirects=config.max_redirects,
            headers={"User-Agent": config.user_agent, "Accept-Encoding": "gzip, deflate", "Accept": "text/html,*/*;q=0.8"},
            trust_env=False,
        )
        self._allowed_types = {t.lower() for t in config.content_types}

    async def close(self) -> None:
        await self.client.aclose()

    def _type_allowed(self, mime: str) -> bool:
        # no Content-Type at all: nothing to judge by; the extract stage sniffs the body
        return not self._allowed_types or not mime or mime in self._allowed_types

    async def _once(self, url: str, max_bytes: int, check_type: bool, follow: bool = False) -> FetchResult:
        result = FetchResult(url)
        async with asyncio.timeout(self.config.timeout_seconds):
            async with self.client.stream("GET", url, follow_redirects=follow) as response:
                result.status = response.status_code
                result.reason = response.reason_phrase
                result.request_headers = list(response.request.headers.multi_items())
                result.response_headers = list(response.headers.multi_items())
                result.content_type = response.headers.get("content-type", "")
                result.mime = _mime(result.content_type)
                if check_type and 200 <= result.status < 300 and not self._type_allowed(result.mime):
                    raise _Refused("content_type_refused", result.mime or "no Content-Type", result.status)
                try:
                    decoder = _Decoder(response.headers.get("content-encoding", ""))
                except _Refused as refused:
                    refused.status = result.status
                    raise
                body = bytearray()
                async for chunk in response.aiter_raw(_CHUNK):
                    body += decoder.feed(chunk, max_bytes + 1 - len(body))
                    if len(body) > max_bytes:
                        del body[max_bytes:]
                        result.truncated = True
                        break
                result.body = bytes(body)
        return result

    async def fetch(
        self, url: str, delay: float = 0.0, *, check_type: bool = True, max_bytes: int | None = None, follow: bool = False
    ) -> FetchResult:
        """GET ``url``; 5xx answers and timeouts are retried ``max_retries`` times with exponential backoff
        (never sooner than the host's politeness ``delay``). Errors are returned, not raised. ``check_type=False``
        reads any content type (a sitemap is XML, text or gzip whatever ``crawl.content_types`` allows pages);
        ``max_bytes`` caps the body (default ``crawl.max_body_bytes``), ``follow`` follows redirects (site files)."""
        started = time.monotonic()
        attempts = self.config.max_retries + 1
        result = FetchResult(url)
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(max(delay, self.config.retry_backoff_seconds * 2 ** (attempt - 1)))
            retry = False
            try:
                result = await self._once(url, max_bytes or self.config.max_body_bytes, check_type=check_type, follow=follow)
                retry = result.status >= 500
            except _Refused as refused:
                result = FetchResult(url, error=refused.error, detail=refused.detail, status=refused.status)
            except AddressRefused as refused:
                result = FetchResult(url, error="private_address", detail=str(refused))
            except (TimeoutError, httpx.TimeoutException) as exc:
                result = FetchResult(url, error="timeout", detail=type(exc).__name__)
                retry = True
            except httpx.ConnectError as exc:
                result = FetchResult(url, error="connect_error", detail=str(exc)[:200])
            except (httpx.RemoteProtocolError, httpx.LocalProtocolError, httpx.DecodingError) as exc:
                result = FetchResult(url, error="protocol_error", detail=str(exc)[:200])
            except httpx.InvalidURL as exc:
                result = FetchResult(url, error="invalid_url", detail=str(exc)[:200])
            except (httpx.HTTPError, OSError) as exc:
                result = FetchResult(url, error="fetch_error", detail=f"{type(exc).__name__}: {exc}"[:200])
            result.attempts = attempt + 1
            if not retry:
                break
        result.seconds = time.monotonic() - started
        return result

    async def fetch_site_file(self, origin: str, path: str, max_bytes: int = ROBOTS_MAX_BYTES) -> bytes | int:
        """A site-wide file such as ``/.well-known/tdmrep.json``, redirects followed, 5xx answers and timeouts
        retried as :meth:`fetch` retries pages: the body of a 2xx answer (its first ``max_bytes``), the status of any
        other, :data:`NO_ANSWER` when none came (refused address, unreachable, timeout)."""
        result = await self.fetch(f"{origin}{path}", check_type=False, max_bytes=max_bytes, follow=True)
        if result.error and not result.status:
            return NO_ANSWER
        return result.body if 200 <= result.status < 300 and not result.error else result.status

    async def fetch_robots(self, origin: str) -> tuple[str | None, str]:
        """robots.txt of an origin: ``(text, outcome)``. RFC 9309: a 4xx means no rules (``""``); a 5xx,
        a timeout or an unreachable server means full disallow (``None``)."""
        url = f"{origin}/robots.txt"
        try:
            result = await self._once(url, ROBOTS_MAX_BYTES, check_type=False, follow=True)
        except AddressRefused:
            return None, "private_address"
        except (_Refused, TimeoutError, httpx.HTTPError, OSError) as exc:
            return None, f"robots_unavailable ({type(exc).__name__})"
        if 200 <= result.status < 300:
            return result.body.decode("utf-8", errors="replace"), "ok"
        if 400 <= result.status < 500:
            return "", f"no robots.txt ({result.status})"
        return None, f"robots_unavailable ({result.status})"
