"""A release built from a crawl holds no page whose owner opted out: a tiny bilingual site on 127.0.0.1 whose owner
refuses GPTBot one page pair (robots.txt) and reserves text and data mining on another (TDMRep ``<meta>``), crawled and
run through every stage to a release on the real S3 server; the released TSV, TMX, JSONL and monolingual documents are
read back (every document line valid against the published schema), and the datasheet's publication guards count what
was set aside. (Takedowns and personal data in a release:
tests/integration/test_publishing_guards.py; the policy's decisions: tests/unit/test_optout_policy.py.)"""

from __future__ import annotations

import gzip
import json

from jsonschema import Draft202012Validator

from bitextflow.catalog.releases import list_releases, release_prefix
from bitextflow.config import load_pair_config
from bitextflow.release.documents import document_schema, documents_file
from bitextflow.stages.registry import run_context, run_pipeline
from tests.support import ROOT, QuietHandler, serving
from tests.support.texts import DOCUMENTATION

ROBOTS = b"User-agent: GPTBot\nDisallow: /en/gpt/\nDisallow: /es/gpt/\n"
TDM_META = '<meta name="tdm-reservation" content="1">'

#: page -> (its sentence pairs, the markup of its English head): what the owner said is in the page's name
PAGES = {
    "free": (DOCUMENTATION[0:6], ""), "gpt/refused": (DOCUMENTATION[6:12], ""), "tdm/reserved": (DOCUMENTATION[12:18], TDM_META),
}  # fmt: skip
TITLES = {"en": "Software manual", "es": "Manual del software"}


def page(language: str, name: str) -> bytes:
    sentences, head = PAGES[name]
    paragraphs = "".join(f"<p>{pair[0 if language == 'en' else 1]}</p>" for pair in sentences)
    other = "es" if language == "en" else "en"
    return (
        f'<html lang="{language}"><head><title>{TITLES[language]}: {name}</title>{head if language == "en" else ""}</head>'
        f'<body><a href="/{other}/{name}.html" hreflang="{other}">{other}</a><h1>{TITLES[language]}</h1>{paragraphs}</body></html>'
    ).encode()


class BilingualSite(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        links = "".join(f'<a href="/{lang}/{name}.html">{lang} {name}</a> ' for lang in ("en", "es") for name in PAGES)
        if self.path == "/robots.txt":
            body, kind = ROBOTS, "text/plain"
        elif self.path == "/":
            body, kind = f"<html><body>{links}</body></html>".encode(), "text/html"
        elif (parts := self.path.strip("/").removesuffix(".html").split("/", 1)) and len(parts) == 2 and parts[1] in PAGES:
            body, kind = page(parts[0], parts[1]), "text/html; charset=utf-8"
        else:
            self.send_error(404)
            return
        self.answer(200, body, kind)


def test_no_page_whose_owner_opted_out_reaches_the_release(store) -> None:
    with serving(BilingualSite) as host:
        overrides = {
            "crawl.seeds": [f"http://{host}/"], "crawl.allow_private_addresses": ["127.0.0.1"], "crawl.max_pages": 20,
            "gate.min_sentence_pairs": 1, "gate.max_volume_drop": None, "release.record_in_registry": False,
        }  # fmt: skip
        config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(overrides)
        ctx = run_context(config, store, "manual__optout_release")
        run_pipeline(ctx)
    (release,) = [info for info in list_releases(store, "en-es") if info.run_id == ctx.run_id]
    prefix = release_prefix("en-es", release.version)
    files = {name: store.get_bytes(prefix + name).decode("utf-8") for name in ("en-es.tsv", "en-es.tmx", "en-es.jsonl")}
    for name, text in files.items():
        assert f"http://{host}/en/free.html" in text, f"{name}: the page nobody refused is released"
        for refused in ("gpt/refused", "tdm/reserved"):
            assert f"/en/{refused}.html" not in text and f"/es/{refused}.html" not in text, f"{name} holds {refused}"
        for english, spanish in [*PAGES["gpt/refused"][0], *PAGES["tdm/reserved"][0]]:
            assert english not in text and spanish not in text, f"{name} holds a sentence of a page whose owner opted out"
    assert release.sentence_pairs >= 4
    counts = store.get_json(ctx.key("crawl", "crawl.counts.json"))["dropped"]
    assert counts["optout_robots"] == 2 and counts["optout_tdmrep"] == 1
    datasheet = store.get_bytes(prefix + "datasheet.md").decode("utf-8")
    assert "`optout_robots`" in datasheet and "`optout_tdmrep`" in datasheet
    validator = Draft202012Validator(document_schema())
    for language in ("en", "es"):
        lines = [json.loads(line) for line in gzip.decompress(store.get_bytes(prefix + documents_file(language))).splitlines()]
        for line in lines:
            validator.validate(line)
            assert line["language"] == language and line["optouts"]["robots"] == "allowed"
        urls = {line["url"] for line in lines}
        assert f"http://{host}/{language}/free.html" in urls, f"documents.{language}: the page nobody refused is released"
        # robots.txt refuses both GPT pages; the TDMRep reservation is in the English page's markup only
        reserved = {url for url in urls if "/gpt/" in url or url.endswith("/en/tdm/reserved.html")}
        assert not reserved, f"documents.{language} holds a page its owner opted out: {reserved}"
        (free,) = [line for line in lines if line["url"].endswith("/free.html")]
        assert free["document_pairs"], "the free page's document pair is named"
    stats = json.loads(store.get_bytes(prefix + "stats.json"))
    assert stats["documents"]["en"]["documents"] >= 1 and "monolingual en documents" in datasheet
