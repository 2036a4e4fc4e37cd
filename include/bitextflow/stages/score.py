"""Stage ``score``: hard rules on every sentence pair and, with ``score.use_bicleaner``, bifixer,
bicleaner-hardrules and bicleaner-ai in their own environment (an :class:`ExternalStep`).

In one process (the CLI) :meth:`Score.run` does it all; the DAG runs :meth:`Score.prepare`, the
external step and :meth:`Score.finish` as three tasks per shard, the middle one in the bicleaner
environment (locally) or the bicleaner image (a pod). Whether the pair has that step depends on its
config alone; ``if-installed`` without the environment or the model scores with the hard rules only,
decided when the task runs.
"""

from __future__ import annotations

import logging
from typing import Any

from bitextflow import records
from bitextflow.catalog.models import publish_bicleaner_model
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.score import bicleaner, hard_rule_violations
from bitextflow.settings import bicleaner_python
from bitextflow.stages.base import ExternalStep, Resources, Stage, shard_name
from bitextflow.storage.layout import SENTENCE_PAIR_SHARDS
from bitextflow.storage.tables import read_table, write_table
from bitextflow.text.comparison import pair_hash

log = logging.getLogger(__name__)

# Where docker/bicleaner.Dockerfile puts the scoring script and the pair's model.
POD_COMMAND = ("python", "/opt/bitextflow/score_pairs.py")
POD_MODEL_DIR = "/opt/bitextflow/model"


