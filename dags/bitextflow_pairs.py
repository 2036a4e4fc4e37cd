"""DAG factory: one DAG ``bitextflow__<src>_<tgt>`` per include/pairs/*.yaml, and one per model step it enables
(``..__train_domain`` with ``domain.training``).

An invalid pair config stops parsing of this file with a one-line ConfigError naming the file, the
field and the fix (see it in the UI's import errors or with `bitextflow validate`).
"""

from __future__ import annotations

import os
from pathlib import Path

from bitextflow.config import discover_pair_configs, load_pair_config
from bitextflow.stages.registry import REGISTRY
from bitextflow_airflow.pair_dag import build_pair_dag
from bitextflow_airflow.training_dag import build_model_step_dag

# The pair configs of a deployment sit beside its DAGs folder (include/pairs), unless named.
PAIRS_DIR = Path(os.environ.get("BITEXTFLOW_PAIRS_DIR") or Path(__file__).resolve().parent.parent / "include" / "pairs")

for _path in discover_pair_configs(PAIRS_DIR):
    _config = load_pair_config(_path)
    globals()[_config.dag_id] = build_pair_dag(_config, _path)
    for _step in REGISTRY.model_steps(_config):
        _dag = build_model_step_dag(_config, _path, _step)
        globals()[_dag.dag_id] = _dag
