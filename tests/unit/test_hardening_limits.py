"""What a run's overrides may set is bounded: sizes that every fetch buffers, and URL path regexes that run inside the
crawl's event loop (docs/security.md). A real HTTP server on 127.0.0.1 plays the site; nothing is mocked."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from bitextflow.config import CrawlConfig, load_pair_config
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import ConfigError
from tests.support import ROOT, QuietHandler, cpu_clock, serving

CONFIG = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
#: 27 letters and a mismatch: Python's re tries every way to split them between the two `+` (about 20 s here).
HOSTILE_PATH = "/docs/" + "a" * 27 + "!"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"crawl.max_body_bytes": 10**12}, r"field crawl.max_body_bytes: Input should be less than or equal to 100000000"),
        ({"extract.max_page_bytes": 10**12}, r"field extract.max_page_bytes: Input should be less than or equal to 50000000"),
        ({"crawl.concurrency": 10_000}, r"field crawl.concurrency: Input should be less than or equal to 256"),
        ({"crawl.timeout_seconds": 1e9}, r"field crawl.timeout_seconds: Input should be less than or equal to 3600"),
        (
            {"crawl.concurrency": 256, "crawl.max_body_bytes": 50_000_000},
            r"concurrency 256 x max_body_bytes 50000000 may buffer more than 4,000,000,000 bytes at once; lower one of them",
        ),
    ],
)
def test_a_run_cannot_raise_a_limit_past_its_bound(overrides, message) -> None:
    with pytest.raises(ConfigError, match=message) as failure:
        CONFIG.with_run_overrides(overrides)
    assert "\n" not in str(failure.value)


def test_the_shipped_pair_configs_are_within_every_bound() -> None:
    for path in sorted((ROOT / "include" / "pairs").glob("*.yaml")):
        load_pair_config(path)


@pytest.mark.parametrize("pattern", [r"^/(\w+)/\1$", r"^/(?!private)", r"(?<=/)docs"])
def test_a_path_regex_re2_cannot_take_is_one_line_naming_the_option_and_the_fix(pattern) -> None:
    with pytest.raises(ConfigError) as failure:
        CONFIG.with_run_overrides({"crawl.include_paths": {"*": [pattern]}})
    message = str(failure.value)
    assert message.startswith("overrides ['crawl.include_paths']: field crawl.include_paths: ")
    assert f"pattern {pattern!r} is not a regex RE2 takes" in message and "without backreferences and lookaround" in message
    assert "\n" not in message


class _Site(QuietHandler):
    protocol_version = "HTTP/1.1"
    requests: list[str] = []

    def do_GET(self) -> None:
        _Site.requests.append(self.path)
        links = "".join(f'<p><a href="{path}">{path}</a></p>' for path in ("/docs/aaaa", HOSTILE_PATH))
        body = f"<html><body>{links}</body></html>".encode() if self.path != "/robots.txt" else b""
        self.answer(200 if body else 404, body)


@contextlib.contextmanager
def _serve() -> Iterator[int]:
    _Site.requests = []
    with serving(_Site) as host:
        yield int(host.rsplit(":", 1)[1])


def test_a_backtracking_path_regex_does_not_stall_the_crawl() -> None:
    """``(a+)+$`` is a valid regex, and an override may set it: RE2 matches a link's path in linear time."""
    with _serve() as port:
        config = CrawlConfig(
            seeds=[f"http://127.0.0.1:{port}/"], allow_private_addresses=[f"127.0.0.1:{port}"], delay_seconds=0,
            strategy="bfs", scout_pages=0, timeout_seconds=5, include_paths={"*": ["^/$", "^/docs/(a+)+$"]},
        )  # fmt: skip
        crawler = Crawler(config, RotatingWarcWriter(lambda path, name: name, 10**9))
        with cpu_clock() as seconds:
            crawler.crawl()
    assert seconds() < 5, f"the crawl took {seconds():.1f} s of CPU: the path regex backtracked"
    assert "/docs/aaaa" in _Site.requests and HOSTILE_PATH not in _Site.requests
