"""The stages as functions of (run context, input keys) -> output keys: one function per Airflow task.

The DAG factory maps these over shards and the CLI calls them in order; neither holds stage logic.
Keys follow ``<pair>/<run_id>/<stage>/<shard>.<ext>`` (DESIGN.md section 3); every stage also writes
``<shard>.counts.json`` next to its output, which the release aggregates.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from bitextflow import schemas
from bitextflow.align import sentences as sent_align
from bitextflow.align.combined import align_configured, document_from_row
from bitextflow.align.dictionary import load_dictionary
from bitextflow.align.lexical import sentence_aligner
from bitextflow.classify import relevance
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.checkpoint import ObjectStoreCheckpoints
from bitextflow.crawl.crawler import Crawler, CrawlLogEntry
from bitextflow.crawl.scoring import PairContext
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import GateFailed, StageError
from bitextflow.extract import extract_shard
from bitextflow.extract.dedup import deduplicate_run
from bitextflow.extract.export import export_documents
from bitextflow.extract.ingest import resolve_warcs, warc_object
from bitextflow.extract.warc import WARC_READ_BUFFER
from bitextflow.models import url_models
from bitextflow.quality import (
    Check,
    GateReport,
    document_pairs_check,
    documents_check,
    enforce,
    release_checks,
    sentence_pairs_check,
    sentences_check,
    validate,
)
from bitextflow.release import ReleaseExtras, ReleaseInfo, incremental, list_releases, monolingual_corpus, publish_release
from bitextflow.score import bicleaner, hard_rule_violations, normalise_for_comparison
from bitextflow.storage import ObjectStore, stage_key
from bitextflow.storage.tables import read_table, read_tables, stage_outputs, write_table

log = logging.getLogger(__name__)

STAGES = ("crawl", "extract", "gate_documents", "align_documents", "align_sentences", "score", "classify", "gate", "release")
#: Steps that train a model for later runs instead of processing a run; the CLI runs them and gpu_step dispatches them.
MODEL_STEPS = ("train_domain",)


@dataclass(frozen=True)
class RunContext:
    """What a stage needs to know about its run. ``on_counts`` sees every count a stage writes (the
    Airflow glue shows them on the task instance)."""

    config: PairConfig
    store: ObjectStore
    run_id: str
    on_counts: Callable[[str, StageCounts], None] | None = None

    def key(self, stage: str, name: str) -> str:
        return stage_key(self.config.pair, self.run_id, stage, name)

    def write_counts(self, stage: str, shard: str, counts: StageCounts) -> None:
        self.store.put_json(self.key(stage, f"{shard}.counts.json"), counts.to_dict())
        log.info("%s [%s]", counts.summary(), shard)
        if self.on_counts is not None:
            self.on_counts(shard, counts)


def shard_name(key: str) -> str:
    """``.../crawl/crawl-00003.warc.gz`` -> ``crawl-00003``: output shards keep their input's name."""
    return Path(key).name.split(".")[0]


# -- crawl -------------------------------------------------------------------------------------------
_WARC_SHARD = re.compile(r"crawl-\d{5}\.warc\.gz$")


