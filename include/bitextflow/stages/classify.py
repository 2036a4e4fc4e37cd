"""Stage ``classify``: domain relevance of each sentence pair and, with ``domain.classifier``, each side's
domain probability distribution.

Relevance is the larger of the two sides' weighted domain-term score; pairs under
``domain.min_relevance`` are dropped. With a classifier, each side keeps its distribution
(``domain_probs_a``/``_b``) and pairs where neither side reaches ``domain.classifier_threshold`` for
the label are dropped. A classifier makes the stage a GPU step: one task for all shards, so the model
loads once (in the worker or a GPU pod, as ``gpu.mode`` says).
"""

from __future__ import annotations

from bitextflow import records
from bitextflow.catalog.models import resolve_classifier
from bitextflow.classify.inference import classify_pairs, configured_classifier
from bitextflow.classify.model import DomainClassifier
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.extract.relevance import TermMatcher
from bitextflow.models.vectors import pair_vectors
from bitextflow.stages.base import Resources, RunContext, Stage, shard_name
from bitextflow.storage.layout import SENTENCE_PAIR_SHARDS
from bitextflow.storage.tables import read_table, write_table


def pair_classifier(ctx: RunContext) -> tuple[DomainClassifier, str]:
    """The pair's ``domain.classifier`` (a folder, fetched from the store or trained offline where it names one),
    loaded once per process, and the label it thresholds."""
    config = ctx.config
    return configured_classifier(
        config, resolve_classifier(config.domain.classifier, config.pair, ctx.store, config.embed.runtime)
    )


class Classify(Stage):
    name = "classify"
    after = "score"
    outputs = SENTENCE_PAIR_SHARDS
    partitioning = "shard"
    resources = Resources(concurrency=4)
    help = "domain relevance and, with domain.classifier, each side's domain distribution"

    @classmethod
    def runs_on_gpu(cls, config: PairConfig) -> bool:
        return bool(config.domain.classifier)

    def setup(self) -> None:
        self.classifier = None
        if self.ctx.config.domain.classifier:
            self.classifier, self.label = pair_classifier(self.ctx)

    def run(self, scored_key: str) -> str:
        ctx = self.ctx
        frame = read_table(ctx.store, scored_key)
        domain = ctx.config.domain
        counts = StageCounts("classify")
        counts.seen(len(frame))
        scores, matched = [], []
        matcher_a, matcher_b = (
            TermMatcher(domain.terms.get(language, {}), language, domain.stem_terms)
            for language in (ctx.config.source, ctx.config.target)
        )
        for text_a, text_b in zip(frame["text_a"], frame["text_b"], strict=True):
            score_a, terms_a = matcher_a.sentence_relevance(text_a)
            score_b, terms_b = matcher_b.sentence_relevance(text_b)
            scores.append(max(score_a, score_b))
            matched.append(";".join(dict.fromkeys(terms_a + terms_b)))
        frame["domain_relevance"] = scores
        frame["domain_terms"] = matched
        kept = frame[frame["domain_relevance"] >= domain.min_relevance].copy()
        counts.drop("below_min_relevance", len(frame) - len(kept))
        kept["domain_probs_a"] = kept["domain_probs_b"] = ""
        if self.classifier is not None:
            distributions = classify_pairs(
                self.classifier, self.label, kept["text_a"].tolist(), kept["text_b"].tolist(), pair_vectors(kept)
            )
            kept["domain_probs_a"], kept["domain_probs_b"] = distributions.probs_a, distributions.probs_b
            in_domain = distributions.label_probability >= domain.classifier_threshold
            counts.drop("below_domain_probability", int((~in_domain).sum()))
            kept = kept[in_domain]
        counts.keep(len(kept))
        key = write_table(ctx.store, self._output_key(scored_key), kept, records.CLASSIFIED_SENTENCE_PAIRS)
        ctx.write_counts("classify", shard_name(scored_key), counts)
        return key

    def _output_key(self, scored_key: str) -> str:
        return self.ctx.key("classify", f"{shard_name(scored_key)}.parquet")

    def output_key(self, scored_key: str) -> str:
        """The classify output of ``scored_key``, checked to exist: a GPU step that ran elsewhere (a pod) wrote
        it, and the gate must not start without it."""
        key = self._output_key(scored_key)
        if not self.ctx.store.exists(key):
            raise StageError(
                f"{self.ctx.store.uri(key)} missing: the classify step did not write shard {shard_name(scored_key)}; see its log"
            )
        return key
