"""Stage ``monolingual``: every document of the pair's languages annotated for the monolingual corpus.

Extraction kept each page with its structure, languages and relevance; document alignment paired some of them and
the classify stage gave their sentences domain distributions. This stage puts it together per site partition, for
every document extraction kept in one of the pair's languages, aligned or not, and copies the run set aside included
(each naming the document kept instead): text quality per paragraph and per document, the language's score, domain
relevance, terms and the classifier's mean distribution, the near-duplicate cluster's size, personal data replaced,
the opt-outs it passed, its document pairs and, for a Common Crawl run, its record there
(:func:`bitextflow.release.documents.annotate`). The distribution is over the document's sentences in classified
pairs; a page no classified pair came from (most of a crawl: pages without a translation) is classified here, on at
most ``mono.classifier_sentences`` of its sentences spread over the page, in the worker (a probe's vectors go through
the machine's embedding cache, so a sentence the embed stage saw is not embedded twice). It writes
``monolingual/part-NNNNN.documents.parquet`` (``records.ANNOTATED_DOCUMENTS``); the release filters them by the
pair's ``mono.*`` thresholds into ``documents.<lang>.jsonl.gz``, annotations kept, so users can filter again.

It comes after ``classify`` and passes classify's shards on to the gate (its ``outputs`` are theirs), so a run's
gate and release wait for it; with ``mono.enabled: false`` the gate reads classify's shards itself.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd

from bitextflow import records
from bitextflow.catalog.cc_locations import index_records
from bitextflow.catalog.run_outputs import RunOutputs
from bitextflow.classify.inference import as_json, sentence_distributions, spread
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.models.embedding_cache import encode_through_cache
from bitextflow.redaction import TakedownList, screen_for
from bitextflow.release.documents import DocumentContext, annotate, annotated_row, optout_verdicts, source_kind
from bitextflow.stages.base import Stage
from bitextflow.stages.classify import pair_classifier
from bitextflow.stages.deduplicate import run_duplicates_set_aside
from bitextflow.stages.document_sides import document_sentences
from bitextflow.stages.embed import embedding_cache
from bitextflow.storage.layout import (
    COPIES_NAME,
    PARTITION_DOCUMENTS,
    SENTENCE_PAIR_SHARDS,
    partition_name,
    partition_of_key,
)
from bitextflow.storage.tables import read_table, read_tables, write_table
from bitextflow.text.scripts import base_language, bcp47

log = logging.getLogger(__name__)

_PAIR_COLUMNS = ["url_a", "url_b", "domain_probs_a", "domain_probs_b"]


def by_language(documents: pd.DataFrame, languages: Sequence[str]) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The documents in ``languages``, by URL (the release's bytes do not depend on the order the crawl fetched the
    pages in), and the languages of the others by reason: ``other_script``, a language of the pair in a script it does
    not name (``zh_Hant`` beside ``zh``: counted apart, for a pair that meant them), or ``other_language``."""
    in_pair = documents["language"].isin(languages)
    bases = {base_language(language) for language in languages}
    others: dict[str, list[str]] = {"other_language": [], "other_script": []}
    for code in documents.loc[~in_pair, "language"]:
        others["other_script" if base_language(code) in bases else "other_language"].append(code)
    return documents[in_pair].sort_values(["language", "url", "doc_id"], kind="stable"), others