def run_crawl(ctx: RunContext) -> list[str]:
    """Crawl from the seeds (or ingest ``crawl.warcs``); returns the WARC shard keys (the shards of the extract stage).

    Resumable: the crawl checkpoints to ``crawl/`` and a rerun of the task with the same run id
    continues from the last checkpoint (or, if the crawl had finished, returns its shards).
    """
    ctx.store.ensure_bucket()
    config = ctx.config.crawl
    if config.warcs:
        return _ingest_warcs(ctx)

    def upload(path: Path, name: str) -> str:
        return ctx.store.put_file(ctx.key("crawl", name), path, "application/warc")

    def download(name: str, path: Path) -> None:
        ctx.store.download_file(ctx.key("crawl", name), path)

    info = {
        "software": "bitextflow/0.1 (httpx, warcio)",
        "format": "WARC File Format 1.1",
        "http-header-user-agent": config.user_agent,
        "robots": "obey",
        "isPartOf": f"{ctx.config.pair}/{ctx.run_id}",
    }
    warc = RotatingWarcWriter(upload, config.warc_max_bytes, download=download, info=info)
    checkpoints = ObjectStoreCheckpoints(ctx.store, lambda name: ctx.key("crawl", name))
    pair = PairContext(ctx.config.source, ctx.config.target, ctx.config.domain.terms)
    started = time.monotonic()

    def progress(entry: CrawlLogEntry) -> None:
        if crawler.fetched and crawler.fetched % 50 == 0 and entry.outcome == "fetched":
            log.info(
                "crawl: %d pages fetched, %d waiting, %.0f s", crawler.fetched, len(crawler.frontier), time.monotonic() - started
            )

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would bury the task log
    if config.strategy == "smart" and config.url_models:  # fetched with the run's store: the crawler reads a folder
        resolved = url_models.resolve_location(config.url_models, ctx.store, ctx.config.pair)
        config = config.model_copy(update={"url_models": str(resolved[0]) if resolved else None})
    crawler = Crawler(config, warc, pair, checkpoints=checkpoints, on_entry=progress)
    if crawler.strategy_used != config.strategy:
        log.warning("crawl: strategy %s is not available; ranking with %s", config.strategy, crawler.strategy_used)
    crawler.crawl()
    keys = crawler.keys
    # Shards of a killed attempt that the resumed crawl did not write again are not part of the crawl.
    for key in ctx.store.list_keys(ctx.key("crawl", "")):
        if _WARC_SHARD.search(key) and key not in keys:
            ctx.store.delete_prefix(key)
    ctx.store.put_bytes(ctx.key("crawl", "crawl-log.jsonl.gz"), checkpoints.merged_log(crawler.log_parts), "application/gzip")
    ctx.write_counts("crawl", "crawl", crawler.counts)
    if not keys:
        seeds = ", ".join(str(s) for s in config.seeds)
        raise StageError(
            f"crawl fetched no page from the seeds ({seeds}); check they are reachable, allowed by robots.txt "
            "and, for private addresses such as 127.0.0.1, listed in crawl.allow_private_addresses"
        )
    return keys


def _ingest_warcs(ctx: RunContext) -> list[str]:
    """``crawl.warcs``: existing WARC files are the extract shards; nothing is fetched."""
    keys = resolve_warcs(ctx.store, ctx.config.crawl.warcs, ctx.config.crawl.warc_buckets)
    by_shard: dict[str, str] = {}
    for key in keys:
        if (other := by_shard.setdefault(shard_name(key), key)) != key:
            raise StageError(
                f"crawl.warcs: {other} and {key} would both be extract shard {shard_name(key)!r}; rename one of the files"
            )
    counts = StageCounts("crawl_ingest")  # WARC files, not pages: the pages are counted by extract
    counts.seen(len(keys))
    counts.keep(len(keys))
    ctx.write_counts("crawl", "crawl", counts)
    return keys


# -- extract -----------------------------------------------------------------------------------------
def run_extract(ctx: RunContext, warc_key: str) -> str:
    """One WARC shard -> documents, rejected documents and sentences Parquet; returns the documents key.

    The WARC is streamed from S3 through a bounded buffer, never copied whole (see
    :class:`bitextflow.storage.ObjectReader` and :mod:`bitextflow.extract.shard`).
    """
    shard = shard_name(warc_key)
    sentences_key = ctx.key("extract", f"{shard}.sentences.parquet")
    # an ingested WARC may be in another bucket, or on another endpoint (crawl.warc_buckets)
    store, key = warc_object(ctx.store, warc_key, ctx.config.crawl.warc_buckets)
    with tempfile.TemporaryDirectory(prefix="bitextflow-extract-") as tmp, store.open_read(key, WARC_READ_BUFFER) as warc:
        result = extract_shard(
            warc, Path(tmp) / "out", warc_key=warc_key, sentences_key=sentences_key,
            languages={ctx.config.source, ctx.config.target}, config=ctx.config.extract, domain=ctx.config.domain,
        )  # fmt: skip
        parquet = "application/vnd.apache.parquet"
        ctx.store.put_file(sentences_key, result.sentences, parquet)
        ctx.store.put_file(ctx.key("extract", f"{shard}.documents.rejected.parquet"), result.rejected, parquet)
        documents_key = ctx.store.put_file(ctx.key("extract", f"{shard}.documents.parquet"), result.documents, parquet)
        for name, data, content_type in export_documents(
            result.documents, ctx.config.extract.export_formats, ctx.config.domain.name
        ):
            ctx.store.put_bytes(ctx.key("extract", f"export/{shard}/{name}"), data, content_type)
    ctx.write_counts("extract", f"{shard}.documents", result.document_counts)
    ctx.write_counts("extract", f"{shard}.sentences", result.sentence_counts)
    return documents_key


