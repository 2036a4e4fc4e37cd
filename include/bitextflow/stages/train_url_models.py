"""Side step ``train_url_models``: this run's crawl log and document pairs -> the smart crawl's URL models.

Runs beside the corpus branch when ``crawl.train_url_models`` is on; it publishes the pair's next
version ``models/<pair>/url/v<N>/``, which the next run's ``smart`` crawl picks up.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bitextflow import records
from bitextflow.catalog.checkpoints import crawl_log
from bitextflow.catalog.models import publish_url_models
from bitextflow.config import PairConfig
from bitextflow.models import url_training, url_training_data
from bitextflow.stages.base import Stage
from bitextflow.storage.tables import read_tables

log = logging.getLogger(__name__)


class TrainUrlModels(Stage):
    name = "train_url_models"
    after = "align_documents"
    partitioning = "run"
    help = "train the smart crawl's URL models on one run; publish a version"

    @classmethod
    def enabled(cls, config: PairConfig) -> bool:
        return config.crawl.train_url_models

    def run(self, document_pairs_keys: Sequence[str]) -> str:
        """Returns the published version's URI."""
        ctx = self.ctx
        lines = crawl_log(ctx.store, ctx.config.pair, ctx.run_id)
        pages, counts = url_training_data.pages_from_crawl_log(lines)
        pairs = read_tables(ctx.store, list(document_pairs_keys), records.DOCUMENT_PAIRS)
        log.info("train_url_models: crawl log %s", counts.summary())
        with tempfile.TemporaryDirectory(prefix="url-models-") as tmp:
            url_training.train_configured(pages, list(zip(pairs["url_a"], pairs["url_b"], strict=True)), Path(tmp),
                                          ctx.config.crawl, required_languages=(ctx.config.source, ctx.config.target),
                                          crawl_log_counts=counts.to_dict())  # fmt: skip
            uri = publish_url_models(ctx.store, ctx.config.pair, Path(tmp))
        # a pointer, not a counts.json: this side task may end after the release, which aggregates those
        ctx.store.put_json(ctx.key("train_url_models", "url-models.json"), {"uri": uri, "crawl_log": counts.to_dict()})
        return uri
