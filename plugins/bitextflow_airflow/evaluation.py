"""The API server's page for judging a release by hand (``/bitextflow/evaluation/``; docs/evaluation.md).

- ``GET /`` lists this deployment's pairs the user may read and their releases;
- ``GET /<bucket>/<pair>?version=&size=&seed=`` is the labelling page (its script is ``/_static/evaluation.js``);
- ``GET /_api/<bucket>/<pair>`` gives the sample, its labels and their estimate as JSON;
- ``POST /_api/<bucket>/<pair>/labels`` stores one label (JSON ``{"item", "label", "comment"}``, ``version``,
  ``size`` and ``seed`` in the query), answering the new estimate;
- ``GET /_api/<bucket>/<pair>/export?format=tsv|jsonl`` exports the release's labels.

Security, as for the Data Docs routes (:mod:`bitextflow_airflow.data_docs`) and more, since this page runs a script
on the Airflow UI's origin over text from the web:

- reading needs the signed-in user to be allowed to GET the pair DAG's task instances; labelling needs PUT on the
  DAG as well, and the ``X-CSRF-Token`` header the page was served with (an HMAC of the user's id keyed by the API
  server's JWT secret, compared in constant time); the annotator is the signed-in user's name, never the request's;
- every answer carries :data:`HEADERS`: scripts only from this app (``script-src 'self'``, no inline script or
  handler), nothing loaded from elsewhere, and Trusted Types required, so the script cannot assign markup strings
  to ``innerHTML`` and friends at all; the script builds the page with ``textContent``, and the server escapes
  everything it writes into HTML;
- a malformed request (bad JSON, unknown label or item, a version that is not an integer, an unknown pair) is a
  4xx, and storage errors are logged, not shown.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import GetUserDep
from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse

from bitextflow.catalog.evaluations import add_label, find_release, labels_jsonl, labels_tsv, read_labels, release_sample
from bitextflow.catalog.releases import list_releases
from bitextflow.errors import BitextflowError, StorageError
from bitextflow.release.evaluation import LABEL_VALUES, estimate
from bitextflow.release.evaluation_sample import DEFAULT_SAMPLE_SIZE, DEFAULT_SEED, Sample
from bitextflow.storage import ObjectStore
from bitextflow.text.scripts import bcp47
from bitextflow_airflow import data_docs
from bitextflow_airflow.storage import server_object_store

log = logging.getLogger(__name__)
app = FastAPI(title="bitextflow evaluation", docs_url=None, redoc_url=None, openapi_url=None)
STATIC = Path(__file__).with_name("evaluation_static")
_STATIC_TYPES = {"evaluation.js": "text/javascript; charset=utf-8", "evaluation.css": "text/css; charset=utf-8"}
MAX_SAMPLE_SIZE = 2000
MAX_COMMENT = 2000
_NOT_FOUND = "no such pair"

HEADERS = {
    "Content-Security-Policy": "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "img-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'self'",
            "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        )
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@app.middleware("http")
async def protected(request: Request, call_next: Any) -> Response:
    """Every answer (pages, JSON, errors) with :data:`HEADERS`."""
    response = await call_next(request)
    response.headers.update(HEADERS)
    return response


def csrf_token(user: Any) -> str:
    """The token a page for ``user`` carries and a label must send back: an HMAC of the user's id."""
    from airflow.api_fastapi.auth.tokens import get_signing_key

    key = hmac.new(get_signing_key("api_auth", "jwt_secret").encode(), b"bitextflow-evaluation-csrf", hashlib.sha256)
    return hmac.new(key.digest(), str(user.get_id()).encode("utf-8"), hashlib.sha256).hexdigest()


def _authorized(dag_id: str, user: Any, method: str) -> bool:
    entity = DagAccessEntity.TASK_INSTANCE if method == "GET" else None
    return get_auth_manager().is_authorized_dag(method=method, access_entity=entity, details=DagDetails(id=dag_id), user=user)


def _readable(bucket: str, pair: str, user: Any, method: str = "GET") -> tuple[ObjectStore, str]:
    dag_id = data_docs.served_dags().get((bucket, pair))
    if dag_id is None:
        raise HTTPException(status_code=404, detail=_NOT_FOUND)
    if not _authorized(dag_id, user, "GET"):
        raise HTTPException(status_code=403, detail=f"not allowed to read the task instances of {dag_id}")
    if method != "GET" and not _authorized(dag_id, user, method):
        raise HTTPException(status_code=403, detail=f"not allowed to edit {dag_id}, which labelling needs")
    return server_object_store(bucket), dag_id


def _version(version: str | None) -> int | None:
    if version in (None, "", "latest"):
        return None
    try:
        return int(version)
    except ValueError:
        raise HTTPException(status_code=400, detail="version is an integer (or latest)") from None


@functools.lru_cache(maxsize=16)
def _cached_sample(store: ObjectStore, bucket: str, pair: str, version: int, size: int, seed: int) -> Sample:
    """A release is immutable once published, so its sample is too."""
    release = next(r for r in list_releases(store, pair) if r.version == version)
    return release_sample(store, release, size, seed)


