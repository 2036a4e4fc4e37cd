"""The API server routes that show a gate's Data Docs (``/bitextflow/data-docs/<bucket>/<key>``) and the report of
the release a run published (``/bitextflow/reports/<bucket>/<pair>/<run id as a key part>``).

Data Docs and reports are static HTML in S3 (see :func:`bitextflow.stages.gating.judge`); serving them through
the API server lets the "Data Docs" and "Release report" buttons of a task open them in the browser with the
server's own S3 connection, instead of handing out credentials or presigned URLs, and the report's links to
each gate's Data Docs work there. Airflow does not authenticate a plugin's FastAPI app by itself, so the routes
do what Airflow's own API does:

- the caller must be signed in (the UI's session cookie or a ``Bearer`` token), and allowed by Airflow's
  auth manager to read the task instances of the pair's DAG;
- only the buckets and pairs of this deployment's pair configs are served, and within them only keys inside
  a run's ``gate/data_docs/`` folder and the releases' reports: the routes are a window on quality reports,
  not on the corpus;
- a page that is not there is a plain 404, with no storage endpoint, key id or error text in it;
- every answer is sandboxed (:data:`PAGE_HEADERS`): the pages hold values from crawled web pages, which Great
  Expectations writes into its HTML unescaped, and they are served on the origin of the Airflow UI, where a script
  would act with the viewer's session. No script runs on them, theirs or an injected one, and nothing is loaded
  from another site (Great Expectations links nine scripts and its styles from public CDNs): the pages keep their
  tables, text, inline and local styles and images, and lose the collapsible sections and charts that need scripts.
"""

from __future__ import annotations

import logging
import mimetypes
from typing import Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import FastAPI, HTTPException, Request, Response

from bitextflow.catalog.releases import list_releases, release_prefix
from bitextflow.config import discover_pair_configs, load_pair_config
from bitextflow.errors import BitextflowError, StorageError
from bitextflow.settings import pairs_dir
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import text_of_key_part
from bitextflow_airflow.storage import server_object_store

log = logging.getLogger(__name__)
app = FastAPI(title="bitextflow Data Docs", docs_url=None, redoc_url=None, openapi_url=None)
_NOT_FOUND = "no such Data Docs page"
_NO_REPORT = "no such report"

#: Headers of every answer of the routes. ``sandbox`` (without ``allow-scripts``) gives the page an origin of its own
#: and runs no script at all, inline or loaded; ``default-src 'none'`` loads nothing the lines after it do not name,
#: so the CDN scripts and styles of Great Expectations' pages are never fetched (the viewer's browser tells no third
#: party what it reads, and a CDN that serves other code changes nothing). Blocking them by policy rather than
#: rewriting the pages also covers markup that a crawled value injects, which no rewrite of known tags would catch.
PAGE_HEADERS = {
    "Content-Security-Policy": "; ".join(
        (
            "sandbox",
            "default-src 'none'",
            "img-src 'self' data:",
            "style-src 'self' 'unsafe-inline'",
            "font-src 'self' data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'self'",
        )
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def served_dags() -> dict[tuple[str, str], str]:
    """(bucket, pair) -> DAG id of every pair config this deployment runs."""
    configs = (load_pair_config(path) for path in discover_pair_configs(pairs_dir()))
    return {(config.storage.bucket, config.pair): config.dag_id for config in configs}


@app.middleware("http")
async def sandboxed(request: Request, call_next: Any) -> Response:
    """Every answer (pages, 401/403/404 errors) with :data:`PAGE_HEADERS`."""
    response = await call_next(request)
    response.headers.update(PAGE_HEADERS)
    return response


@app.get("/data-docs/{bucket}/{key:path}")
def data_docs_page(bucket: str, key: str, user: GetUserDep) -> Response:
    if "/gate/data_docs/" not in key or ".." in key.split("/"):
        raise HTTPException(status_code=404, detail=_NOT_FOUND)
    store = _readable(bucket, key.split("/", 1)[0], user)
    try:
        body = store.get_bytes(key)
    except BitextflowError as exc:
        log.info("Data Docs page %s/%s not served: %s", bucket, key, exc)  # the server's log, not the caller's answer
        raise HTTPException(status_code=404, detail=_NOT_FOUND) from None
    return Response(body, media_type=mimetypes.guess_type(key)[0] or "application/octet-stream")


@app.get("/reports/{bucket}/{pair}/{run}")
def release_report(bucket: str, pair: str, run: str, user: GetUserDep) -> Response:
    """The report of the release that run ``run`` (its storage key part) published."""
    store = _readable(bucket, pair, user)
    try:
        run_id = text_of_key_part(run)
    except StorageError:
        raise HTTPException(status_code=400, detail="not a run id as the report links write it") from None
    try:
        published = [info for info in list_releases(store, pair) if info.run_id == run_id]
        if not published:
            raise HTTPException(status_code=404, detail=f"run {run_id} published no release of {pair}")
        body = store.get_bytes(release_prefix(pair, published[-1].version) + "report.html")
    except BitextflowError as exc:
        log.info("report of %s %s in %s not served: %s", pair, run_id, bucket, exc)
        raise HTTPException(status_code=404, detail=_NO_REPORT) from None
    return Response(body, media_type="text/html")


def _readable(bucket: str, pair: str, user: Any) -> ObjectStore:
    """The bucket's store, if it holds one of this deployment's pairs and ``user`` may read that pair's DAG."""
    dag_id = served_dags().get((bucket, pair))
    if dag_id is None:
        raise HTTPException(status_code=404, detail=_NOT_FOUND)
    allowed = get_auth_manager().is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.TASK_INSTANCE, details=DagDetails(id=dag_id), user=user
    )
    if not allowed:
        raise HTTPException(status_code=403, detail=f"not allowed to read the task instances of {dag_id}")
    return server_object_store(bucket)