class Score(Stage):
    name = "score"
    after = "align_sentences"
    outputs = SENTENCE_PAIR_SHARDS
    partitioning = "shard"
    resources = Resources(concurrency=4)
    help = "hard rules and, with score.use_bicleaner, bifixer + bicleaner-ai scores"

    @classmethod
    def external_step(cls, config: PairConfig) -> ExternalStep | None:
        if config.score.use_bicleaner == "no":
            return None
        return ExternalStep(
            task_id="bicleaner",
            prepare_task_id="score_rules",
            script=bicleaner.SCORE_SCRIPT,
            python=bicleaner_python(),
            image=config.score.bicleaner_image,
            image_setting="score.bicleaner_image",
            image_command=POD_COMMAND,
            image_model_dir=POD_MODEL_DIR,
        )

    def run(self, sentence_pairs_key: str) -> str:
        job = self.prepare(sentence_pairs_key)
        if "arguments" in job:
            bicleaner.run_scoring(job["arguments"])
        return self.finish(job)

    def _bicleaner_model(self, model_dir: str | None) -> str | None:
        """The model folder as the scorer sees it, or None to score with the hard rules only."""
        config = self.ctx.config
        use = config.score.use_bicleaner
        if use == "no":
            return None
        if model_dir is not None:  # a pod's image brings its environment and model
            return model_dir
        if use == "if-installed":
            problems = bicleaner.missing_parts(config.pair, config.score.bicleaner_model)
            for problem in problems:
                log.warning("%s: score.use_bicleaner is if-installed, scoring with the hard rules only: %s", config.pair, problem)
            if problems:
                return None
        local_model = bicleaner.require_available(config.pair, config.score.bicleaner_model)
        publish_bicleaner_model(self.ctx.store, config.pair, local_model)
        return str(local_model)

    def prepare(self, sentence_pairs_key: str, model_dir: str | None = None) -> dict[str, Any]:
        """Our hard rules on every pair; with bicleaner, the passing pairs go to the store as its input TSV.

        Returns the job of the shard: ``shard``, ``rules_key`` and, with bicleaner, ``output_key`` and the
        ``arguments`` of ``score_pairs.py`` (presigned URLs: the bicleaner environment needs no credentials).
        ``model_dir`` is the model folder as the scorer sees it (a pod's image), by default the local one.
        """
        ctx = self.ctx
        shard = shard_name(sentence_pairs_key)
        frame = read_table(ctx.store, sentence_pairs_key)
        frame["rule_tags"] = [
            ";".join(hard_rule_violations(a, b, ctx.config.score)) for a, b in zip(frame["text_a"], frame["text_b"], strict=True)
        ]
        job: dict[str, Any] = {
            "shard": shard,
            "rules_key": write_table(ctx.store, ctx.key("score", f"{shard}.rules.parquet"), frame, records.SENTENCE_PAIRS),
        }
        model = self._bicleaner_model(model_dir)
        if model is None:
            return job
        passing = frame[frame["rule_tags"] == ""]
        input_key = ctx.store.put_bytes(
            ctx.key("score", f"{shard}.bicleaner-in.tsv"),
            bicleaner.pairs_tsv(list(zip(passing["text_a"], passing["text_b"], strict=True))).encode(),
        )
        job["output_key"] = ctx.key("score", f"{shard}.bicleaner-out.tsv")
        job["arguments"] = bicleaner.score_arguments(
            model,
            ctx.config.source,
            ctx.config.target,
            ctx.store.presigned_url(input_key),
            ctx.store.presigned_url(job["output_key"], "put"),
        )
        return job

    def finish(self, job: dict[str, Any]) -> str:
        """Passing pairs go on; the others are kept aside under ``score/<shard>.rejected``, counted by reason.

        With bicleaner: texts become bifixer's (and the pair's hash is taken again from them, so the gate
        de-duplicates what is released), bicleaner-hardrules rejections are counted as
        ``hardrules:<rule>`` and pairs under ``score.bicleaner_threshold`` as ``bicleaner_below_threshold``;
        every scored pair keeps its ``bicleaner_score`` (kept and rejected files alike: the release report
        plots the distribution).
        """
        ctx = self.ctx
        shard = job["shard"]
        frame = read_table(ctx.store, job["rules_key"])
        counts = StageCounts("score")
        counts.seen(len(frame))
        for rule_list in frame.loc[frame["rule_tags"] != "", "rule_tags"]:
            for tag in rule_list.split(";"):
                counts.drop(tag)
        frame["bicleaner_score"] = None
        if "output_key" in job:
            self._apply_bicleaner(frame, job, counts)
        rejected = frame[frame["rule_tags"] != ""]
        kept = frame[frame["rule_tags"] == ""]
        counts.keep(len(kept))
        write_table(ctx.store, ctx.key("score", f"{shard}.rejected.parquet"), rejected, records.SENTENCE_PAIRS)
        key = write_table(ctx.store, ctx.key("score", f"{shard}.parquet"), kept, records.SENTENCE_PAIRS)
        ctx.write_counts("score", shard, counts)
        return key

    def _apply_bicleaner(self, frame: Any, job: dict[str, Any], counts: StageCounts) -> None:
        ctx = self.ctx
        passing = frame.index[frame["rule_tags"] == ""]
        rows = bicleaner.read_scores(ctx.store.get_bytes(job["output_key"]).decode("utf-8"))
        if len(rows) != len(passing):
            raise StageError(
                f"{ctx.store.uri(job['output_key'])} has {len(rows)} scored pairs for {len(passing)} sent; rerun the score step"
            )
        fixed_a, fixed_b, hardrules_tags, scores = (
            (list(column) for column in zip(*rows, strict=True)) if rows else ([], [], [], [])
        )
        frame.loc[passing, "text_a"], frame.loc[passing, "text_b"] = fixed_a, fixed_b
        frame.loc[passing, "pair_hash"] = [pair_hash(a, b) for a, b in zip(fixed_a, fixed_b, strict=True)]
        frame.loc[passing, "bicleaner_score"] = scores
        threshold = ctx.config.score.bicleaner_threshold
        for index, tag, score in zip(passing, hardrules_tags, scores, strict=True):
            if tag != "keep":
                frame.loc[index, "rule_tags"] = f"hardrules:{bicleaner.first_hardrule(tag)}"
                counts.drop(frame.loc[index, "rule_tags"])
            elif score < threshold:
                frame.loc[index, "rule_tags"] = "bicleaner_below_threshold"
                counts.drop("bicleaner_below_threshold")