# -- align -------------------------------------------------------------------------------------------
def drop_cross_shard_duplicates(ctx: RunContext, documents: pd.DataFrame) -> pd.DataFrame:
    """Exact and MinHash LSH near-duplicates across the extract shards (``extract.lsh_*``), set aside.

    Extraction de-duplicates within a shard; this pass sees the whole run. The dropped documents go
    to ``align_documents/documents.cross-shard-duplicates.parquet`` with the reason and the kept twin.
    """
    config = ctx.config.extract
    result = deduplicate_run(documents, config.lsh_threshold, config.lsh_num_perm)
    write_table(
        ctx.store, ctx.key("align_documents", "documents.cross-shard-duplicates.parquet"), result.removed, schemas.DOCUMENTS
    )
    ctx.write_counts("align_documents", "documents.cross-shard-duplicates", result.counts)
    return result.kept


def run_align_documents(ctx: RunContext, documents_keys: list[str]) -> list[str]:
    """All documents of the run -> document pairs, split into shards for sentence alignment."""
    frame = drop_cross_shard_duplicates(ctx, read_tables(ctx.store, documents_keys, schemas.DOCUMENTS))
    src, tgt = ctx.config.source, ctx.config.target
    counts = StageCounts("align_documents")
    in_pair = frame[frame["language"].isin([src, tgt])]
    counts.seen(len(in_pair))
    pairs, report = align_configured((document_from_row(r) for r in in_pair.itertuples()), src, tgt, ctx.config.align)
    for reason, n in report.unmatched.items():
        counts.drop(reason, n)
    counts.keep(2 * len(pairs))
    sentences_key = dict(zip(frame["doc_id"], frame["sentences_key"], strict=True))
    rows = [
        {
            "doc_id_a": p.doc_id_a,
            "doc_id_b": p.doc_id_b,
            "url_a": p.url_a,
            "url_b": p.url_b,
            "sentences_key_a": sentences_key[p.doc_id_a],
            "sentences_key_b": sentences_key[p.doc_id_b],
            "method": p.method,
            "score": p.score,
        }
        for p in sorted(pairs, key=lambda p: (p.url_a, p.url_b))
    ]
    ctx.write_counts("align_documents", "align_documents", counts)
    if not rows:
        raise StageError(
            f"no {src}-{tgt} document pairs among {len(in_pair)} documents in the pair's languages; "
            "the crawl found no translated pages (check seeds and crawl.max_pages)"
        )
    document_pairs = pd.DataFrame(rows, columns=schemas.DOCUMENT_PAIRS.names)
    judge(ctx, "document_pairs", [document_pairs_check(document_pairs, ctx.config.gate)])
    if ctx.config.incremental:
        document_pairs = _carry_over_unchanged(ctx, frame, document_pairs)
    size = ctx.config.align.document_pairs_per_shard
    # At least one shard, empty when everything was carried over: an empty map would skip the tasks after it.
    return [
        write_table(
            ctx.store,
            ctx.key("align_documents", f"docpairs-{i // size:05d}.parquet"),
            document_pairs.iloc[i : i + size],
            schemas.DOCUMENT_PAIRS,
        )
        for i in range(0, max(len(document_pairs), 1), size)
    ]


CARRIED_SENTENCE_PAIRS = "carried-sentence-pairs.parquet"


