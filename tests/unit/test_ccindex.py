"""The Common Crawl index source without a store: the site rule, primary languages, the admission point, shard
plans, the config and the stages a pair's runs include."""

from __future__ import annotations

import pyarrow as pa
import pytest

from bitextflow.catalog.ccindex import RECORDS, SITE_COUNTS, Admission, SiteRule, primary_languages, selected_sites
from bitextflow.config import load_pair_config
from bitextflow.counts import StageCounts
from bitextflow.errors import ConfigError
from bitextflow.stages.cc_fetch import plan_digest
from bitextflow.stages.registry import REGISTRY
from tests.support import ROOT

EXAMPLE = ROOT / "include" / "pairs" / "examples" / "commoncrawl" / "en-es.yaml"


def site_counts(rows: list[tuple[str, int, int, int, str]]) -> pa.Table:
    """(domain, captures, source, target, crawl) rows of one partition."""
    columns = list(zip(*rows, strict=True))
    return pa.table(
        {"partition": [0] * len(rows), "domain": columns[0], "captures": columns[1], "source": columns[2],
         "target": columns[3], "crawl": columns[4]},
        schema=SITE_COUNTS,
    )  # fmt: skip


def test_a_site_needs_both_languages_in_count_and_share():
    counts = StageCounts("cc_select")
    chosen = selected_sites(
        site_counts([
            ("both.org", 20, 8, 6, "A"),
            ("few.org", 20, 15, 2, "A"),
            ("thin.org", 200, 190, 5, "A"),
            ("split.org", 10, 5, 0, "A"),  # its Spanish pages are in another index file of the crawl
            ("split.org", 10, 0, 5, "A"),
        ]),
        SiteRule(min_captures=3, min_share=0.05),
        counts,
    )  # fmt: skip
    assert chosen["domain"].to_pylist() == ["both.org", "split.org"]
    assert chosen.column_names == ["partition", "domain", "captures", "source", "target"]
    assert counts.to_dict() == {
        "stage": "cc_select", "in": 4, "kept": 2, "dropped": {"below_min_captures": 1, "below_min_share": 1},
    }  # fmt: skip


def test_a_recapture_in_another_crawl_is_not_a_new_page():
    chosen = selected_sites(
        site_counts([("again.org", 4, 2, 2, "A"), ("again.org", 4, 2, 2, "B")]), SiteRule(3, 0.0), StageCounts("s")
    )
    assert chosen.num_rows == 0, "two crawls of the same 2 + 2 pages are not 4 + 4"


def test_the_primary_language_is_the_first_of_content_languages():
    languages = pa.array(["spa", "eng,spa", "spa,eng", "fra", None, "engl"])
    assert primary_languages(languages, {"eng": "en", "spa": "es"}).to_pylist() == ["es", "en", "es", None, None, None]


def records(*rows: tuple[str, str, str]) -> pa.Table:
    """(url, domain, language) rows, each its own record of one WARC file."""
    return pa.table(
        {"partition": [0] * len(rows), "url": [r[0] for r in rows], "domain": [r[1] for r in rows],
         "language": [r[2] for r in rows], "crawl": ["A"] * len(rows), "warc_filename": ["w.warc.gz"] * len(rows),
         "warc_record_offset": list(range(len(rows))), "warc_record_length": [1] * len(rows)},
        schema=RECORDS,
    )  # fmt: skip


def test_admission_drops_recaptures_and_caps_each_site_and_language_in_index_order():
    counts = StageCounts("cc_fetch")
    admission = Admission(cap=2, counts=counts)
    first = records(
        ("http://a.org/en/1", "a.org", "en"), ("http://a.org/en/2", "a.org", "en"), ("http://a.org/en/3", "a.org", "en")
    )
    second = records(
        ("http://a.org/en/1", "a.org", "en"), ("http://a.org/es/1", "a.org", "es"), ("http://b.org/en/1", "b.org", "en")
    )
    admitted = [record["url"] for batch in (first, second) for record in admission.admitted(batch)]
    assert admitted == ["http://a.org/en/1", "http://a.org/en/2", "http://a.org/es/1", "http://b.org/en/1"]
    assert counts.items_in == 6 and dict(counts.dropped) == {"site_language_cap": 1, "same_url_captured_before": 1}


def test_a_shard_plan_names_its_records_in_order():
    one, two = (dict(warc_filename="w", warc_record_offset=offset, warc_record_length=9) for offset in (0, 9))
    assert plan_digest([one, two]) == plan_digest([dict(one), dict(two)]) != plan_digest([two, one])


def test_an_index_pair_runs_the_index_stages_instead_of_the_crawl():
    config = load_pair_config(EXAMPLE)
    names = [stage.name for stage in REGISTRY.run_stages(config)]
    assert names[:5] == ["cc_sites", "cc_select", "cc_records", "cc_fetch", "extract"] and "crawl" not in names
    assert REGISTRY.get("extract").reads(config) == "cc_fetch"
    shipped = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    assert REGISTRY.get("extract").reads(shipped) == "crawl"
    assert not any(name.startswith("cc_") for name in (stage.name for stage in REGISTRY.run_stages(shipped)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"crawl.seeds": ["http://example.org/"]}, "crawl.index is set too"),
        ({"crawl.warcs": ["warcs/"]}, "crawl.warcs and crawl.index are both set"),
        ({"crawl.train_url_models": True}, "crawl.train_url_models learns from a crawl's log"),
        ({"crawl.index.crawls": []}, "crawl.index.crawls"),
    ],
)
def test_index_settings_that_cannot_work_are_refused_in_one_line(change, message):
    with pytest.raises(ConfigError, match=message):
        load_pair_config(EXAMPLE).with_overrides(change)


def test_a_run_may_tune_the_selection_but_not_point_it_at_another_bucket():
    config = load_pair_config(EXAMPLE)
    assert config.with_run_overrides({"crawl.index.min_captures": 3}).crawl.index.min_captures == 3
    for name in ("crawl.index.table", "crawl.index.warc_root", "crawl.index"):
        with pytest.raises(ConfigError, match="only the pair's YAML may set this"):
            config.with_run_overrides({name: "s3://elsewhere/"})
