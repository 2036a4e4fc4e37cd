"""One DAG per pair config: the stages of bitextflow.pipeline as tasks, mapped over shards.

crawl -> extract[warc shard] -> gate_documents -> align_documents -> align_sentences[document-pair shard]
      -> score[shard] -> classify[shard] -> gate -> release
Shard keys travel as XCom; the data itself stays in S3.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Asset, Param, task

from bitextflow import pipeline
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow_airflow.bicleaner import scored_shards
from bitextflow_airflow.classify_step import classified_shards, runs_as_gpu_step
from bitextflow_airflow.gate import gate_task
from bitextflow_airflow.storage import object_store

DOC_MD = """
### bitextflow: {pair}
Builds the {pair} corpus from the seeds of `{path}` and publishes `releases/{pair}/v<N>/`.
Override any option for one run with the `overrides` param, e.g.
`{{"crawl.max_pages": 200, "crawl.seeds": ["http://127.0.0.1:8765/"]}}`.
Each task logs its counts (in, kept, dropped by reason) and shows them in its XCom tab
(`counts.<shard>`); gate tasks have a **Data Docs** button. The run updates the assets
`bitextflow.{pair}.documents`, `.document_pairs`, `.sentence_pairs` and `.release`.
"""


def _context(config: PairConfig, context: dict[str, Any]) -> pipeline.RunContext:
    overrides = (context.get("params") or {}).get("overrides") or {}
    effective = config.with_overrides(overrides)
    ti = context["ti"]

    def show_counts(shard: str, counts: StageCounts) -> None:
        # XCom is the task instance's own record: the UI's XCom tab lists in/kept/dropped per shard.
        ti.xcom_push(key=f"counts.{shard}", value=counts.to_dict())

    return pipeline.RunContext(effective, object_store(effective.storage.bucket), context["run_id"], on_counts=show_counts)


def stage_assets(config: PairConfig) -> dict[str, Asset]:
    """The assets a pair's run updates, so other DAGs can be scheduled on them (data-aware scheduling).

    Each asset event's ``extra`` names the run and the objects it wrote.
    """
    bucket, pair = config.storage.bucket, config.pair
    assets = {stage: Asset(name=f"bitextflow.{pair}.{stage}", uri=f"s3://{bucket}/{pair}/{stage}") for stage in _ASSET_STAGES}
    assets["release"] = Asset(name=f"bitextflow.{pair}.release", uri=f"s3://{bucket}/releases/{pair}")
    return assets


_ASSET_STAGES = ("documents", "document_pairs", "sentence_pairs")


def _announce(context: dict[str, Any], asset: Asset, run_id: str, written: Any) -> None:
    context["outlet_events"][asset].extra = {"run_id": run_id, "written": written}


def build_pair_dag(config: PairConfig, config_path: Path) -> DAG:
    # Retries ride out a storage or network outage: waits of at least 15, 30 and 60 s (Airflow's
    # exponential backoff adds up to as much again), so an S3 endpoint down for 90 s loses nothing.
    default_args = {
        "retries": 3,
        "retry_delay": timedelta(seconds=15),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(minutes=10),
        "execution_timeout": timedelta(hours=6),
    }
    with DAG(
        dag_id=config.dag_id,
        description=config.description or f"{config.pair} parallel corpus",
        schedule=config.schedule,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        default_args=default_args,
        tags=["bitextflow", config.pair],
        params={"overrides": Param({}, type="object", description="section.field -> value, for this run only")},
        doc_md=DOC_MD.format(pair=config.pair, path=config_path.name),
    ) as dag:
        assets = stage_assets(config)

        @task
        def crawl(**context: Any) -> list[str]:
            return pipeline.run_crawl(_context(config, context))

        @task(max_active_tis_per_dagrun=4)
        def extract(warc_key: str, **context: Any) -> str:
            return pipeline.run_extract(_context(config, context), warc_key)

        @task(outlets=[assets["document_pairs"]])
        def align_documents(documents_keys: list[str], **context: Any) -> list[str]:
            pairs = pipeline.run_align_documents(_context(config, context), list(documents_keys))
            _announce(context, assets["document_pairs"], context["run_id"], pairs)
            return pairs

        @task(max_active_tis_per_dagrun=4)
        def align_sentences(document_pairs_key: str, **context: Any) -> str:
            return pipeline.run_align_sentences(_context(config, context), document_pairs_key)

        @task(max_active_tis_per_dagrun=4)
        def score(sentence_pairs_key: str, **context: Any) -> str:
            return pipeline.run_score(_context(config, context), sentence_pairs_key)

        @task(max_active_tis_per_dagrun=4)
        def classify(scored_key: str, **context: Any) -> str:
            return pipeline.run_classify(_context(config, context), scored_key)

        @gate_task(bucket=config.storage.bucket, pair=config.pair, gate="documents", outlets=[assets["documents"]])
        def gate_documents(documents_keys: list[str], **context: Any) -> list[str]:
            judged = pipeline.run_gate_documents(_context(config, context), list(documents_keys))
            _announce(context, assets["documents"], context["run_id"], judged)
            return judged

        @gate_task(bucket=config.storage.bucket, pair=config.pair, gate="sentence_pairs", outlets=[assets["sentence_pairs"]])
        def gate(classified_keys: list[str], **context: Any) -> str:
            gated = pipeline.run_gate(_context(config, context), list(classified_keys))
            _announce(context, assets["sentence_pairs"], context["run_id"], gated)
            return gated

        @gate_task(bucket=config.storage.bucket, pair=config.pair, gate="release", outlets=[assets["release"]])
        def release(gated_key: str, **context: Any) -> dict[str, Any]:
            info = pipeline.run_release(_context(config, context), gated_key)
            _announce(context, assets["release"], context["run_id"], info)
            return info

        warcs = crawl()
        documents = extract.expand(warc_key=warcs)
        document_pairs = align_documents(gate_documents(documents))
        if config.crawl.train_url_models:  # beside the corpus branch: the next run's smart crawl uses the version

            @task
            def train_url_models(document_pairs_keys: list[str], **context: Any) -> str:
                return pipeline.run_train_url_models(_context(config, context), list(document_pairs_keys))

            train_url_models(document_pairs)
        sentence_pairs = align_sentences.expand(document_pairs_key=document_pairs)
        if pipeline.bicleaner_enabled(config):  # score_rules -> bicleaner (its own environment) -> score
            scored = scored_shards(config, sentence_pairs, _context)
        else:
            scored = score.expand(sentence_pairs_key=sentence_pairs)
        if runs_as_gpu_step(config):  # a domain classifier: one GPU step (worker or pod) for the run's shards
            classified = classified_shards(config, scored, _context)
        else:
            classified = classify.expand(scored_key=scored)
        release(gate(classified))
    return dag