def _carry_over_unchanged(ctx: RunContext, documents: pd.DataFrame, document_pairs: pd.DataFrame) -> pd.DataFrame:
    """``incremental``: set aside the previous release's pairs of unchanged page pairs for the gate, report
    what changed (``align_documents/changes.json``); returns the document pairs still to align."""
    previous = incremental.previous_release(ctx.store, ctx.config.pair, ctx.run_id)
    if previous is None:
        log.info("incremental: no earlier release of %s; aligning every document pair", ctx.config.pair)
        return document_pairs
    split = incremental.split_unchanged(
        document_pairs, dict(zip(documents["url"], documents["content_hash"], strict=True)), previous
    )
    # "docpairs-carried" is listed with the run's document pairs (the release's document_pairs.jsonl) but
    # is not a shard for sentence alignment; the gate adds the carried sentence pairs to this run's.
    write_table(
        ctx.store, ctx.key("align_documents", "docpairs-carried.parquet"), split.carried_document_pairs, schemas.DOCUMENT_PAIRS
    )
    write_table(
        ctx.store,
        ctx.key("align_documents", CARRIED_SENTENCE_PAIRS),
        split.carried_sentence_pairs,
        schemas.CLASSIFIED_SENTENCE_PAIRS,
    )
    ctx.store.put_json(ctx.key("align_documents", "changes.json"), split.changes)
    log.info(
        "incremental against release v%d: pages %s; %d document pairs carried over with %d sentence pairs, %d to align",
        previous.release.version, {kind: c["count"] for kind, c in split.changes["pages"].items()},
        len(split.carried_document_pairs), len(split.carried_sentence_pairs), len(split.to_align),
    )  # fmt: skip
    return split.to_align


def run_train_url_models(ctx: RunContext, document_pairs_keys: list[str]) -> str:
    """This run's crawl log (URL -> CLD2 language) and document pairs -> the smart strategy's URL models,
    published as the pair's next version ``models/<pair>/url/v<N>/``; returns its URI."""
    lines = url_models.read_crawl_log(ctx.store.get_bytes(ctx.key("crawl", "crawl-log.jsonl.gz")))
    pages, counts = url_models.pages_from_crawl_log(lines)
    pairs = read_tables(ctx.store, document_pairs_keys, schemas.DOCUMENT_PAIRS)
    settings = url_models.settings_from_config(ctx.config.crawl)
    log.info("train_url_models: crawl log %s", counts.summary())
    with tempfile.TemporaryDirectory(prefix="url-models-") as tmp:
        url_models.train_url_models(pages, list(zip(pairs["url_a"], pairs["url_b"], strict=True)), Path(tmp), settings,
                                    required_languages=(ctx.config.source, ctx.config.target),
                                    crawl_log_counts=counts.to_dict())  # fmt: skip
        uri = url_models.publish_url_models(ctx.store, ctx.config.pair, Path(tmp))
    # a pointer, not a counts.json: this side task may end after the release, which aggregates those
    ctx.store.put_json(ctx.key("train_url_models", "url-models.json"), {"uri": uri, "crawl_log": counts.to_dict()})
    return uri


def pair_hash(text_a: str, text_b: str) -> str:
    """Identity of a pair for de-duplication: equal after case folding and dropping non-alphanumerics."""
    joined = f"{normalise_for_comparison(text_a)}\t{normalise_for_comparison(text_b)}"
    return hashlib.sha1(joined.encode("utf-8")).hexdigest()


def _document_sentences(ctx: RunContext, keys: set[str]) -> dict[str, list[str]]:
    frame = read_tables(ctx.store, sorted(keys), schemas.SENTENCES)
    frame = frame.sort_values(["doc_id", "paragraph_index", "sentence_index"], kind="stable")
    return {doc_id: list(group["text"]) for doc_id, group in frame.groupby("doc_id", sort=False)}


