"""A run-tuned domain classifier does not become the newest published one whatever its quality (issue 39, item 13):
below ``domain.training.min_test_macro_f1``, or below the version it replaces on the same test sentences, it is
refused in one line. A small SVM, trained for real; no object store (the decision is a pure function of the metadata)."""

from __future__ import annotations

import pytest

from bitextflow.classify.data import LabelledSentence
from bitextflow.config import load_pair_config
from bitextflow.errors import ConfigError
from bitextflow.stages.train_domain import publication_refusal, sentences_digest, train_domain, with_training
from tests.support import ROOT

CONFIG = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
WORDS = {
    "computing": "kernel package install compile server network",
    "religion": "prayer gospel church faith psalm temple",
    "legal": "court contract statute clause tribunal plaintiff",
    "Other": "weather football recipe holiday garden music",
}


def sentences(noise: bool) -> list[LabelledSentence]:
    """Six sites per label; with ``noise`` every sentence carries another label's words, so nothing can be learnt."""
    labels = list(WORDS)
    return [
        LabelledSentence(
            f"{WORDS[labels[(n + i + site) % 4] if noise else label]} sentence {i} of site {site}", label, f"{label}-{site}", "en"
        )
        for n, label in enumerate(labels)
        for site in range(6)
        for i in range(6)
    ]


def trained(noise: bool) -> dict:
    config = with_training(CONFIG, kind="svm", min_count=1)
    return train_domain(config, None, sentences=sentences(noise), zero_shot=[], publish=False).metadata


def test_a_model_below_the_minimum_is_refused_naming_its_figure_and_the_option():
    metadata = trained(noise=True)
    assert metadata["metrics"]["test"]["macro_f1"] < 0.5, "the noisy labels cannot be learnt"
    refusal = publication_refusal(metadata, 0.5, None)
    assert refusal is not None and refusal.startswith("test macro F1 0.") and "domain.training.min_test_macro_f1 0.5" in refusal
    assert publication_refusal(trained(noise=False), 0.5, None) is None


def test_a_model_below_the_version_it_replaces_on_the_same_test_sentences_is_refused():
    good, bad = trained(noise=False), trained(noise=True)
    previous = dict(good, metrics={"test": {"macro_f1": good["metrics"]["test"]["macro_f1"] + 0.01}})
    worse = dict(good)
    assert publication_refusal(worse, 0.0, previous, "v7") == (
        f"test macro F1 {good['metrics']['test']['macro_f1']:.3f} is below v7's "
        f"{previous['metrics']['test']['macro_f1']:.3f} on the same test sentences"
    )
    assert publication_refusal(good, 0.0, good, "v7") is None, "as good as the version it replaces"
    assert good["test_digest"] != bad["test_digest"]
    elsewhere = dict(previous, test_digest=bad["test_digest"])
    assert publication_refusal(worse, 0.0, elsewhere, "v7") is None, "figures on other sentences do not compare"
    assert publication_refusal(worse, 0.0, {"metrics": {}}, "v1") is None, "a version trained before test digests"


def test_the_digest_names_the_test_sentences_in_any_order():
    test = sentences(noise=False)[:10]
    assert sentences_digest(test) == sentences_digest(test[::-1]) != sentences_digest(test[1:])


def test_a_run_cannot_lower_the_minimum():
    with pytest.raises(ConfigError, match=r"^override 'domain.training.min_test_macro_f1': only the pair's YAML may set this"):
        CONFIG.with_overrides({"domain.training": {"kind": "svm"}}).with_run_overrides({"domain.training.min_test_macro_f1": 0})
