"""One DAG per pair config: the stages of bitextflow.pipeline as tasks, mapped over shards.

crawl -> extract[warc shard] -> align_documents -> align_sentences[document-pair shard]
      -> score[shard] -> classify[shard] -> gate -> release
Shard keys travel as XCom; the data itself stays in S3.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Param, task

from bitextflow import pipeline
from bitextflow.config import PairConfig
from bitextflow_airflow.storage import object_store

DOC_MD = """
### bitextflow: {pair}
Builds the {pair} corpus from the seeds of `{path}` and publishes `releases/{pair}/v<N>/`.
Override any option for one run with the `overrides` param, e.g.
`{{"crawl.max_pages": 200, "crawl.seeds": ["http://127.0.0.1:8765/"]}}`.
Each task logs its counts (in, kept, dropped by reason).
"""


def _context(config: PairConfig, context: dict[str, Any]) -> pipeline.RunContext:
    overrides = (context.get("params") or {}).get("overrides") or {}
    effective = config.with_overrides(overrides)
    return pipeline.RunContext(effective, object_store(effective.storage.bucket), context["run_id"])


def build_pair_dag(config: PairConfig, config_path: Path) -> DAG:
    default_args = {
        "retries": 2,
        "retry_delay": timedelta(seconds=20),
        "retry_exponential_backoff": True,
        "execution_timeout": timedelta(hours=6),
    }
    with DAG(
        dag_id=config.dag_id,
        description=config.description or f"{config.pair} parallel corpus",
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        default_args=default_args,
        tags=["bitextflow", config.pair],
        params={"overrides": Param({}, type="object", description="section.field -> value, for this run only")},
        doc_md=DOC_MD.format(pair=config.pair, path=config_path.name),
    ) as dag:

        @task
        def crawl(**context: Any) -> list[str]:
            return pipeline.run_crawl(_context(config, context))

        @task(max_active_tis_per_dagrun=4)
        def extract(warc_key: str, **context: Any) -> str:
            return pipeline.run_extract(_context(config, context), warc_key)

        @task
        def align_documents(documents_keys: list[str], **context: Any) -> list[str]:
            return pipeline.run_align_documents(_context(config, context), list(documents_keys))

        @task(max_active_tis_per_dagrun=4)
        def align_sentences(document_pairs_key: str, **context: Any) -> str:
            return pipeline.run_align_sentences(_context(config, context), document_pairs_key)

        @task(max_active_tis_per_dagrun=4)
        def score(sentence_pairs_key: str, **context: Any) -> str:
            return pipeline.run_score(_context(config, context), sentence_pairs_key)

        @task(max_active_tis_per_dagrun=4)
        def classify(scored_key: str, **context: Any) -> str:
            return pipeline.run_classify(_context(config, context), scored_key)

        # A failed expectation is not transient: retrying would only delay the failure.
        @task(retries=0)
        def gate(classified_keys: list[str], **context: Any) -> str:
            return pipeline.run_gate(_context(config, context), list(classified_keys))

        @task
        def release(gated_key: str, **context: Any) -> dict[str, Any]:
            return pipeline.run_release(_context(config, context), gated_key)

        warcs = crawl()
        documents = extract.expand(warc_key=warcs)
        document_pairs = align_documents(documents)
        sentence_pairs = align_sentences.expand(document_pairs_key=document_pairs)
        scored = score.expand(sentence_pairs_key=sentence_pairs)
        classified = classify.expand(scored_key=scored)
        release(gate(classified))
    return dag