def run_align_sentences(ctx: RunContext, document_pairs_key: str) -> str:
    """One shard of document pairs -> sentence pairs with an alignment score (``align.sentence_aligner``).

    Counted in beads: each bead becomes a pair or is dropped (unaligned sentence, low score). The
    ``hunalign`` aligner's dictionary and the ``vecalign`` aligner's encoder are loaded once per task
    (a pair with no dictionary gets None, logged).
    """
    shard = shard_name(document_pairs_key).replace("docpairs", "sentpairs")
    doc_pairs = read_table(ctx.store, document_pairs_key)
    sentences = _document_sentences(ctx, set(doc_pairs["sentences_key_a"]) | set(doc_pairs["sentences_key_b"]))
    counts = StageCounts("align_sentences")
    method = ctx.config.align.sentence_aligner
    dictionary = load_dictionary(ctx.config.source, ctx.config.target) if method in ("hunalign", "hybrid") else None
    encoder = None
    if method == "vecalign":
        from bitextflow.models import SentenceEncoder  # torch is imported only by the stages that need it

        encoder = SentenceEncoder.from_path(ctx.config.align.encoder_model)
    if method == "hybrid":
        from bitextflow.models.static import StaticEmbeddings

        encoder = StaticEmbeddings.from_path(ctx.config.align.static_model)
    align = sentence_aligner(method, dictionary, encoder)
    rows = []
    for pair in doc_pairs.itertuples():
        src, tgt = sentences.get(pair.doc_id_a, []), sentences.get(pair.doc_id_b, [])
        beads = align(src, tgt)
        counts.seen(len(beads))
        aligned, dropped = sent_align.sentence_pairs(beads, src, tgt, ctx.config.align.min_alignment_score)
        for reason, n in dropped.items():
            counts.drop(reason, n)
        for text_a, text_b, score in aligned:
            rows.append(
                {
                    "url_a": pair.url_a,
                    "url_b": pair.url_b,
                    "lang_a": ctx.config.source,
                    "lang_b": ctx.config.target,
                    "text_a": text_a,
                    "text_b": text_b,
                    "alignment_score": score,
                    "rule_tags": "",
                    "domain_relevance": 0.0,
                    "domain_terms": "",
                    "pair_hash": pair_hash(text_a, text_b),
                }
            )
    counts.keep(len(rows))
    frame = pd.DataFrame(rows, columns=schemas.SENTENCE_PAIRS.names)  # columns even when a shard has no pairs
    key = write_table(ctx.store, ctx.key("align_sentences", f"{shard}.parquet"), frame, schemas.SENTENCE_PAIRS)
    ctx.write_counts("align_sentences", shard, counts)
    return key


# -- score and classify ------------------------------------------------------------------------------
def run_score(ctx: RunContext, sentence_pairs_key: str) -> str:
    """Score one shard in this process: :func:`prepare_score`, the bicleaner step if configured, :func:`finish_score`.

    The DAG runs the three as separate tasks, the middle one in the bicleaner environment.
    """
    job = prepare_score(ctx, sentence_pairs_key)
    if "arguments" in job:
        bicleaner.run_scoring(job["arguments"])
    return finish_score(ctx, job)


def bicleaner_enabled(config: PairConfig) -> bool:
    """Whether the pair scores with bicleaner-ai: ``yes``, or ``if-installed`` with the environment and model there."""
    use = config.score.use_bicleaner
    if use == "if-installed":
        problems = bicleaner.missing_parts(config.pair, config.score.bicleaner_model)
        for problem in problems:
            log.warning("%s: score.use_bicleaner is if-installed, scoring with the hard rules only: %s", config.pair, problem)
        return not problems
    return use == "yes"


def prepare_score(ctx: RunContext, sentence_pairs_key: str, model_dir: str | None = None) -> dict[str, Any]:
    """Our hard rules on every pair; with bicleaner, the passing pairs go to S3 as its input TSV.

    Returns the job of the shard: ``shard``, ``rules_key`` and, with bicleaner, ``output_key`` and the
    ``arguments`` of ``score_pairs.py`` (presigned URLs: the bicleaner environment needs no credentials).
    ``model_dir`` is the model folder as the scorer sees it (a pod's image), by default the local one.
    """
    shard = shard_name(sentence_pairs_key)
    frame = read_table(ctx.store, sentence_pairs_key)
    rule_tags = [
        ";".join(hard_rule_violations(a, b, ctx.config.score)) for a, b in zip(frame["text_a"], frame["text_b"], strict=True)
    ]
    frame["rule_tags"] = rule_tags
    job: dict[str, Any] = {
        "shard": shard,
        "rules_key": write_table(ctx.store, ctx.key("score", f"{shard}.rules.parquet"), frame, schemas.SENTENCE_PAIRS),
    }
    if not bicleaner_enabled(ctx.config):
        return job
    if model_dir is None:
        local_model = bicleaner.require_available(ctx.config.pair, ctx.config.score.bicleaner_model)
        job["model_prefix"] = bicleaner.publish_model(ctx.store, ctx.config.pair, local_model)
        model_dir = str(local_model)
    passing = frame[frame["rule_tags"] == ""]
    input_key = ctx.store.put_bytes(
        ctx.key("score", f"{shard}.bicleaner-in.tsv"),
        bicleaner.pairs_tsv(list(zip(passing["text_a"], passing["text_b"], strict=True))).encode(),
    )
    job["output_key"] = ctx.key("score", f"{shard}.bicleaner-out.tsv")
    job["arguments"] = bicleaner.score_arguments(
        model_dir,
        ctx.config.source,
        ctx.config.target,
        ctx.store.presigned_url(input_key),
        ctx.store.presigned_url(job["output_key"], "put"),
    )
    return job


