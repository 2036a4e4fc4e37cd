"""Releases against a real S3 server (SeaweedFS): numbering, idempotent retries, crash safety, file contents.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_release.py's.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pandas as pd
import pytest
from lxml import etree

from bitextflow.config import load_pair_config
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.release.build import MonolingualCorpus, ReleaseExtras, build_release
from bitextflow.release.datasheet import read_licence
from bitextflow.release.formats import validate_tmx
from bitextflow.release.report import crawl_profile
from bitextflow_local.services.seaweed import SeaweedServer
from tests.support import ROOT

PAIR = "en-es"
GATE_REPORT = {"success": True, "failures": [], "evaluated": 17, "statistics": {"success_percent": 100.0}}


def pairs(n: int = 25, tag: str = "") -> pd.DataFrame:
    """Sentence pairs, some with the characters that break naive writers (tabs, newlines, controls, markup)."""
    text_a = [f"Article {i}{tag}: the parties agree & sign <here>." for i in range(n)]
    text_b = [f"Artículo {i}{tag}: las partes acuerdan y firman «aquí»." for i in range(n)]
    text_a[0] = "A tab\there and a newline\nthere."
    text_b[1] = "Control \x01\x07 characters\r\nand a line separator\u2028too."
    return pd.DataFrame(
        {
            "url_a": [f"https://{'law' if i % 3 else 'gov'}.example/en/doc{i // 4}" for i in range(n)],
            "url_b": [f"https://{'law' if i % 3 else 'gov'}.example/es/doc{i // 4}" for i in range(n)],
            "lang_a": "en",
            "lang_b": "es",
            "text_a": text_a,
            "text_b": text_b,
            "alignment_score": [round(0.4 + 0.02 * i, 3) for i in range(n)],
            "rule_tags": "",
            "domain_relevance": [round((i % 7) / 7, 3) for i in range(n)],
            "domain_terms": "contract;contrato",
            "pair_hash": [f"{i % (n - 2):08x}" for i in range(n)],  # two repeated pairs
        }
    )


def counts() -> list[StageCounts]:
    align = StageCounts("align", items_in=40, kept=25)
    align.drop("low_alignment_score", 15)
    return [StageCounts("crawl", items_in=12, kept=12), align]


def test_seaweed_server_stops_its_process_group(tmp_path: Path) -> None:
    server = SeaweedServer(tmp_path / "seaweed", buckets=["probe-bucket"])
    client = server.client()
    client.put_object(Bucket="probe-bucket", Key="k", Body=b"v")
    assert client.get_object(Bucket="probe-bucket", Key="k")["Body"].read() == b"v"
    server.stop()
    assert not server.running
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.ports["s3"]), timeout=1):
        pass
    server.stop()  # a second stop is harmless


def extras(df: pd.DataFrame) -> ReleaseExtras:
    """What a pipeline run adds to the pairs: document pairs (one never yielding a pair), sentences, a crawl log."""
    documents = df[["url_a", "url_b"]].drop_duplicates()
    document_pairs = pd.DataFrame(
        {
            "doc_id_a": [f"a{i}" for i in range(len(documents) + 1)],
            "doc_id_b": [f"b{i}" for i in range(len(documents) + 1)],
            "url_a": [*documents.url_a, "https://gov.example/en/empty"],
            "url_b": [*documents.url_b, "https://gov.example/es/empty"],
            "method": "url",
            "score": 1.0,
            "partition": 3,
        }
    )
    sentences = pd.DataFrame(
        {
            "doc_id": ["d1", "d1", "d1", "d2", "d2"],
            "url": "u",
            "language": ["en", "en", "en", "es", "de"],
            "paragraph_index": [0, 0, 1, 0, 0],
            "paragraph_type": "text",
            "sentence_index": [0, 1, 0, 0, 0],
            "text": ["Install the package.", "install the package!", "A second\nline.", "Instale el paquete.", "Ein Satz."],
            "duplicate": False,
        }
    )
    crawl_log = [
        {"url": url, "outcome": "fetched", "time": float(i), "detected_language": url.split("/")[3]}
        for i, url in enumerate([*document_pairs.url_a, *document_pairs.url_b, "https://law.example/en/news"])
    ]
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    # in two chunks, as two site partitions come
    return ReleaseExtras(document_pairs, [sentences.iloc[:3], sentences.iloc[3:]], crawl_log, config)


def test_monolingual_corpus_keeps_each_sentence_once_and_counts_the_rest(tmp_path: Path) -> None:
    corpus = MonolingualCorpus(tmp_path, ["en", "es"])
    for chunk in extras(pairs()).sentences:
        corpus.add(chunk)
    corpus.close()
    assert (tmp_path / "mono.en.txt").read_text() == "Install the package.\nA second line.\n"
    assert (tmp_path / "mono.es.txt").read_text() == "Instale el paquete.\n"
    assert corpus.lines == {"en": 2, "es": 1}
    assert corpus.counts.to_dict() == {
        "stage": "release_monolingual",
        "in": 5,
        "kept": 3,
        "dropped": {"duplicate_sentence": 1, "other_language": 1},
    }


def test_crawl_efficiency_counts_paired_pages_in_download_order() -> None:
    log = [
        {"url": "http://b/", "outcome": "fetched", "time": 2.0, "detected_language": "es"},
        {"url": "http://a/", "outcome": "fetched", "time": 1.0},
        {"url": "http://c/", "outcome": "robots_disallowed", "time": 1.5},
        {"url": "http://d/", "outcome": "fetched", "time": 3.0, "detected_language": "es"},
    ]
    crawl = crawl_profile(log, {"http://a/", "http://d/"})
    assert crawl.curve().tolist() == [1, 1, 2]
    assert crawl.languages == {"es": 2, "(unknown)": 1} and crawl.fetched_per_host == {"a": 1, "b": 1, "d": 1}


def test_tmx_is_checked_against_the_tmx_1_4_dtd(tmp_path: Path) -> None:
    good = build_release(tmp_path / "good", PAIR, 1, pairs(), [], "r", None)
    assert validate_tmx(next(p for p in good if p.suffix == ".tmx")) == 25
    missing_lang = tmp_path / "bad.tmx"
    text = (tmp_path / "good" / f"{PAIR}.tmx").read_text()
    missing_lang.write_text(text.replace(' xml:lang="es"', "", 1))
    with pytest.raises(StageError, match=r"bad.tmx:\d+: not valid TMX 1.4 .*xml:lang"):
        validate_tmx(missing_lang)
    truncated = tmp_path / "cut.tmx"
    truncated.write_text(text[: len(text) // 2])
    with pytest.raises(StageError, match="cut.tmx: not well-formed XML"):
        validate_tmx(truncated)


def test_licences_are_read_from_debian_copyright_files(tmp_path: Path) -> None:
    dep5 = tmp_path / "dep5"
    dep5.write_text("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
                    "Files: *\nCopyright: 2007 Osamu Aoki\nLicense: GPL-2+\n")  # fmt: skip
    free = tmp_path / "free"
    free.write_text("The Guide is copyright 1996 Bruce Perens. It is\nlicensed under the terms of the GNU GPL, version 2.\n")
    assert read_licence(dep5) == ("GPL-2+", "2007 Osamu Aoki")
    assert read_licence(free) == (
        "It is licensed under the terms of the GNU GPL, version 2.",
        "The Guide is copyright 1996 Bruce Perens",
    )


def test_host_names_that_read_as_formulas_do_not_fail_the_report(tmp_path: Path) -> None:
    """A ``$`` starts mathtext in a matplotlib label: a host such as ``a$^{$.example`` failed the release."""
    df = pairs(12)
    df["url_a"] = [url.replace("https://law.example", "https://a$^{$.example") for url in df["url_a"]]
    paths = build_release(
        tmp_path,
        PAIR,
        1,
        df,
        counts(),
        "run-dollar",
        GATE_REPORT,
        ReleaseExtras(crawl_log=[{"url": df["url_a"][0], "outcome": "fetched"}]),
    )
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert tmp_path / "report.html" in paths and "a$^{$.example" in report


def test_the_ilsp_fc_export_carries_control_characters_from_the_web_as_replacements() -> None:
    from bitextflow.extract.export import document_xml

    row = {
        "title": "Install\x0b", "encoding": "utf-8", "date": "", "url": "http://s/a\x01.html", "language": "en",
        "language_set": [], "keywords": "apt\x02", "relevance": 0.0, "relevance_terms": 0, "description": "",
        "warc_key": "crawl/crawl-00000.warc.gz", "warc_offset": 0, "warc_record_id": "<urn:uuid:1\x1f>", "paragraphs": [],
    }  # fmt: skip
    root = etree.fromstring(document_xml(row))
    ns = {"c": "http://www.xces.org/schema/2003"}
    assert root.findtext(".//c:imprint/c:eAddress", namespaces=ns) == "http://s/a\ufffd.html"
    assert root.find(".//c:annotation[@type='warc']", ns).get("record") == "<urn:uuid:1\ufffd>"


def test_the_report_shows_pairs_per_score_band_and_says_when_a_score_was_not_computed(tmp_path: Path) -> None:
    """An empty bicleaner_score histogram was drawn when nothing was scored, and no pair was ever shown."""
    df = pairs(12).assign(bicleaner_score=None)
    df["alignment_score"] = [i / 12 for i in range(12)]
    extras = ReleaseExtras(crawl_log=[{"url": df["url_a"][0], "outcome": "fetched"}])
    build_release(tmp_path, PAIR, 1, df, counts(), "run-bands", GATE_REPORT, extras)
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    tree = etree.fromstring(report.encode(), etree.HTMLParser())
    assert "Score: bicleaner_score" not in {img.get("alt") for img in tree.iter("img")}
    assert "Not computed for this release: no pair has a bicleaner_score" in report
    (table,) = [t for t in tree.iter("table") if t.findtext("tr/th[2]") == "alignment_score"]
    rows = [[cell.text for cell in row.findall("td")] for row in table.findall("tr")[1:]]
    assert [row[0] for row in rows] == ["lowest"] * 3 + ["median"] * 3 + ["highest"] * 3
    assert rows[0][1:] == ["0.000", df.text_a[0], df.text_b[0]] and rows[-3][1:] == ["0.917", df.text_a[11], df.text_b[11]]


def test_seen_hashes_say_which_are_new_in_order_across_chunks_and_at_the_ends_of_the_range() -> None:
    import random

    from bitextflow.hashing import SeenHashes

    rng = random.Random(3)
    seen, reference = SeenHashes(), set()
    for _ in range(300):  # enough chunks for the runs to merge several times
        chunk = [
            rng.getrandbits(64) if rng.random() < 0.7 else rng.choice([0, 1, 2**63, 2**64 - 1]) for _ in range(rng.randint(0, 50))
        ]
        expected = []
        for value in chunk:
            expected.append(value not in reference)
            reference.add(value)
        assert seen.add(chunk).tolist() == expected
    assert len(seen) == len(reference)


# A word of each script a pair's language may be written in beyond DejaVu's (Latin, Cyrillic, Greek), and the language.
SCRIPT_SAMPLES = {
    "ar": "الحزم", "hy": "փաթեթ", "bn": "প্যাকেজ", "iu": "ᐃᓄᒃᑎᑐᑦ", "chr": "ᏣᎳᎩ", "hi": "पैकेज", "am": "ጥቅል", "ka": "პაკეტი",
    "gu": "પેકેજ", "pa": "ਪੈਕੇਜ", "zh": "软件包", "he": "חבילה", "ja": "パッケージ", "km": "កញ្ចប់", "kn": "ಪ್ಯಾಕೇಜ್",
    "ko": "패키지", "lo": "ຊຸດ", "ml": "പാക്കേജ്", "my": "ပက်ကေ့ဂျ်", "sat": "ᱥᱟᱱᱛᱟᱲᱤ", "or": "ପ୍ୟାକେଜ୍",
    "si": "පැකේජය", "syr": "ܠܫܢܐ", "ta": "தொகுப்பு", "te": "ప్యాకేజీ", "dv": "ދިވެހި", "th": "แพ็กเกจ", "bo": "ཐུམ་སྒྲིལ",
}  # fmt: skip


def test_the_plots_draw_every_script_a_pair_may_be_written_in() -> None:
    """With Debian's Noto fonts (`make setup`), a domain term of any of these languages is drawn, not a box."""
    import warnings

    import matplotlib.pyplot as plt

    from bitextflow.release import report
    from bitextflow.release.fonts import SCRIPT_FONTS, installed, plot_fonts
    from bitextflow.text.scripts import likely_script

    assert {likely_script(language) for language in SCRIPT_SAMPLES} <= SCRIPT_FONTS.keys()
    missing = sorted({family for family in SCRIPT_FONTS.values() if not installed(family)})
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (`make setup` installs fonts-noto-core and fonts-noto-cjk)")
    for language, word in SCRIPT_SAMPLES.items():
        with warnings.catch_warnings(record=True) as caught, plt.rc_context({"font.family": plot_fonts(["en", language])}):
            warnings.simplefilter("always")
            report._bar("terms", {word: 3, "package": 2}, "sentence pairs")
        assert not [str(w.message) for w in caught if "missing from font" in str(w.message)], language


def test_the_report_of_a_japanese_release_draws_every_glyph_and_counts_words(tmp_path: Path) -> None:
    """matplotlib drew Japanese domain terms as boxes ("Glyph 12531 missing from font(s) DejaVu Sans"), and the
    statistics counted a Japanese sentence as one whitespace token."""
    import warnings

    from matplotlib import font_manager

    try:
        font_manager.findfont("Noto Sans CJK JP", fallback_to_default=False)
    except ValueError:
        pytest.skip("Noto Sans CJK JP is not installed (`make setup` installs Debian's fonts-noto-cjk)")
    df = pairs(12).assign(lang_b="ja", domain_terms="contract;契約;パッケージ")
    df["text_b"] = [f"第{i}条：両当事者は「ここ」に同意し署名します。" for i in range(12)]
    extras = ReleaseExtras(crawl_log=[{"url": df["url_a"][0], "outcome": "fetched"}])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_release(tmp_path, "en-ja", 1, df, counts(), "run-ja", GATE_REPORT, extras)
    assert not [str(w.message) for w in caught if "missing from font" in str(w.message)]
    stats = json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))
    assert stats["side_b"]["tokens"] >= 12 * 8  # ICU words (第 0 条 両 当事者 は ここ に 同意 し 署名 します), not 12
