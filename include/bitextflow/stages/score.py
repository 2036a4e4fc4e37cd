"""Stage ``score``: hard rules on every sentence pair; with ``score.pair_scorer: margin``, the calibrated ratio margin of
the pair's sentence vectors (:mod:`bitextflow.score.margin`: the run's vectors, which the pairs carry from the ``embed``
stage; pairs without them are embedded here, the encoder loaded once per task); with ``score.use_bicleaner``, bifixer,
bicleaner-hardrules and bicleaner-ai in their own environment (an :class:`ExternalStep`).

In one process (the CLI) :meth:`Score.run` does it all; the DAG runs :meth:`Score.prepare`, the
external step and :meth:`Score.finish` as three tasks per shard, the middle one in the bicleaner
environment (locally) or the bicleaner image (a pod). Whether the pair has that step depends on its
config alone; ``if-installed`` without the environment or the model scores with the hard rules only,
decided when the task runs.

The job between the tasks (XCom) holds storage keys only. The scorer reads and writes S3 through
presigned URLs, signed by :meth:`Score.external_call` when the task that runs it starts, for as long as
that task may run: a task that starts late or retries signs again, and no URL shows in the UI.
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta
from typing import Any

from bitextflow import records
from bitextflow.catalog.models import publish_bicleaner_model
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.models.vectors import pair_vectors
from bitextflow.score import bicleaner, hard_rule_violations
from bitextflow.score.margin import E5_SMALL_CALIBRATIONS, MarginScorer
from bitextflow.score.pair_calibrations import cached_calibrations
from bitextflow.stages.base import ExternalCall, ExternalStep, Resources, Stage, shard_name
from bitextflow.stages.embed import RUNTIME_METADATA, configured_encoder
from bitextflow.storage.layout import SENTENCE_PAIR_SHARDS
from bitextflow.storage.tables import read_table, read_table_and_metadata, write_table
from bitextflow.text.comparison import pair_hash

log = logging.getLogger(__name__)

# Where docker/bicleaner.Dockerfile puts the scoring script and the pair's model.
POD_COMMAND = ("python", "/opt/bitextflow/score_pairs.py")
POD_MODEL_DIR = "/opt/bitextflow/model"
# How long the scorer may run when its task sets no execution_timeout (the CLI): as long as the pair DAG's.
DEFAULT_SCORING_TIMEOUT = timedelta(hours=6)
# The URLs outlive the task's timeout by this much: clock skew between worker and store, the closing PUT.
URL_MARGIN = timedelta(minutes=15)
# S3 (SigV4) refuses presigned URLs that would live longer.
MAX_URL_LIFETIME = timedelta(days=7)


def url_lifetime(timeout: timedelta | None) -> int:
    """Seconds the presigned URLs of a scoring task that may run ``timeout`` (None: the default) live."""
    lifetime = (timeout or DEFAULT_SCORING_TIMEOUT) + URL_MARGIN
    if lifetime > MAX_URL_LIFETIME:
        raise StageError(
            f"the bicleaner task's execution_timeout of {timeout} needs presigned S3 URLs that live {lifetime}, longer "
            f"than S3's {MAX_URL_LIFETIME.days} days; set it to at most {MAX_URL_LIFETIME - URL_MARGIN}"
        )
    return int(lifetime.total_seconds())


class Score(Stage):
    name = "score"
    after = "align_sentences"
    outputs = SENTENCE_PAIR_SHARDS
    partitioning = "shard"
    resources = Resources(concurrency=4)
    help = "hard rules and, with score.pair_scorer / score.use_bicleaner, margin / bifixer + bicleaner-ai scores"

    @classmethod
    def external_step(cls, config: PairConfig) -> ExternalStep | None:
        if config.score.use_bicleaner == "no":
            return None
        return ExternalStep(
            task_id="bicleaner",
            prepare_task_id="score_rules",
            image=config.score.bicleaner_image,
            image_setting="score.bicleaner_image",
            image_command=POD_COMMAND,
            image_model_dir=POD_MODEL_DIR,
        )

    @functools.cached_property
    def margin_scorer(self) -> MarginScorer | None:
        """The margin scorer of ``score.pair_scorer: margin`` (None: no pair scorer); its encoder loads only for pairs that
        come without vectors."""
        config = self.ctx.config
        if config.score.pair_scorer != "margin":
            return None
        # a pair's own calibrations (bitextflow-local prepare) where it has them, en-es's for the other runtimes
        calibrations = E5_SMALL_CALIBRATIONS | cached_calibrations(config.pair)
        return MarginScorer(functools.partial(configured_encoder, config), calibrations)

    @functools.cached_property
    def _warned(self) -> set[str]:
        """The warnings this stage gave: each once, since a stage scores many shards."""
        return set()

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning(message)

    def run(self, sentence_pairs_key: str) -> str:
        job = self.prepare(sentence_pairs_key)
        self.run_external(job, None)
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
        if publish_bicleaner_model(self.ctx.store, config.pair, local_model) is None:
            log.info("%s: scoring with the downloaded bicleaner-ai model %s, not uploaded", config.pair, local_model)
        return str(local_model)

    def prepare(self, sentence_pairs_key: str, model_dir: str | None = None) -> dict[str, Any]:
        """Our hard rules on every pair, then the margin scorer's score of every pair and its threshold on the pairs
        that pass the rules (``margin_below_threshold``); with bicleaner, the passing pairs go to the store as its input
        TSV.

        Returns the job of the shard: ``shard``, ``rules_key`` and, with bicleaner, the scorer's ``input_key``,
        ``output_key``, ``model``, ``source`` and ``target``: keys, never URLs (:meth:`external_call` signs them).
        ``model_dir`` is the model folder as the scorer sees it (a pod's image), by default the local one.
        """
        ctx = self.ctx
        shard = shard_name(sentence_pairs_key)
        frame, metadata = read_table_and_metadata(ctx.store, sentence_pairs_key)
        frame["rule_tags"] = [
            ";".join(hard_rule_violations(a, b, ctx.config.score, lang_a, lang_b))
            for a, b, lang_a, lang_b in zip(frame["text_a"], frame["text_b"], frame["lang_a"], frame["lang_b"], strict=True)
        ]
        if self.margin_scorer is not None:
            frame["margin_score"], calibration = self.margin_scorer.scores(
                list(frame["text_a"]), list(frame["text_b"]), pair_vectors(frame), metadata.get(RUNTIME_METADATA)
            )
            threshold = ctx.config.score.margin_threshold
            threshold = calibration.threshold if threshold is None else threshold
            if calibration.pair != ctx.config.pair:
                self._warn_once(
                    f"{ctx.config.pair}: the margin scorer has no calibration of this pair, so it scores with "
                    f"{calibration.pair}'s (threshold {threshold}); `bitextflow-local prepare <pair config>` fits one "
                    "where Debian has the pair's parallel text"
                )
            frame.loc[(frame["rule_tags"] == "") & (frame["margin_score"] < threshold), "rule_tags"] = "margin_below_threshold"
        job: dict[str, Any] = {
            "shard": shard,
            "rules_key": write_table(ctx.store, ctx.key("score", f"{shard}.rules.parquet"), frame, records.SENTENCE_PAIRS),
        }
        model = self._bicleaner_model(model_dir)
        if model is None:
            return job
        passing = frame[frame["rule_tags"] == ""]
        job["input_key"] = ctx.store.put_bytes(
            ctx.key("score", f"{shard}.bicleaner-in.tsv"),
            bicleaner.pairs_tsv(list(zip(passing["text_a"], passing["text_b"], strict=True))).encode(),
        )
        job["output_key"] = ctx.key("score", f"{shard}.bicleaner-out.tsv")
        job |= {"model": model, "source": ctx.config.source, "target": ctx.config.target}
        return job

    def external_call(self, job: dict[str, Any], timeout: timedelta | None) -> ExternalCall | None:
        """``score_pairs.py`` on the job's input and output, signed now (in the task that runs the scorer, which has
        the S3 connection) to live :func:`url_lifetime` of ``timeout``. The URLs go in the environment only."""
        if "input_key" not in job:
            return None
        expires_s = url_lifetime(timeout)
        env = {
            bicleaner.INPUT_URL_VARIABLE: self.ctx.store.presigned_url(job["input_key"], expires_s=expires_s),
            bicleaner.OUTPUT_URL_VARIABLE: self.ctx.store.presigned_url(job["output_key"], "put", expires_s=expires_s),
        }
        arguments = bicleaner.score_arguments(job["model"], job["source"], job["target"], *bicleaner.URLS_FROM_ENVIRONMENT)
        return ExternalCall(arguments, env)

    def run_external(self, job: dict[str, Any], timeout: timedelta | None) -> None:
        """The scorer in the local bicleaner environment, stopped when its URLs would expire."""
        call = self.external_call(job, timeout)
        if call is not None:
            bicleaner.run_scoring(call.arguments, call.env, (timeout or DEFAULT_SCORING_TIMEOUT).total_seconds())

    def finish(self, job: dict[str, Any]) -> str:
        """Passing pairs go on; the others are kept aside under ``score/<shard>.rejected``, counted by reason (our rules'
        tags, ``margin_below_threshold``); every pair keeps its ``margin_score`` when the margin scorer ran.

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
            # a pair is one item: counted under the first rule it breaks (the rejected file keeps them all)
            counts.drop(rule_list.split(";")[0])
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