def finish_score(ctx: RunContext, job: dict[str, Any]) -> str:
    """Passing pairs go on; the others are kept aside under ``score/<shard>.rejected``, counted by reason.

    With bicleaner: texts become bifixer's, bicleaner-hardrules rejections are counted as
    ``hardrules:<rule>`` and pairs under ``score.bicleaner_threshold`` as ``bicleaner_below_threshold``;
    every scored pair keeps its ``bicleaner_score`` (kept and rejected files alike: the release report
    plots the distribution).
    """
    shard = job["shard"]
    frame = read_table(ctx.store, job["rules_key"])
    counts = StageCounts("score")
    counts.seen(len(frame))
    for rule_list in frame.loc[frame["rule_tags"] != "", "rule_tags"]:
        for tag in rule_list.split(";"):
            counts.drop(tag)
    frame["bicleaner_score"] = None
    if "output_key" in job:
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
        frame.loc[passing, "bicleaner_score"] = scores
        threshold = ctx.config.score.bicleaner_threshold
        for index, tag, score in zip(passing, hardrules_tags, scores, strict=True):
            if tag != "keep":
                frame.loc[index, "rule_tags"] = f"hardrules:{bicleaner.first_hardrule(tag)}"
                counts.drop(frame.loc[index, "rule_tags"])
            elif score < threshold:
                frame.loc[index, "rule_tags"] = "bicleaner_below_threshold"
                counts.drop("bicleaner_below_threshold")
    rejected = frame[frame["rule_tags"] != ""]
    kept = frame[frame["rule_tags"] == ""]
    counts.keep(len(kept))
    write_table(ctx.store, ctx.key("score", f"{shard}.rejected.parquet"), rejected, schemas.SENTENCE_PAIRS)
    key = write_table(ctx.store, ctx.key("score", f"{shard}.parquet"), kept, schemas.SENTENCE_PAIRS)
    ctx.write_counts("score", shard, counts)
    return key


def run_classify(ctx: RunContext, scored_key: str) -> str:
    """Domain relevance per pair (larger of the two sides); pairs under ``domain.min_relevance`` dropped.

    With ``domain.classifier`` set, each side's domain distribution is kept (``domain_probs_a``/``_b``) and
    pairs where neither side reaches ``domain.classifier_threshold`` for the label are dropped (docs/classify.md).
    """
    shard = shard_name(scored_key)
    frame = read_table(ctx.store, scored_key)
    domain = ctx.config.domain
    counts = StageCounts("classify")
    counts.seen(len(frame))
    scores, matched = [], []
    for text_a, text_b in zip(frame["text_a"], frame["text_b"], strict=True):
        score_a, terms_a = relevance(text_a, domain.terms.get(ctx.config.source, {}))
        score_b, terms_b = relevance(text_b, domain.terms.get(ctx.config.target, {}))
        scores.append(max(score_a, score_b))
        matched.append(";".join(dict.fromkeys(terms_a + terms_b)))
    frame["domain_relevance"] = scores
    frame["domain_terms"] = matched
    kept = frame[frame["domain_relevance"] >= domain.min_relevance].copy()
    counts.drop("below_min_relevance", len(frame) - len(kept))
    kept["domain_probs_a"] = kept["domain_probs_b"] = ""
    if domain.classifier:
        from bitextflow.classify.inference import classify_pairs, configured_classifier  # torch only when configured

        classifier, label = configured_classifier(ctx.config, ctx.store)
        distributions = classify_pairs(classifier, label, kept["text_a"].tolist(), kept["text_b"].tolist())
        kept["domain_probs_a"], kept["domain_probs_b"] = distributions.probs_a, distributions.probs_b
        in_domain = distributions.label_probability >= domain.classifier_threshold
        counts.drop("below_domain_probability", int((~in_domain).sum()))
        kept = kept[in_domain]
    counts.keep(len(kept))
    key = write_table(ctx.store, _classified_key(ctx, scored_key), kept, schemas.CLASSIFIED_SENTENCE_PAIRS)
    ctx.write_counts("classify", shard, counts)
    return key


