"""Tiny web sites written by a test and served on 127.0.0.1 (the local site's server), and a crawl of them with no S3."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bitextflow.config import CrawlConfig
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.scoring import PairContext
from bitextflow.crawl.warc import RotatingWarcWriter

ENGLISH = "This page is written in plain English so that the language identifier has enough words to read it well."
SPANISH = "Esta página está escrita en castellano sencillo para que el identificador de idioma tenga palabras suficientes."


def page(title: str, body: str = "", head: str = "", text: str = ENGLISH) -> str:
    """An HTML page with ``title``, ``head`` markup, a paragraph of ``text`` and ``body`` markup."""
    return f"<html><head><title>{title}</title>{head}</head><body><h1>{title}</h1><p>{text}</p>{body}</body></html>"


def write_site(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write ``files`` (site path -> text or bytes) under ``root``; returns ``root``."""
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def crawl(base_url: str, pair: PairContext | None = None, **options) -> Crawler:
    """Crawl from ``base_url`` (no delay, loopback allowed, WARC shards kept in memory) and return the crawler."""
    config = CrawlConfig(**{"seeds": [base_url], "delay_seconds": 0, "allow_private_addresses": ["127.0.0.1"], **options})
    crawler = Crawler(config, RotatingWarcWriter(lambda path, name: name, 10**9), pair)
    crawler.crawl()
    return crawler


def fetched_paths(crawler: Crawler, base_url: str) -> list[str]:
    """Site paths of the URLs the crawl fetched, in order."""
    return [entry.url.removeprefix(base_url) for entry in crawler.log if entry.outcome == "fetched"]
