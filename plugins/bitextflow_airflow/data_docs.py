"""The API server route that shows a gate's Data Docs: ``/bitextflow/data-docs/<bucket>/<key>``.

Data Docs are static HTML in S3 (see :func:`bitextflow.stages.gating.judge`); serving them through the
API server lets the "Data Docs" button of a gate task open them in the browser with the server's own
S3 connection, instead of handing out credentials or presigned URLs. Only keys inside a run's
``gate/data_docs/`` folder are served: the route is a window on quality reports, not on the corpus.
The route inherits the API server's network exposure (the local stack binds it to 127.0.0.1).
"""

from __future__ import annotations

import mimetypes

from fastapi import FastAPI, HTTPException, Response

from bitextflow.errors import StorageError
from bitextflow_airflow.storage import server_object_store

app = FastAPI(title="bitextflow Data Docs", docs_url=None, redoc_url=None, openapi_url=None)


@app.get("/data-docs/{bucket}/{key:path}")
def data_docs_page(bucket: str, key: str) -> Response:
    if "/gate/data_docs/" not in key or ".." in key.split("/"):
        raise HTTPException(status_code=404, detail="only Data Docs of a run's gates are served here")
    try:
        body = server_object_store(bucket).get_bytes(key)
    except StorageError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    return Response(body, media_type=mimetypes.guess_type(key)[0] or "application/octet-stream")
