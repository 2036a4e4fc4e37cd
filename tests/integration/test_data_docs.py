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
from bitextflow.storage.layout import data_docs_key, safe_key_part

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
    from bitextflow.storage.layout import API_SERVER_PREFIX, data_docs_path
    from bitextflow_airflow.data_docs import app

    client = TestClient(app)
    route = "/data-docs"
    url = data_docs_path(judged.store.bucket, judged.config.pair, RUN_ID, "document_pairs").removeprefix(API_SERVER_PREFIX)
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
    from tests.support import ROOT

    dag = DagBag(dag_folder=str(ROOT / "dags")).dags["bitextflow__en_es"]
    for task_id, gate in (("gate_documents", "documents"), ("gate", "sentence_pairs")):
        task = dag.get_task(task_id)
        (link,) = task.operator_extra_links
        assert isinstance(link, DataDocsLink)

        class Key:
            run_id = RUN_ID

        expected = f"/bitextflow/data-docs/bitextflow/{data_docs_key('en-es', RUN_ID, gate)}"
        assert link.get_link(task, ti_key=Key()) == expected


def test_the_release_report_is_served_with_live_links_to_each_gates_data_docs(judged: RunContext, airflow_db, s3_env) -> None:
    """The release task's "Release report" button opens the report of what the run published, on the API server,
    where the report's Data Docs links resolve; a run that published nothing, another bucket or no sign-in: no."""
    import pandas as pd

    from bitextflow.catalog.releases import publish_release
    from bitextflow.release.build import ReleaseExtras
    from bitextflow.release.profile import GateVerdict
    from bitextflow.storage.layout import API_SERVER_PREFIX, data_docs_path, release_report_path
    from bitextflow_airflow.data_docs import app

    store, pair = judged.store, judged.config.pair
    pairs = pd.DataFrame(
        {"url_a": ["http://s/en/a"], "url_b": ["http://s/es/a"], "lang_a": "en", "lang_b": "es", "text_a": ["A house."],
         "text_b": ["Una casa."], "alignment_score": 0.9, "rule_tags": "", "domain_relevance": 0.5, "domain_terms": "",
         "pair_hash": ["h"]}
    )  # fmt: skip
    link = data_docs_path(store.bucket, pair, RUN_ID, "document_pairs")
    verdict = GateVerdict("document_pairs", 1, (("document_pairs", ("expect_column_values_to_be_unique(doc_id_a)",)),), link)
    extras = ReleaseExtras(crawl_log=[{"url": "http://s/en/a", "outcome": "fetched"}], gates=[verdict])
    publish_release(store, pair, pairs, [], RUN_ID, None, extras)

    client = TestClient(app)
    path = release_report_path(store.bucket, pair, RUN_ID).removeprefix(API_SERVER_PREFIX)
    assert client.get(path).status_code == 401
    headers = _signed_in(airflow_db)
    report = client.get(path, headers=headers)
    assert report.status_code == 200 and "Quality gates" in report.text and f'href="{link}"' in report.text
    assert client.get(link.removeprefix(API_SERVER_PREFIX), headers=headers).status_code == 200, "the report's link resolves"
    other_run = client.get(
        release_report_path(store.bucket, pair, "manual__never").removeprefix(API_SERVER_PREFIX), headers=headers
    )
    assert other_run.status_code == 404 and "published no release" in other_run.text
    assert client.get(path.replace(store.bucket, "somebody-elses-bucket"), headers=headers).status_code == 404


def test_the_release_task_links_to_its_report(airflow_db) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from bitextflow_airflow.gate import DataDocsLink, ReleaseReportLink
    from tests.support import ROOT

    task = DagBag(dag_folder=str(ROOT / "dags")).dags["bitextflow__en_es"].get_task("release")
    data_docs, report = task.operator_extra_links

    class Key:
        run_id = RUN_ID

    assert isinstance(data_docs, DataDocsLink) and isinstance(report, ReleaseReportLink)
    assert report.get_link(task, ti_key=Key()) == f"/bitextflow/reports/bitextflow/en-es/{safe_key_part(RUN_ID)}"
