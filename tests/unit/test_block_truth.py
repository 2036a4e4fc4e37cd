"""The local site's sentence-level truth (bitextflow_local.localsite.block_truth): the judge behind
bench/release_precision.py and the release precision `make demo` prints, on a hand-made site whose answers are known."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bitextflow_local.localsite import Truth
from bitextflow_local.localsite.block_truth import Judge, Verdicts

PAGE = "<html><body>{}</body></html>"
EN = ["Install the package first.", "Then edit the file. Restart the daemon.", "The end of the story."]
ES = ["Instale primero el paquete.", "Luego edite el fichero. Reinicie el demonio.", "El final de la historia."]


@pytest.fixture
def judge(tmp_path: Path) -> Judge:
    for name, blocks in {"a.en.html": EN, "a.es.html": ES, "b.en.html": EN[:2], "b.es.html": ES}.items():
        (tmp_path / name).write_text(PAGE.format("".join(f"<p>{block}</p>" for block in blocks)), encoding="utf-8")
    truth = Truth([{"en": "a.en.html", "es": "a.es.html"}, {"en": "b.en.html", "es": "b.es.html"}], [])
    sentences = {
        "http://h/a.en.html": [
            "Install the package first.",
            "Then edit the file.",
            "Restart the daemon.",
            "The end of the story.",
        ],
        "http://h/a.es.html": ["Instale primero el paquete.", "Luego edite el fichero.", "Reinicie el demonio."],
    }
    return Judge(tmp_path, truth, sentences)


def verdict(judge: Judge, text_a: str, text_b: str, url_a: str = "http://h/a.en.html", url_b: str = "http://h/a.es.html") -> str:
    return judge.verdict(url_a, url_b, text_a, text_b)


def test_each_kind_of_pair_gets_its_verdict(judge: Judge):
    assert verdict(judge, "Install the package first.", "Instale primero el paquete.") == "strict"
    # a 2-1 bead: the English side is two sentences of one block the aligner joined
    assert verdict(judge, "Then edit the file. Restart the daemon.", "Luego edite el fichero.") == "strict"
    assert verdict(judge, "Install the package first.", "El final de la historia.") == "wrong"
    assert verdict(judge, "Install the package first.", "Instale el paquete.", url_b="http://h/b.es.html") == "wrong"
    assert verdict(judge, "Nothing like this is on the page.", "Instale primero el paquete.") == "unlocated"
    # the two b pages have different block counts: blocks do not pair by position
    assert verdict(
        judge, "Install the package first.", "Instale primero el paquete.", "http://h/b.en.html", "http://h/b.es.html"
    ) == ("unjudged_page")


def test_figures_count_precision_and_yield_per_translated_block(judge: Judge):
    pairs = pd.DataFrame(
        {
            "url_a": ["http://h/a.en.html"] * 3,
            "url_b": ["http://h/a.es.html"] * 3,
            "text_a": ["Install the package first.", "Then edit the file.", "The end of the story."],
            "text_b": ["Instale primero el paquete.", "Luego edite el fichero.", "Instale primero el paquete."],
        }
    )
    verdicts = judge.judge(pairs)
    blocks = judge.translated_blocks("en", "es")
    assert blocks == 3  # the a pages; the b pages' block counts differ
    assert judge.translated_blocks("en", "es", crawled={"b.en.html", "b.es.html"}) == 0
    assert judge.translated_blocks("en", "es", pages=r"^/b\.") == 0
    figures = verdicts.figures(blocks)
    assert (figures["precision"], figures["judged"], figures["wrong"]) == (round(2 / 3, 4), 3, 1)
    assert figures["yield"] == 1.0 and figures["correct_yield"] == round(2 / 3, 4)
    assert figures["wrong_examples"] == [("The end of the story.", "Instale primero el paquete.")]
    assert Verdicts().figures(0)["precision"] == 0.0


def test_a_bead_joined_across_a_block_boundary_is_wrong_and_counted_as_crossing(judge: Judge):
    """Issue 40: the English side runs from the end of block 0 into block 1, the Spanish side translates block 1's
    sentence only; the sides share a block, but "Install the package first." has no counterpart on the other side."""
    crossing = ("Install the package first. Then edit the file.", "Luego edite el fichero.")
    assert verdict(judge, *crossing) == "wrong"
    # both sides joined across the same boundary: each sentence has its block on the other side
    assert verdict(judge, "Install the package first. Then edit the file.", "Instale primero el paquete.") == "wrong"
    pairs = pd.DataFrame(
        {
            "url_a": ["http://h/a.en.html"] * 3,
            "url_b": ["http://h/a.es.html"] * 3,
            "text_a": [crossing[0], "Then edit the file. Restart the daemon.", "The end of the story."],
            "text_b": [crossing[1], "Luego edite el fichero.", "Instale primero el paquete."],
        }
    )
    figures = judge.judge(pairs).figures(3, judge.translated_block_keys("en", "es"))
    assert (figures["wrong"], figures["wrong_across_blocks"], figures["cross_block_share"]) == (2, 1, 0.5)
    # one right pair, covering block 1 of the three translated blocks
    assert figures["block_yield"] == round(1 / 3, 4)
