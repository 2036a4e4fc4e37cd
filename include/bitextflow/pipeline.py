"""The stages as functions of (run context, input keys) -> output keys: one function per Airflow task.

The DAG factory maps these over shards and the CLI calls them in order; neither holds stage logic.
Keys follow ``<pair>/<run_id>/<stage>/<shard>.<ext>`` (DESIGN.md section 3); every stage also writes
``<shard>.counts.json`` next to its output, which the release aggregates.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from bitextflow import schemas
from bitextflow.align import documents as doc_align
from bitextflow.align import sentences as sent_align
from bitextflow.align.dictionary import load_dictionary
from bitextflow.align.lexical import sentence_aligner
from bitextflow.classify import relevance
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.checkpoint import ObjectStoreCheckpoints
from bitextflow.crawl.crawler import Crawler, CrawlLogEntry
from bitextflow.crawl.scoring import PairContext
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import StageError
from bitextflow.extract import extract_shard
from bitextflow.quality import check_sentence_pairs, enforce
from bitextflow.release import ReleaseInfo, publish_release
from bitextflow.score import hard_rule_violations, normalise_for_comparison
from bitextflow.storage import ObjectStore, stage_key
from bitextflow.storage.tables import read_table, read_tables, write_table

log = logging.getLogger(__name__)

STAGES = ("crawl", "extract", "align_documents", "align_sentences", "score", "classify", "gate", "release")


@dataclass(frozen=True)
class RunContext:
    config: PairConfig
    store: ObjectStore
    run_id: str

    def key(self, stage: str, name: str) -> str:
        return stage_key(self.config.pair, self.run_id, stage, name)

    def write_counts(self, stage: str, shard: str, counts: StageCounts) -> None:
        self.store.put_json(self.key(stage, f"{shard}.counts.json"), counts.to_dict())
        log.info("%s [%s]", counts.summary(), shard)


def shard_name(key: str) -> str:
    """``.../crawl/crawl-00003.warc.gz`` -> ``crawl-00003``: output shards keep their input's name."""
    return Path(key).name.split(".")[0]


# -- crawl -------------------------------------------------------------------------------------------
_WARC_SHARD = re.compile(r"crawl-\d{5}\.warc\.gz$")


def run_crawl(ctx: RunContext) -> list[str]:
    """Crawl from the seeds; returns the WARC shard keys (the shards of the extract stage).

    Resumable: the crawl checkpoints to ``crawl/`` and a rerun of the task with the same run id
    continues from the last checkpoint (or, if the crawl had finished, returns its shards).
    """
    ctx.store.ensure_bucket()
    config = ctx.config.crawl

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
            log.info("crawl: %d pages fetched, %d waiting, %.0f s", crawler.fetched, len(crawler.frontier), time.monotonic() - started)

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would bury the task log
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


# -- extract -----------------------------------------------------------------------------------------
def run_extract(ctx: RunContext, warc_key: str) -> str:
    """One WARC shard -> documents, rejected documents and sentences Parquet; returns the documents key.

    The WARC is streamed from a local copy (disk, not memory); see :mod:`bitextflow.extract.shard`.
    """
    shard = shard_name(warc_key)
    sentences_key = ctx.key("extract", f"{shard}.sentences.parquet")
    with tempfile.TemporaryDirectory(prefix="bitextflow-extract-") as tmp:
        local = ctx.store.download_file(warc_key, Path(tmp) / "shard.warc.gz")
        result = extract_shard(
            local, Path(tmp) / "out", warc_key=warc_key, sentences_key=sentences_key,
            languages={ctx.config.source, ctx.config.target}, config=ctx.config.extract, domain=ctx.config.domain,
        )  # fmt: skip
        parquet = "application/vnd.apache.parquet"
        ctx.store.put_file(sentences_key, result.sentences, parquet)
        ctx.store.put_file(ctx.key("extract", f"{shard}.documents.rejected.parquet"), result.rejected, parquet)
        documents_key = ctx.store.put_file(ctx.key("extract", f"{shard}.documents.parquet"), result.documents, parquet)
    ctx.write_counts("extract", f"{shard}.documents", result.document_counts)
    ctx.write_counts("extract", f"{shard}.sentences", result.sentence_counts)
    return documents_key


