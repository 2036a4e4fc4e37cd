"""The API server route that shows a gate's Data Docs: ``/bitextflow/data-docs/<bucket>/<key>``.

Data Docs are static HTML in S3 (see :func:`bitextflow.stages.gating.judge`); serving them through the
API server lets the "Data Docs" button of a gate task open them in the browser with the server's own
S3 connection, instead of handing out credentials or presigned URLs. Airflow does not authenticate a
plugin's FastAPI app by itself, so the route does what Airflow's own API does:

- the caller must be signed in (the UI's session cookie or a ``Bearer`` token), and allowed by Airflow's
  auth manager to read the task instances of the pair's DAG;
- only the buckets and pairs of this deployment's pair configs are served, and within them only keys inside
  a run's ``gate/data_docs/`` folder: the route is a window on quality reports, not on the corpus;
- a page that is not there is a plain 404, with no storage endpoint, key id or error text in it.
"""

from __future__ import annotations

import logging
import mimetypes

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import FastAPI, HTTPException, Response

from bitextflow.config import discover_pair_configs, load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.settings import pairs_dir
from bitextflow_airflow.storage import server_object_store

log = logging.getLogger(__name__)
app = FastAPI(title="bitextflow Data Docs", docs_url=None, redoc_url=None, openapi_url=None)
_NOT_FOUND = "no such Data Docs page"


def served_dags() -> dict[tuple[str, str], str]:
    """(bucket, pair) -> DAG id of every pair config this deployment runs."""
    configs = (load_pair_config(path) for path in discover_pair_configs(pairs_dir()))
    return {(config.storage.bucket, config.pair): config.dag_id for config in configs}


@app.get("/data-docs/{bucket}/{key:path}")
def data_docs_page(bucket: str, key: str, user: GetUserDep) -> Response:
    dag_id = served_dags().get((bucket, key.split("/", 1)[0]))
    if dag_id is None or "/gate/data_docs/" not in key or ".." in key.split("/"):
        raise HTTPException(status_code=404, detail=_NOT_FOUND)
    allowed = get_auth_manager().is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.TASK_INSTANCE, details=DagDetails(id=dag_id), user=user
    )
    if not allowed:
        raise HTTPException(status_code=403, detail=f"not allowed to read the task instances of {dag_id}")
    try:
        body = server_object_store(bucket).get_bytes(key)
    except BitextflowError as exc:
        log.info("Data Docs page %s/%s not served: %s", bucket, key, exc)  # the server's log, not the caller's answer
        raise HTTPException(status_code=404, detail=_NOT_FOUND) from None
    return Response(body, media_type=mimetypes.guess_type(key)[0] or "application/octet-stream")
