"""The light URL models of the smart crawl (hashed n-grams, logistic regression): trained in seconds on several sites
and WMT16-like gold pairs, saved and loaded as a version, and trained on during a crawl without touching the loaded
models."""

from __future__ import annotations

import json

import pytest

from bitextflow.config import CrawlConfig
from bitextflow.errors import StageError
from bitextflow.models.url_models import METADATA_FILENAME, load_url_models
from bitextflow.models.url_ngrams import NgramUrlModels, pair_features, train_ngram_models
from bitextflow.models.url_training import train_configured

TOPICS = ["install", "kernel", "network", "printing", "backup", "firewall", "locales", "mirrors", "upgrade", "boot"]


def _site(host: str, layout: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Pages and pairs of a site that marks languages by ``layout`` (``/es/x.html`` or ``x.es.html``)."""
    url = {"folder": "http://{h}/{lang}/{t}.html", "suffix": "http://{h}/doc/{t}.{lang}.html"}[layout]
    pages = [(url.format(h=host, lang=lang, t=topic), lang) for topic in TOPICS for lang in ("en", "es")]
    pairs = [(url.format(h=host, lang="en", t=topic), url.format(h=host, lang="es", t=topic)) for topic in TOPICS]
    return pages, pairs


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[NgramUrlModels, object]:
    folder = tmp_path_factory.mktemp("ngram")
    pages_a, pairs_a = _site("a.test", "folder")
    pages_b, pairs_b = _site("b.test", "suffix")
    gold = [("http://c.test/page_e.htm", "http://c.test/page_f.htm"), ("http://d.test/en/about", "http://d.test/fr/about")]
    models = train_ngram_models(pages_a + pages_b, pairs_a + pairs_b + gold, folder, required_languages=("en", "es"))
    return models, folder


def test_trained_in_seconds_on_several_sites_they_read_a_site_they_never_saw(trained):
    models, folder = trained
    assert models.metadata["kind"] == "ngram" and models.metadata["train_seconds"] < 10
    assert models.metadata["training_data"]["pairs"] == 2 * len(TOPICS) + 2
    spanish, english = "http://unseen.test/es/guide.html", "http://unseen.test/en/guide.html"
    assert models.language_probabilities([spanish, english], "es")[0] > 0.5 > models.language_probabilities([english], "es")[0]
    assert models.language_probabilities([spanish], "de") == [0.0], "a language without training pages"
    translation, unrelated = models.parallel_probabilities([(english, spanish), (english, "http://unseen.test/es/news.html")])
    assert translation > 0.5 > unrelated
    loaded = load_url_models(folder)  # a version folder: url-models.json says which kind
    assert isinstance(loaded, NgramUrlModels)
    assert loaded.parallel_probabilities([(english, spanish)]) == pytest.approx([translation])
    assert json.loads((folder / METADATA_FILENAME).read_text())["languages"] == ["en", "es"]


def test_a_crawl_trains_a_copy_on_the_pairs_it_confirms(trained):
    models, _folder = trained
    # a layout nothing in training resembles: the versions under /site1/ and /site2/
    unseen = [(f"http://new.test/site1/{t}", f"http://new.test/site2/{t}") for t in TOPICS]
    before = models.parallel_probabilities(unseen[5:])
    crawl = models.learning_copy()
    for (a, b), (_other_a, other_b) in zip(unseen[:5], unseen[1:6], strict=False):
        crawl.learn(pages=[(a, "en"), (b, "es")], pairs=[(a, b), (b, a)], not_pairs=[(a, other_b), (other_b, a)])
    after = crawl.parallel_probabilities(unseen[5:])
    assert max(before) < 0.5 < min(after)
    assert crawl.parallel_probabilities([(unseen[6][0], unseen[7][1])])[0] < 0.5, "two pages, not a translation"
    assert crawl.language_probabilities(["http://new.test/site2/other"], "es")[0] > 0.5
    assert models.parallel_probabilities(unseen[5:]) == pytest.approx(before), "the loaded models are not changed"


def test_pair_features_say_what_a_translation_changes():
    features = pair_features("h test en guide html", "h test es guide html")
    assert features["swap=en>es"] == features["swap_aligned"] == features["swap_languages"] == 1
    assert features["differing=2"] == 1
    moved = pair_features("h test en guide html", "h test es news html")  # a language swap, and another page
    assert "swap=en>es" not in moved and moved["differing=4"] == 1
    assert pair_features("h guide html", "h es guide html")["added_language"] == 1  # an unmarked page and its version


def test_training_needs_both_languages_and_pairs():
    with pytest.raises(StageError, match="two languages"):
        train_ngram_models([("http://a/en/x", "en")], [("http://a/en/x", "http://a/es/x")], required_languages=("en", "es"))
    with pytest.raises(StageError, match="parallel URL pairs"):
        train_ngram_models([("http://a/en/x", "en"), ("http://a/es/x", "es")], [])


def test_the_train_step_trains_the_configured_kind_with_the_gold_pairs(tmp_path):
    pages, pairs = _site("a.test", "folder")
    gold = tmp_path / "test.pairs"
    gold.write_text("x\thttp://c.test/page_e.htm\thttp://c.test/page_f.htm\n", encoding="utf-8")
    crawl = CrawlConfig(seeds=["http://a.test/"], url_model_gold_pairs=str(gold))
    metadata = train_configured(pages, pairs, tmp_path / "v1", crawl, ("en", "es"), {"kept": len(pages)})
    assert metadata["kind"] == "ngram" and metadata["training_data"]["pairs"] == len(pairs) + 1
    assert metadata["training_data"]["crawl_log"] == {"kept": len(pages)}
    assert isinstance(load_url_models(tmp_path / "v1"), NgramUrlModels)
    missing = crawl.model_copy(update={"url_model_gold_pairs": str(tmp_path / "none.pairs")})
    with pytest.raises(StageError, match="url_model_gold_pairs"):
        train_configured(pages, pairs, tmp_path / "v2", missing)