def classified_key(ctx: RunContext, scored_key: str) -> str:
    """The classify output of the shard ``scored_key``, checked to exist: a classify step that ran elsewhere (a GPU
    pod, ``gpu.mode: kubernetes``) wrote it, and the gate must not start without it."""
    key = _classified_key(ctx, scored_key)
    if not ctx.store.exists(key):
        raise StageError(
            f"{ctx.store.uri(key)} missing: the classify step did not write shard {shard_name(scored_key)}; see its log"
        )
    return key


def _classified_key(ctx: RunContext, scored_key: str) -> str:
    return ctx.key("classify", f"{shard_name(scored_key)}.parquet")


# -- gate and release --------------------------------------------------------------------------------
def data_docs_key(pair: str, run_id: str, gate: str) -> str:
    """Where the Data Docs site of one gate of a run starts (``index.html``); the Airflow UI links to it."""
    return stage_key(pair, run_id, "gate", f"data_docs/{gate}/index.html")


def judge(ctx: RunContext, gate: str, checks: list[Check]) -> list[GateReport]:
    """Run a gate's suites, store each result and the Data Docs under ``gate/``; raise if a suite failed.

    Results and Data Docs are stored before the verdict so that a failed gate can be inspected.
    """
    with tempfile.TemporaryDirectory(prefix="bitextflow-gate-") as tmp:
        reports = validate(checks, data_docs_dir=Path(tmp), run_name=gate)
        ctx.store.put_tree(ctx.key("gate", f"data_docs/{gate}/"), Path(tmp))
    for report in reports:
        ctx.store.put_json(ctx.key("gate", f"{report.suite}.report.json"), report.to_dict())
        verdict = "passed" if report.success else "FAILED: " + "; ".join(report.failures)
        log.info("%s gate: %d expectations %s", report.suite, report.evaluated, verdict)
    log.info("Data Docs of the %s gate: %s", gate, ctx.store.uri(data_docs_key(ctx.config.pair, ctx.run_id, gate)))
    for report in reports:
        enforce(report)
    return reports


def run_gate_documents(ctx: RunContext, documents_keys: list[str]) -> list[str]:
    """Judge the documents and sentences of every extract shard together; passes the keys on unchanged."""
    documents = read_tables(ctx.store, documents_keys, schemas.DOCUMENTS)
    sentences = read_tables(ctx.store, sorted(set(documents["sentences_key"].dropna())), schemas.SENTENCES)
    languages = (ctx.config.source, ctx.config.target)
    judge(ctx, "documents", [documents_check(documents, ctx.config.gate, languages), sentences_check(sentences, languages)])
    return documents_keys


def run_gate(ctx: RunContext, classified_keys: list[str]) -> str:
    """Merge shards, drop exact duplicate pairs (counted), validate; fails the run on a violation.

    The volume is judged against the pair's latest release (``gate.max_volume_drop`` / ``_growth``). In an
    ``incremental`` run the pairs carried over from that release join this run's before anything is judged.
    """
    carried_key = ctx.key("align_documents", CARRIED_SENTENCE_PAIRS)
    carried = [carried_key] if ctx.config.incremental and ctx.store.exists(carried_key) else []
    frame = read_tables(ctx.store, [*classified_keys, *carried], schemas.CLASSIFIED_SENTENCE_PAIRS)
    counts = StageCounts("gate")
    counts.seen(len(frame))
    merged = frame.drop_duplicates("pair_hash", keep="first").reset_index(drop=True)
    counts.drop("duplicate_pair", len(frame) - len(merged))
    counts.keep(len(merged))
    ctx.write_counts("gate", "gate", counts)
    # The candidate is written even when the gate fails, so the offending data can be inspected.
    key = write_table(ctx.store, ctx.key("gate", "sentence_pairs.parquet"), merged, schemas.CLASSIFIED_SENTENCE_PAIRS)
    previous = [r for r in list_releases(ctx.store, ctx.config.pair) if r.run_id != ctx.run_id]
    previous_count = previous[-1].sentence_pairs if previous else None
    check = sentence_pairs_check(merged, ctx.config.gate, ctx.config.source, ctx.config.target, previous_count=previous_count)
    judge(ctx, "sentence_pairs", [check])
    return key


