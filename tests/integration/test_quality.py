"""The gates: pass clean data, and each kind of bad data fails the expectation meant for it, in a partition's suite
or in the run's.

The tests of this module against real services; those that need none are tests/unit/test_quality.py's.
"""

from __future__ import annotations

import pytest

from bitextflow import records
from bitextflow.errors import GateFailed


def test_a_shard_with_the_wrong_language_on_one_side_stops_the_release(store, site) -> None:
    """Issue 7 acceptance: corrupt one classified shard (English on the Spanish side); the gate stops the run.
    Then a fault only the release files show (broken domain distributions): the release gate stops it."""
    from bitextflow.catalog.releases import list_releases
    from bitextflow.config import load_pair_config
    from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline
    from bitextflow.storage.tables import read_table, write_table
    from tests.support import ROOT

    overrides = {
        "crawl.seeds": [site.base_url],
        "crawl.max_pages": 60,
        "gate.min_sentence_pairs": 1,
        "gate.max_volume_drop": None,
    }
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(overrides)
    ctx = run_context(config, store, "test_corrupt_shard")
    outputs = run_pipeline(ctx, until="gate")["classify"]
    shards = sorted(outputs, key=lambda key: len(read_table(store, key)))
    original = read_table(store, shards[-1])
    corrupted = original.assign(text_b=original["text_a"])
    write_table(store, shards[-1], corrupted, records.CLASSIFIED_SENTENCE_PAIRS)
    before = list_releases(store, "en-es")

    with pytest.raises(GateFailed, match=r"expect_column_values_to_be_between\(other_language_share_b\): 1 unexpected"):
        REGISTRY.run(ctx, "gate", shards)
    assert list_releases(store, "en-es") == before
    assert store.get_json(ctx.key("gate", "sentence_pairs.report.json"))["success"] is False

    # Its text restored but three domain distributions broken, the shard passes that gate; the release gate stops it.
    broken = original.copy()
    broken.loc[broken.index[:3], "domain_probs_b"] = '{"software": 0.4}'
    write_table(store, shards[-1], broken, records.CLASSIFIED_SENTENCE_PAIRS)
    gated = REGISTRY.run(ctx, "gate", shards)
    with pytest.raises(
        GateFailed, match=r"expect_column_values_to_be_null\(domain_probs_b_problem\): 3 unexpected.*adds up to 0.4000"
    ):
        REGISTRY.run(ctx, "release", gated)
    assert list_releases(store, "en-es") == before
    assert store.get_json(ctx.key("gate", "release_files.report.json"))["success"] is True
    assert store.get_json(ctx.key("gate", "release_pairs.report.json"))["success"] is False
    assert "en-es.jsonl" in {key.rsplit("/", 1)[-1] for key in store.list_keys(ctx.key("gate", "rejected_release/"))}
