"""GPU-step dispatch (plugins/bitextflow_airflow/dispatch.py): in-process task or KubernetesPodOperator pod.

No Kubernetes API server exists here (no container runtime, nothing to install one from), so these
tests never claim a pod ran. They build the pod exactly as the operator would submit it (with
``in_cluster=False`` and a dummy kubeconfig that points nowhere), serialise it with the Kubernetes
client into the real manifest, and validate that manifest with ``kubernetes-validate --strict``
against the Kubernetes API schema. The step's command itself is exercised on the in-process path,
which runs it through the same CLI parser and entry point in a real ``dag.test()`` run.


The tests of this module against real services; those that need none are tests/unit/test_dispatch.py's.
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from bitextflow.config import load_pair_config
from tests.support import ROOT


def test_in_process_task_runs_the_step_with_the_runs_overrides(s3_env, store):
    """The default path: the task's own callable (what the worker runs) scores this run's shard in S3.

    ``dag.test()`` only runs DAGs of the dags folder, so the task body is called here with the context
    keys it reads (run_id, params); tests/integration/test_dag.py runs the real DAG end to end.
    """
    from airflow.sdk import DAG

    from bitextflow import records
    from bitextflow.storage.layout import stage_key
    from bitextflow.storage.tables import read_table, write_table
    from bitextflow_airflow.dispatch import gpu_step

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    run_id = "manual__dispatch-in-process"
    pairs = [
        ("Install the package before configuring the system.", "Instale el paquete antes de configurar el sistema."),
        ("apt-get install foo bar baz qux", "apt-get install foo bar baz qux"),  # identical sides
        (  # length ratio 1.86: kept under the config's 2.5, rejected under the run's override 1.5
            "Install the package before configuring the system.",
            "Instale el paquete antes de configurar el sistema operativo completo de la maquina principal.",
        ),
    ]
    frame = pd.DataFrame(
        {
            "url_a": "http://site/en/a.html", "url_b": "http://site/es/a.html", "lang_a": "en", "lang_b": "es",
            "text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs], "alignment_score": 0.9,
            "rule_tags": "", "domain_relevance": 0.0, "domain_terms": "", "pair_hash": ["h1", "h2", "h3"],
        }
    )  # fmt: skip
    write_table(
        store,
        stage_key(config.pair, run_id, "align_sentences", "sentpairs-part-00000-00000.parquet"),
        frame,
        records.SENTENCE_PAIRS,
    )

    with DAG("dispatch_in_process", start_date=datetime(2026, 1, 1), schedule=None):
        operator = gpu_step("score", config)
    outputs = operator.python_callable(run_id=run_id, params={"overrides": {"score.max_length_ratio": 1.5}})

    kept_key = stage_key(config.pair, run_id, "score", "sentpairs-part-00000-00000.parquet")
    assert outputs == [kept_key]
    assert list(read_table(store, kept_key)["text_a"]) == [pairs[0][0]]
    rejected = read_table(store, stage_key(config.pair, run_id, "score", "sentpairs-part-00000-00000.rejected.parquet"))
    assert list(rejected["rule_tags"]) == ["identical_sides", "length_ratio"]
