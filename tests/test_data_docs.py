"""Gate results and Data Docs land in S3, the API server route serves them, gate tasks link to them."""

from __future__ import annotations

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from bitextflow import records
from bitextflow.config import PairConfig
from bitextflow.errors import GateFailed
from bitextflow.quality import document_pairs_check
from bitextflow.stages.base import RunContext
from bitextflow.stages.gating import judge
from bitextflow.storage.layout import data_docs_key

RUN_ID = "manual__2026-11-22T20:00:00+00:00"


def one_sided_pairs() -> pd.DataFrame:
    return pd.DataFrame(
        {"doc_id_a": ["a1", "a1"], "doc_id_b": ["b1", "b2"], "url_a": ["u1", "u1"], "url_b": ["v1", "v2"],
         "method": "url", "score": [1.0, 0.9], "partition": 0},
        columns=records.DOCUMENT_PAIRS.names,
    )  # fmt: skip


@pytest.fixture
def judged(store, pair_config: PairConfig) -> RunContext:
    """A run whose document-pairs gate failed (one document in two pairs)."""
    ctx = RunContext(pair_config, store, RUN_ID)
    with pytest.raises(
        GateFailed, match=r"document-pairs quality gate failed 1 of .*expect_column_values_to_be_unique\(doc_id_a\)"
    ):
        judge(ctx, "document_pairs", [document_pairs_check(one_sided_pairs())])
    return ctx


def test_failed_gate_keeps_its_result_and_data_docs_in_s3(judged: RunContext) -> None:
    report = judged.store.get_json(judged.key("gate", "document_pairs.report.json"))
    assert report["success"] is False and report["suite"] == "document_pairs"
    index = data_docs_key(judged.config.pair, RUN_ID, "document_pairs")
    assert b"document_pairs" in judged.store.get_bytes(index)
    pages = judged.store.list_keys(index.removesuffix("index.html"))
    assert any("/validations/document_pairs/" in key for key in pages)


def _signed_in(airflow_db) -> dict[str, str]:
    """The header of a signed-in user of Airflow's auth manager (the UI sends the same token as a cookie)."""
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    token = init_auth_manager().generate_jwt(SimpleAuthManagerUser(username="viewer", role="viewer"))
    return {"Authorization": f"Bearer {token}"}


def test_api_server_route_serves_data_docs_to_signed_in_users_and_nothing_else(judged: RunContext, airflow_db, s3_env) -> None:
    from bitextflow_airflow.data_docs import app
    from bitextflow_airflow.gate import DATA_DOCS_ROUTE, data_docs_url

    client = TestClient(app)
    route = DATA_DOCS_ROUTE.removeprefix("/bitextflow")
    url = data_docs_url(judged.store.bucket, judged.config.pair, RUN_ID, "document_pairs").removeprefix("/bitextflow")
    assert client.get(url).status_code == 401, "Airflow does not authenticate plugin apps: the route must"
    headers = _signed_in(airflow_db)
    page = client.get(url, headers=headers)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "document_pairs" in page.text
    assert client.get(f"{route}/{judged.store.bucket}/releases/en-es/v1/en-es.tsv", headers=headers).status_code == 404
    # another bucket the server's credentials reach is not this deployment's: not served
    other = client.get(url.replace(f"/{judged.store.bucket}/", "/somebody-elses-bucket/"), headers=headers)
    assert other.status_code == 404
    missing = client.get(url.replace("index.html", "nope.html"), headers=headers)
    assert missing.status_code == 404 and missing.json() == {"detail": "no such Data Docs page"}
    assert "127.0.0.1" not in missing.text and "AccessKey" not in missing.text


def test_gate_tasks_carry_a_data_docs_link(airflow_db) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from bitextflow_airflow.gate import DataDocsLink
    from conftest import ROOT

    dag = DagBag(dag_folder=str(ROOT / "dags")).dags["bitextflow__en_es"]
    for task_id, gate in (("gate_documents", "documents"), ("gate", "sentence_pairs")):
        task = dag.get_task(task_id)
        (link,) = task.operator_extra_links
        assert isinstance(link, DataDocsLink)

        class Key:
            run_id = RUN_ID

        expected = f"/bitextflow/data-docs/bitextflow/{data_docs_key('en-es', RUN_ID, gate)}"
        assert link.get_link(task, ti_key=Key()) == expected
