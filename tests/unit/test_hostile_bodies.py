"""Bodies a hostile host serves, decoded by the fetcher's bounded decompressor within bounded time
(docs/security.md, "Crawling the web")."""

from __future__ import annotations

import gzip

from bitextflow.crawl.fetcher import gunzip_bounded
from tests.support import cpu_clock


def test_a_body_of_many_gzip_members_is_inflated_in_linear_time():
    # fed whole, zlib copied what was left of the body at the end of each member: 4 MB of empty members took 6-13 s
    empty = gzip.compress(b"")
    body = empty * (4_000_000 // len(empty)) + gzip.compress(b"the end")
    with cpu_clock() as seconds:
        assert gunzip_bounded(body, 10**6) == b"the end"
    assert seconds() < 2, f"{seconds():.1f} s of CPU"


def test_members_split_across_pieces_and_the_limit_still_hold():
    body = gzip.compress(b"x" * 100_000) + gzip.compress(b"y" * 100_000) + b"trailing garbage"
    assert gunzip_bounded(body, 10**6) == b"x" * 100_000 + b"y" * 100_000
    assert gunzip_bounded(body, 150_000) == b"x" * 100_000 + b"y" * 50_000