# -- align -------------------------------------------------------------------------------------------
def run_align_documents(ctx: RunContext, documents_keys: list[str]) -> list[str]:
    """All documents of the run -> document pairs, split into shards for sentence alignment."""
    frame = read_tables(ctx.store, documents_keys, schemas.DOCUMENTS)
    src, tgt = ctx.config.source, ctx.config.target
    counts = StageCounts("align_documents")
    in_pair = frame[frame["language"].isin([src, tgt])]
    counts.seen(len(in_pair))
    pairs, unmatched = doc_align.align_by_url(
        (doc_align.Document(r.doc_id, r.url, r.language) for r in in_pair.itertuples()), src, tgt
    )
    for reason, n in unmatched.items():
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
    size = ctx.config.align.document_pairs_per_shard
    keys = [
        write_table(
            ctx.store,
            ctx.key("align_documents", f"docpairs-{i // size:05d}.parquet"),
            pd.DataFrame(rows[i : i + size]),
            schemas.DOCUMENT_PAIRS,
        )
        for i in range(0, len(rows), size)
    ]
    ctx.write_counts("align_documents", "align_documents", counts)
    if not keys:
        raise StageError(
            f"no {src}-{tgt} document pairs among {len(in_pair)} documents in the pair's languages; "
            "the crawl found no translated pages (check seeds and crawl.max_pages)"
        )
    return keys


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
    dictionary = load_dictionary(ctx.config.source, ctx.config.target) if method == "hunalign" else None
    encoder = None
    if method == "vecalign":
        from bitextflow.models import SentenceEncoder  # torch is imported only by the stages that need it

        encoder = SentenceEncoder.from_path(ctx.config.align.encoder_model)
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
    key = write_table(ctx.store, ctx.key("align_sentences", f"{shard}.parquet"), pd.DataFrame(rows), schemas.SENTENCE_PAIRS)
    ctx.write_counts("align_sentences", shard, counts)
    return key


# -- score and classify ------------------------------------------------------------------------------
def run_score(ctx: RunContext, sentence_pairs_key: str) -> str:
    """Hard rules: passing pairs go on; the others are kept aside under ``score/<shard>.rejected``."""
    shard = shard_name(sentence_pairs_key)
    frame = read_table(ctx.store, sentence_pairs_key)
    counts = StageCounts("score")
    counts.seen(len(frame))
    tags = [";".join(hard_rule_violations(a, b, ctx.config.score)) for a, b in zip(frame["text_a"], frame["text_b"], strict=True)]
    frame["rule_tags"] = tags
    rejected = frame[frame["rule_tags"] != ""]
    for rule_list in rejected["rule_tags"]:
        for tag in rule_list.split(";"):
            counts.drop(tag)
    kept = frame[frame["rule_tags"] == ""]
    counts.keep(len(kept))
    write_table(ctx.store, ctx.key("score", f"{shard}.rejected.parquet"), rejected, schemas.SENTENCE_PAIRS)
    key = write_table(ctx.store, ctx.key("score", f"{shard}.parquet"), kept, schemas.SENTENCE_PAIRS)
    ctx.write_counts("score", shard, counts)
    return key


def run_classify(ctx: RunContext, scored_key: str) -> str:
    """Domain relevance per pair (larger of the two sides); pairs under ``domain.min_relevance`` dropped."""
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
    kept = frame[frame["domain_relevance"] >= domain.min_relevance]
    counts.drop("below_min_relevance", len(frame) - len(kept))
    counts.keep(len(kept))
    key = write_table(ctx.store, ctx.key("classify", f"{shard}.parquet"), kept, schemas.SENTENCE_PAIRS)
    ctx.write_counts("classify", shard, counts)
    return key


# -- gate and release --------------------------------------------------------------------------------
def run_gate(ctx: RunContext, classified_keys: list[str]) -> str:
    """Merge shards, drop exact duplicate pairs (counted), validate; fails the run on a violation."""
    frame = read_tables(ctx.store, classified_keys, schemas.SENTENCE_PAIRS)
    counts = StageCounts("gate")
    counts.seen(len(frame))
    merged = frame.drop_duplicates("pair_hash", keep="first").reset_index(drop=True)
    counts.drop("duplicate_pair", len(frame) - len(merged))
    counts.keep(len(merged))
    ctx.write_counts("gate", "gate", counts)
    report = check_sentence_pairs(merged, ctx.config.gate, ctx.config.source, ctx.config.target)
    ctx.store.put_json(ctx.key("gate", "report.json"), report.to_dict())
    # The candidate is written even when the gate fails, so the offending data can be inspected.
    key = write_table(ctx.store, ctx.key("gate", "sentence_pairs.parquet"), merged, schemas.SENTENCE_PAIRS)
    enforce(report)
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


def run_release(ctx: RunContext, gated_key: str) -> dict[str, Any]:
    """Publish the gated pairs as the next version of the pair's release."""
    frame = read_table(ctx.store, gated_key)
    report = ctx.store.get_json(ctx.key("gate", "report.json"))
    info: ReleaseInfo = publish_release(ctx.store, ctx.config.pair, frame, collect_counts(ctx), ctx.run_id, report)
    log.info("released %s: %d sentence pairs", info.uri, info.sentence_pairs)
    return info.to_dict()