def collect_counts(ctx: RunContext) -> list[StageCounts]:
    """Counts of every stage of the run, merged per stage, in pipeline order."""
    prefix = stage_key(ctx.config.pair, ctx.run_id, "", "")
    by_stage: dict[str, list[StageCounts]] = {}
    for key in ctx.store.list_keys(prefix):
        if key.endswith(".counts.json"):
            part = StageCounts.from_dict(ctx.store.get_json(key))
            by_stage.setdefault(part.stage, []).append(part)

    def pipeline_order(stage: str) -> tuple[int, str]:
        return next((i for i, name in enumerate(STAGES) if stage.startswith(name)), len(STAGES)), stage

    return [StageCounts.merged(stage, by_stage[stage]) for stage in sorted(by_stage, key=pipeline_order)]


def release_extras(ctx: RunContext) -> ReleaseExtras:
    """The run's outputs a release is made of besides the gated pairs: document pairs, the monolingual
    corpus (sentences of the documents extraction kept, i.e. in the pair's languages and domain) and the
    crawl log (absent when the run ingested WARCs)."""
    pair_keys = stage_outputs(ctx.store, ctx.config.pair, ctx.run_id, "align_documents", prefix="docpairs-")
    document_pairs = read_tables(ctx.store, pair_keys, schemas.DOCUMENT_PAIRS)
    sentence_keys = stage_outputs(ctx.store, ctx.config.pair, ctx.run_id, "extract", suffix=".sentences.parquet")
    monolingual, counts = monolingual_corpus(
        read_tables(ctx.store, sentence_keys, schemas.SENTENCES), [ctx.config.source, ctx.config.target]
    )
    log_key = ctx.key("crawl", "crawl-log.jsonl.gz")
    crawl_log = (
        [json.loads(line) for line in gzip.decompress(ctx.store.get_bytes(log_key)).splitlines() if line.strip()]
        if ctx.store.exists(log_key)
        else []
    )
    return ReleaseExtras(document_pairs, monolingual, counts, crawl_log, ctx.config)


def release_inputs(ctx: RunContext, gated_key: str) -> tuple[pd.DataFrame, list[StageCounts], str, dict[str, Any], ReleaseExtras]:
    """Everything a release of the run is built from, in :func:`~bitextflow.release.publish_release`'s
    argument order after the pair: pairs, counts, run id, gate report, extras (``releases build`` reuses it)."""
    report = ctx.store.get_json(ctx.key("gate", "sentence_pairs.report.json"))
    return read_table(ctx.store, gated_key), collect_counts(ctx), ctx.run_id, report, release_extras(ctx)


def run_release(ctx: RunContext, gated_key: str) -> dict[str, Any]:
    """Publish the gated pairs as the next version of the pair's release and record it in the DVC registry
    (``release.record_in_registry``); returns the release and, when recorded, its registry entry.

    The built files pass the release gate (:mod:`bitextflow.quality.release`) before anything is
    uploaded; files that fail it are kept under the run's ``gate/rejected_release/`` for inspection.
    """
    df, counts, run_id, report, extras = release_inputs(ctx, gated_key)

    def release_gate(directory: Path, version: int) -> None:
        try:
            judge(ctx, "release", release_checks(directory, ctx.config.pair, len(df)))
        except GateFailed:
            ctx.store.put_tree(ctx.key("gate", "rejected_release/"), directory)
            log.error(
                "release v%d failed its gate; its files are at %s", version, ctx.store.uri(ctx.key("gate", "rejected_release/"))
            )
            raise

    info: ReleaseInfo = publish_release(ctx.store, ctx.config.pair, df, counts, run_id, report, extras, verify=release_gate)
    log.info("released %s: %d sentence pairs", info.uri, info.sentence_pairs)
    result = info.to_dict()
    if ctx.config.release.record_in_registry:
        from bitextflow.release.registry import registry_for

        entry = registry_for(ctx.config, ctx.store.settings).record(ctx.store, info)
        log.info("recorded in the DVC registry: %s", entry.get_command)
        result["registry"] = entry.to_dict()
    return result
