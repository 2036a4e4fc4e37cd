"""The API server's Data Docs and report routes as an attacker would try them: pages that carry markup from the web are
sandboxed, and a malformed run id is a clear 400, not a 500 (docs/security.md)."""

from __future__ import annotations

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from bitextflow.storage.layout import API_SERVER_PREFIX, data_docs_key, data_docs_path, release_report_path

RUN_ID = "manual__2026-11-28T10:00:00+00:00"
INJECTED = "<td><img src=x onerror=\"fetch('/api/v2/variables')\"></td>"


@pytest.fixture
def client(airflow_db, s3_env) -> TestClient:
    from bitextflow_airflow.data_docs import app

    return TestClient(app)


@pytest.fixture
def headers(airflow_db) -> dict[str, str]:
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    token = init_auth_manager().generate_jwt(SimpleAuthManagerUser(username="viewer", role="viewer"))
    return {"Authorization": f"Bearer {token}"}


def _sandboxed(response) -> None:
    policy = [directive.strip() for directive in response.headers["content-security-policy"].split(";")]
    assert "sandbox" in policy, "no allow-scripts: no script runs in the Airflow UI's origin"
    assert "default-src 'none'" in policy and not any(d.startswith("script-src") for d in policy)
    assert not any("http" in directive for directive in policy), "nothing is loaded from another site"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_data_docs_pages_and_every_answer_are_sandboxed(client, headers, store, pair_config) -> None:
    key = data_docs_key(pair_config.pair, RUN_ID, "document_pairs")
    store.put_bytes(key, f"<html><body><table>{INJECTED}</table></body></html>".encode(), "text/html")
    url = data_docs_path(store.bucket, pair_config.pair, RUN_ID, "document_pairs").removeprefix(API_SERVER_PREFIX)
    page = client.get(url, headers=headers)
    assert page.status_code == 200 and INJECTED in page.text
    _sandboxed(page)
    _sandboxed(client.get(url))  # 401
    _sandboxed(client.get(url.replace("index.html", "nope.html"), headers=headers))  # 404


def test_the_release_report_is_sandboxed(client, headers, store, pair_config) -> None:
    from bitextflow.catalog.releases import publish_release
    from bitextflow.release.build import ReleaseExtras

    pairs = pd.DataFrame(
        {"url_a": ["http://s/en/a"], "url_b": ["http://s/es/a"], "lang_a": "en", "lang_b": "es", "text_a": ["A house."],
         "text_b": ["Una casa."], "alignment_score": 0.9, "rule_tags": "", "domain_relevance": 0.5, "domain_terms": "",
         "pair_hash": ["h"]}
    )  # fmt: skip
    extras = ReleaseExtras(crawl_log=[{"url": "http://s/en/a", "outcome": "fetched"}])  # a report needs one
    publish_release(store, pair_config.pair, pairs, [], RUN_ID, None, extras)
    report = client.get(
        release_report_path(store.bucket, pair_config.pair, RUN_ID).removeprefix(API_SERVER_PREFIX), headers=headers
    )
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html"), report.text
    _sandboxed(report)


@pytest.mark.parametrize("run", ["~FF", "%C3%A9", "~41bc", "manual__x~"])
def test_a_malformed_run_id_in_the_report_route_is_a_400(client, headers, store, pair_config, run) -> None:
    answer = client.get(f"/reports/{store.bucket}/{pair_config.pair}/{run}", headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.json() == {"detail": "not a run id as the report links write it"}
