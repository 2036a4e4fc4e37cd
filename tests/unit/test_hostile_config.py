"""Limits a run's overrides cannot raise past their bounds, added for what a hostile site or override could make the
crawl do in its event loop (docs/security.md)."""

from __future__ import annotations

import pytest

from bitextflow.config import CommonCrawlIndex, load_pair_config
from bitextflow.errors import ConfigError
from tests.support import ROOT

CONFIG = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"crawl.max_sitemaps_per_host": 10**12}, "crawl.max_sitemaps_per_host: Input should be less than or equal to 1000"),
        ({"crawl.max_frontier_per_host": 10**12}, "crawl.max_frontier_per_host: Input should be less than or equal to 10000000"),
        ({"crawl.include_paths": {"*": [f"^/{n}/" for n in range(100_000)]}}, "100,000 patterns; at most 1,000 in include_paths"),
        ({"crawl.exclude_paths": {f"h{n}": ["^/x/"] for n in range(1_001)}}, "1,001 patterns; at most 1,000 in exclude_paths"),
    ],
)
def test_a_run_cannot_raise_the_crawls_new_limits_past_their_bounds(overrides, message) -> None:
    with pytest.raises(ConfigError, match=message) as failure:
        CONFIG.with_run_overrides(overrides)
    assert "\n" not in str(failure.value)


def test_the_index_fetch_backoff_is_bounded() -> None:
    with pytest.raises(ValueError, match="fetch_backoff_seconds\n.*less than or equal to 60"):
        CommonCrawlIndex(crawls=["CC-MAIN-2024-33"], fetch_backoff_seconds=1e9)
