"""The crawl strategies by name (``crawl.strategy``) and the scorer of each; the strategies themselves are
described in :mod:`bitextflow.crawl.scoring`."""

from __future__ import annotations

import logging

from bitextflow.crawl.scoring import BfsScorer, LinkScorer, PairContext, TermsScorer, UrlRulesScorer
from bitextflow.crawl.smart_scorer import SmartScorer, SmartSettings, UrlModels

log = logging.getLogger(__name__)

STRATEGIES = ("bfs", "terms", "url-rules", "smart")


# SmartSettings is frozen, so one default instance is safe to share (ruff sees that only within its own module)
def make_scorer(strategy: str, pair: PairContext, *, other_language_bonus: float = 10.0,
                url_models: UrlModels | None = None, smart: SmartSettings = SmartSettings()) -> LinkScorer:  # noqa: B008  # fmt: skip
    """The scorer of a strategy; ``smart`` without URL models falls back to ``url-rules`` (logged)."""
    if strategy == "bfs":
        return BfsScorer(pair)
    if strategy == "terms":
        return TermsScorer(pair, other_language_bonus)
    if strategy == "url-rules":
        return UrlRulesScorer(pair)
    if strategy == "smart":
        if url_models is not None:
            return SmartScorer(pair, url_models, smart)
        log.warning("strategy smart: no URL models (crawl.url_models); falling back to url-rules")
        return UrlRulesScorer(pair)
    raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