def _context(bucket: str, pair: str, user: Any, version: str | None, size: int, seed: int, method: str = "GET"):
    store, _ = _readable(bucket, pair, user, method)
    try:
        release = find_release(store, pair, _version(version))
    except StorageError as exc:
        log.info("evaluation of %s in %s not served: %s", pair, bucket, exc)
        raise HTTPException(status_code=404, detail=_NOT_FOUND) from None
    except BitextflowError as exc:  # which versions there are: the pair's own, no storage detail
        raise HTTPException(status_code=404, detail=str(exc)) from None
    try:
        sample = _cached_sample(_StoreKey(store, bucket), bucket, pair, release.version, size, seed)
    except BitextflowError as exc:
        log.info("sample of %s v%s in %s not drawn: %s", pair, release.version, bucket, exc)
        raise HTTPException(status_code=404, detail="the release has no sample to draw") from None
    return store, release, sample


class _StoreKey:
    """A store hashed by its bucket (for the sample cache; the store itself is made anew per request)."""

    def __init__(self, store: ObjectStore, bucket: str) -> None:
        self.store, self.bucket = store, bucket

    def __hash__(self) -> int:
        return hash(self.bucket)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _StoreKey) and other.bucket == self.bucket

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def _state(store: ObjectStore, release: Any, sample: Sample, user: Any) -> dict[str, Any]:
    labels = [lb for lb in read_labels(store, release) if lb.seed == sample.seed and lb.size == sample.size]
    name = user.get_name()
    mine = {lb.item: lb.label for lb in labels if lb.annotator == name}  # oldest first: the latest wins
    versions = [info.version for info in list_releases(store, release.pair)]
    return {
        "pair": release.pair, "version": release.version, "versions": versions, "size": sample.size,
        "seed": sample.seed, "annotator": name, "items": [item.to_dict() for item in sample.items],
        "labels": [lb.to_dict() for lb in labels], "mine": mine,
        "evaluation": estimate(sample, labels, release.pair, release.version).to_dict(),
    }  # fmt: skip


SizeQuery = Query(DEFAULT_SAMPLE_SIZE, ge=1, le=MAX_SAMPLE_SIZE)
SeedQuery = Query(DEFAULT_SEED, ge=0, le=2**32 - 1)


@app.get("/_static/{name}")
def static(name: str) -> Response:
    if name not in _STATIC_TYPES:
        raise HTTPException(status_code=404, detail="no such file")
    return Response((STATIC / name).read_bytes(), media_type=_STATIC_TYPES[name])


@app.get("/_api/{bucket}/{pair}")
def sample_state(
    bucket: str, pair: str, user: GetUserDep, version: str | None = None, size: int = SizeQuery, seed: int = SeedQuery
) -> dict[str, Any]:
    store, release, sample = _context(bucket, pair, user, version, size, seed)
    return _state(store, release, sample, user)


@app.post("/_api/{bucket}/{pair}/labels")
async def post_label(
    bucket: str, pair: str, request: Request, user: GetUserDep, version: str | None = None,
    size: int = SizeQuery, seed: int = SeedQuery,
) -> dict[str, Any]:  # fmt: skip
    _readable(bucket, pair, user, "PUT")
    if not hmac.compare_digest(request.headers.get("x-csrf-token", ""), csrf_token(user)):
        raise HTTPException(status_code=403, detail="missing or wrong X-CSRF-Token: reload the page")
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        raise HTTPException(status_code=400, detail="the body is JSON: {item, label, comment}") from None
    if not isinstance(body, dict):
        raise HTTPException(status_code=400, detail="the body is a JSON object: {item, label, comment}")
    item, value, comment = body.get("item"), body.get("label"), body.get("comment") or ""
    if value not in LABEL_VALUES:
        raise HTTPException(status_code=400, detail=f"label is one of {', '.join(LABEL_VALUES)}")
    if not isinstance(item, str) or not isinstance(comment, str) or len(comment) > MAX_COMMENT:
        raise HTTPException(status_code=400, detail=f"item is a string, comment a string of at most {MAX_COMMENT}")
    store, release, sample = _context(bucket, pair, user, version, size, seed, "PUT")
    if sample.item(item) is None:
        raise HTTPException(status_code=404, detail="no such pair in this sample")
    add_label(store, release, sample, item, value, user.get_name(), comment)
    return _state(store, release, sample, user)