class Monolingual(Stage):
    name = "monolingual"
    after = "classify"
    outputs = SENTENCE_PAIR_SHARDS
    output_folder = "classify"  # it passes classify's shards on to the gate; its documents lie in its own folder
    partitioning = "shard"
    outputs_per_input = "many"
    help = "annotate every document of the pair's languages for the monolingual corpus (mono.*)"

    @classmethod
    def enabled(cls, config: PairConfig) -> bool:
        return config.mono.enabled

    def plan(self, classified_keys: Sequence[str]) -> list[str]:
        """One task per site partition holding documents (``monolingual/part-NNNNN.inputs.json``: its documents and
        the classified sentence-pair shards it passes on)."""
        ctx = self.ctx
        classified: dict[int, list[str]] = defaultdict(list)
        for key in classified_keys:
            classified[partition_of_key(key)].append(key)
        documents = RunOutputs(ctx.store, ctx.config.pair, ctx.run_id).current(ctx.outputs("partitions", PARTITION_DOCUMENTS))
        return [
            ctx.store.put_json(
                ctx.key("monolingual", f"{partition_name(partition)}.inputs.json"),
                {"partition": partition, "documents": key, "classified": sorted(classified.get(partition, []))},
            )
            for key in documents
            for partition in [partition_of_key(key)]
        ]

    def setup(self) -> None:
        ctx = self.ctx
        copies = read_table(ctx.store, ctx.key("deduplicate", COPIES_NAME))
        self.copies = dict(zip(copies["doc_id"], copies["copies"], strict=True))
        # the release applies the takedown list of its day; personal data is found (and replaced) here
        self.screen = screen_for(ctx.config, TakedownList())
        self.source, self.optouts = source_kind(ctx.config), optout_verdicts(ctx.config)
        self.classifier = None
        if ctx.config.domain.classifier and ctx.config.mono.classifier_sentences:
            self.classifier = pair_classifier(ctx)[0]

    def run(self, inputs_key: str) -> list[str]:
        """Annotates the partition's documents; returns its classified shards (the gate's inputs)."""
        ctx = self.ctx
        plan = ctx.store.get_json(inputs_key)
        partition = plan["partition"]
        kept, copies = run_duplicates_set_aside(ctx, read_table(ctx.store, plan["documents"]), partition)
        documents = pd.concat([kept, copies], ignore_index=True)
        counts = StageCounts(self.name)
        counts.seen(len(documents))
        languages = [ctx.config.source, ctx.config.target]
        in_pair, other_languages = by_language(documents, languages)
        counts.drop("other_language", len(other_languages["other_language"]))
        if other_languages["other_script"]:
            counts.drop("other_script", len(other_languages["other_script"]))
            log.warning(
                "partition %s: %d pages are in %s, a language of the pair in a script it does not name (other_script); "
                "a pair naming that tag as its source or target keeps them (docs/languages.md, \"A language in another "
                "script\")",
                partition, len(other_languages["other_script"]),
                ", ".join(bcp47(code) for code in sorted(set(other_languages["other_script"]))),
            )  # fmt: skip
        pairs_of, distributions_of = self._pairs(partition, plan["classified"])
        unpaired = {
            doc_id for doc_id, url in zip(in_pair["doc_id"], in_pair["url"], strict=True) if not distributions_of.get(url)
        }
        from_text = self._text_distributions(partition, unpaired)
        located: dict[str, dict[int, dict[str, Any]]] = {}  # a fetched shard's Common Crawl records, by offset
        rows = []
        for row in in_pair.itertuples():
            document = records.Document.from_row(row)
            duplicate_of = document.duplicate_of if document.drop_reason else ""
            from_pairs = distributions_of.get(document.url, ())
            context = DocumentContext(
                copies=0 if duplicate_of else int(self.copies.get(document.doc_id, 0)),
                document_pairs=pairs_of.get(document.doc_id, ()),
                domain_distributions=from_pairs or from_text.get(document.doc_id, ()),
                classifier_from="sentence_pairs" if from_pairs else "text",
                duplicate_of=duplicate_of,
                index_record=self._index_record(document, located) if self.source == "commoncrawl" else None,
            )
            line = annotate(
                document, context, source=self.source, optouts=self.optouts, detector=self.screen.detector,
                replace=self.screen.action == "replace",
            )  # fmt: skip
            for kind, n in line["personal_data"].items() if self.screen.action == "replace" else ():
                counts.repair(f"personal_data_{kind}", n)
            rows.append(annotated_row(line, partition))
        counts.keep(len(rows))
        name = partition_name(partition)
        frame = pd.DataFrame(rows, columns=[f.name for f in records.ANNOTATED_DOCUMENTS])
        write_table(ctx.store, ctx.key("monolingual", f"{name}.documents.parquet"), frame, records.ANNOTATED_DOCUMENTS)
        ctx.write_counts(self.name, name, counts)
        return list(plan["classified"])

    def _text_distributions(self, partition: int, doc_ids: set[str]) -> dict[str, list[str]]:
        """With a domain classifier: the distributions (JSON objects) of at most ``mono.classifier_sentences`` of each
        document's distinct sentences, spread over the page, by document id (a copy of the same URL is the same
        document); a probe's vectors come through the machine's embedding cache, as the embed stage's do."""
        limit = self.ctx.config.mono.classifier_sentences
        if self.classifier is None or not limit or not doc_ids:
            return {}
        stored = document_sentences(self.ctx, partition, doc_ids)
        chosen = {doc_id: spread(list(dict.fromkeys(row[1].strip() for row in rows)), limit) for doc_id, rows in stored.items()}
        texts = list(dict.fromkeys(text for sample in chosen.values() for text in sample))
        if not texts:
            return {}
        encoder = self._probe_encoder()  # loaded before the clock starts: the log gives the rate of classifying
        started = time.perf_counter()
        vectors, cached = (
            encode_through_cache(encoder, texts, embedding_cache(self.ctx.config, encoder)) if encoder else (None, 0)
        )
        distributions = as_json(sentence_distributions(self.classifier, texts, vectors), self.classifier.labels)
        elapsed = time.perf_counter() - started
        log.info(
            "partition %s: %d documents no classified sentence pair came from, classified on %d of their sentences "
            "(%d vectors from the embedding cache) in %.1f s (%.0f a second)",
            partition, len(chosen), len(texts), cached, elapsed, len(texts) / max(elapsed, 1e-9),
        )  # fmt: skip
        of_text = dict(zip(texts, distributions, strict=True))
        return {doc_id: [of_text[text] for text in sample] for doc_id, sample in chosen.items()}

    def _probe_encoder(self):
        """A probe's encoder, which embeds the sentences it classifies; None for another kind of classifier."""
        from bitextflow.classify.probe import ProbeClassifier  # the probe's module imports torch

        return self.classifier.encoder if isinstance(self.classifier, ProbeClassifier) else None

    def _index_record(self, document: records.Document, located: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any] | None:
        if document.warc_key not in located:
            located[document.warc_key] = index_records(self.ctx.store, document.warc_key)
        return located[document.warc_key].get(int(document.warc_offset))

    def _pairs(self, partition: int, classified_keys: list[str]) -> tuple[dict[str, list[tuple[str, str]]], dict[str, list[str]]]:
        """The partition's document pairs by document id, and its classified sentences' domain distributions by URL."""
        ctx = self.ctx
        manifest = RunOutputs(ctx.store, ctx.config.pair, ctx.run_id).partition(partition)
        pairs_of: dict[str, list[tuple[str, str]]] = defaultdict(list)
        if manifest is not None:
            document_pairs = read_tables(ctx.store, manifest.document_pairs, records.DOCUMENT_PAIRS)
            for a, b in zip(document_pairs["doc_id_a"], document_pairs["doc_id_b"], strict=True):
                pairs_of[a].append((a, b))
                pairs_of[b].append((a, b))
        distributions_of: dict[str, list[str]] = defaultdict(list)
        for key in classified_keys:
            pairs = read_table(ctx.store, key, columns=_PAIR_COLUMNS)
            for url_a, url_b, probs_a, probs_b in pairs.itertuples(index=False):
                if probs_a:
                    distributions_of[url_a].append(probs_a)
                if probs_b:
                    distributions_of[url_b].append(probs_b)
        return pairs_of, distributions_of
