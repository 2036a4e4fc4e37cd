"""Incremental runs: unchanged page pairs carry their released sentence pairs over; the rest is re-aligned.

The tests of this module against real services; those that need none are tests/unit/test_incremental.py's.
"""

from __future__ import annotations


def test_a_second_run_of_an_unchanged_site_carries_everything_over(store, site) -> None:
    from bitextflow.config import load_pair_config
    from bitextflow.stages.base import RunContext
    from bitextflow.stages.registry import run_context, run_pipeline
    from tests.support import ROOT

    # The English and Spanish Debian Reference only (about 35 pages), crawled completely both times.
    overrides = {
        "crawl.seeds": [site.base_url], "crawl.max_pages": 100, "crawl.include_paths": {"*": ["^/$", r"^/reference/.*\.(en|es)\.html$"]},
        "gate.min_sentence_pairs": 1, "gate.max_volume_drop": None,
    }  # fmt: skip
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(overrides)

    def run(run_id: str, incremental: bool) -> tuple[RunContext, dict]:
        ctx = run_context(config.model_copy(update={"incremental": incremental}), store, run_id)
        outputs = run_pipeline(ctx)["release"]
        assert isinstance(outputs, dict)
        return ctx, outputs

    _, first = run("test_incremental_first", incremental=False)
    ctx, second = run("test_incremental_second", incremental=True)
    (changes_key,) = [key for key in store.list_keys(ctx.key("align_documents", "")) if key.endswith(".changes.json")]
    changes = store.get_json(changes_key)  # the site's partition's
    assert changes["previous_release"]["version"] == first["version"]
    assert changes["pages"]["changed"]["count"] == 0 and changes["pages"]["unchanged"]["count"] > 0
    assert changes["pages"]["new"]["count"] == changes["pages"]["gone"]["count"] == 0
    assert changes["document_pairs"]["aligned"] == 0 and changes["document_pairs"]["carried"] > 10
    assert changes["sentence_pairs_carried"] == first["sentence_pairs"] == second["sentence_pairs"]