@app.get("/_api/{bucket}/{pair}/export")
def export(bucket: str, pair: str, user: GetUserDep, version: str | None = None, format: str = "tsv") -> Response:
    if format not in ("tsv", "jsonl"):
        raise HTTPException(status_code=400, detail="format is tsv or jsonl")
    store, _ = _readable(bucket, pair, user)
    try:
        release = find_release(store, pair, _version(version))
        labels = read_labels(store, release)
    except StorageError as exc:
        log.info("labels of %s in %s not exported: %s", pair, bucket, exc)
        raise HTTPException(status_code=404, detail=_NOT_FOUND) from None
    except BitextflowError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    name = f"{pair}-v{release.version}-labels.{format}"
    body, media = (
        (labels_tsv(labels), "text/tab-separated-values") if format == "tsv" else (labels_jsonl(labels), "application/x-ndjson")
    )
    return Response(body, media_type=f"{media}; charset=utf-8", headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _page(request: Request, title: str, body: str, attributes: str = "") -> HTMLResponse:
    root = escape(request.scope.get("root_path", ""), quote=True)
    return HTMLResponse(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="{root}/_static/evaluation.css">'
        f"</head><body{attributes}>{body}</body></html>"
    )


@app.get("/", response_class=HTMLResponse)
def index(request: Request, user: GetUserDep) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    rows = []
    for (bucket, pair), dag_id in sorted(data_docs.served_dags().items()):
        if not _authorized(dag_id, user, "GET"):
            continue
        try:
            versions = [info.version for info in list_releases(server_object_store(bucket), pair)]
        except BitextflowError as exc:
            log.info("releases of %s in %s not listed: %s", pair, bucket, exc)
            versions = []
        base = f"{root}/{quote(bucket, safe='')}/{quote(pair, safe='')}"
        links = " ".join(
            f'<a href="{escape(base + "?" + urlencode({"version": v}), quote=True)}">v{v}</a>' for v in reversed(versions)
        )
        rows.append(f"<tr><td>{escape(pair)}</td><td>{escape(bucket)}</td><td>{links or 'no release yet'}</td></tr>")
    table = "".join(rows) or '<tr><td colspan="3">no pair you may read</td></tr>'
    body = (
        "<h1>Evaluate a release</h1><p>Pick a pair and a version to label a sample of its sentence pairs.</p>"
        f"<table><thead><tr><th>pair</th><th>bucket</th><th>releases</th></tr></thead><tbody>{table}</tbody></table>"
    )
    return _page(request, "Evaluate a release", body)


@app.get("/{bucket}/{pair}", response_class=HTMLResponse)
def page(
    bucket: str, pair: str, request: Request, user: GetUserDep, version: str | None = None,
    size: int = SizeQuery, seed: int = SeedQuery,
) -> HTMLResponse:  # fmt: skip
    store, release, sample = _context(bucket, pair, user, version, size, seed)
    root = request.scope.get("root_path", "")
    api = f"{root}/_api/{quote(bucket, safe='')}/{quote(pair, safe='')}"
    query = urlencode({"version": release.version, "size": size, "seed": seed})
    data = {
        "api": api, "query": query, "csrf": csrf_token(user), "page": f"{root}/{quote(bucket, safe='')}/{quote(pair, safe='')}",
        "index": f"{root}/", "size": str(size), "seed": str(seed),
    }  # fmt: skip
    attributes = "".join(f' data-{name}="{escape(value, quote=True)}"' for name, value in data.items())
    # each side's language, so a browser draws its characters as that language writes them (Traditional Chinese,
    # Japanese) and its direction as the text's own
    lang_a, _, lang_b = pair.partition("-")
    side_a, side_b = (f'lang="{escape(bcp47(code), quote=True)}" dir="auto"' for code in (lang_a, lang_b))
    title = f"Evaluate {pair} v{release.version}"
    body = f"""<header><h1>{escape(title)}</h1>
<nav><a href="{escape(root, quote=True)}/">all pairs</a>
<label>version <select id="version"></select></label>
<a href="{escape(api + "/export?" + urlencode({"version": release.version, "format": "tsv"}), quote=True)}">labels as TSV</a>
<a href="{escape(api + "/export?" + urlencode({"version": release.version, "format": "jsonl"}), quote=True)}">labels as JSONL</a></nav>
<p id="progress" aria-live="polite">loading</p><progress id="bar" max="{sample.size}" value="0"></progress>
<p id="status" role="alert"></p></header>
<main><section id="pair"><div class="side"><h2>A</h2><p class="url" id="url_a"></p><p class="text" id="text_a" {side_a}></p></div>
<div class="side"><h2>B</h2><p class="url" id="url_b"></p><p class="text" id="text_b" {side_b}></p></div>
<p id="meta"></p><table id="scores"></table></section>
<section id="controls"><button type="button" id="good">good (g)</button> <button type="button" id="bad">bad (b)</button>
<button type="button" id="unsure">not sure (u)</button> <button type="button" id="previous">previous (&larr;)</button>
<button type="button" id="next">next (&rarr;)</button>
<label>comment <input id="comment" type="text" maxlength="{MAX_COMMENT}" autocomplete="off"></label></section>
<section id="estimate"><h2>Estimate</h2><p id="overall"></p><p id="agreement"></p>
<h3>Per score band</h3><table id="per_band"></table><h3>Per site</h3><table id="per_site"></table>
<h3>Threshold curve</h3><div class="curve"><table id="curve"></table></div></section></main>
<script src="{escape(root, quote=True)}/_static/evaluation.js"></script>"""
    return _page(request, title, body, attributes)
