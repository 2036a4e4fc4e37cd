"""The evaluation page's routes (plugins/bitextflow_airflow/evaluation.py) through FastAPI's TestClient.

Airflow's own auth manager (the simple one) decides what each role may do; its role checks need no metadata database.
Resolving a signed-in user from a JWT does (it looks the token up among revoked ones), so here, and only here, the
``get_user`` dependency behind ``GetUserDep`` is replaced by one that builds the simple auth manager's user from a
test header; tests/stack/test_browser.py signs in for real. The unit tier runs no S3 server (tests/conftest.py), so the bucket is :class:`MemoryStore`, an
in-memory stand-in for the few ObjectStore methods the catalog calls, holding a release that
:func:`publish_release` really built; and the deployment's pairs (``served_dags``) are set to that one pair. The
stack tier (tests/stack/test_browser.py) drives the same routes on the real API server and S3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from airflow.api_fastapi.app import init_auth_manager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import HTTPException, Request
from fastapi.testclient import TestClient

from bitextflow.catalog.releases import publish_release
from bitextflow.storage.layout import API_SERVER_PREFIX
from tests.unit.test_release import GATE_REPORT, counts, pairs

BUCKET = "bitextflow"
PAIR = "en-es"
DAG_ID = "bitextflow__en_es"
HOSTILE = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


class MemoryStore:
    """The ObjectStore methods the release and evaluation catalogs use, on a dict."""

    def __init__(self, bucket: str) -> None:
        self.bucket = bucket
        self.objects: dict[str, bytes] = {}

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put_bytes(self, key: str, data: bytes, content_type: str = "") -> str:
        self.objects[key] = bytes(data)
        return self.uri(key)

    def put_file(self, key: str, path: str | Path, content_type: str = "") -> str:
        return self.put_bytes(key, Path(path).read_bytes())

    def get_bytes(self, key: str) -> bytes:
        from bitextflow.errors import StorageError

        if key not in self.objects:
            raise StorageError(f"no object {key}")
        return self.objects[key]

    def get_json(self, key: str):
        return json.loads(self.get_bytes(key))

    def list_keys(self, prefix: str) -> list[str]:
        return sorted(key for key in self.objects if key.startswith(prefix))

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list_keys(prefix)
        for key in keys:
            del self.objects[key]
        return len(keys)


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    df = pairs(12)
    df["margin_score"] = [0.5 + 0.03 * i for i in range(12)]
    df.loc[2, "text_a"], df.loc[2, "text_b"] = HOSTILE
    df.loc[3, "url_a"] = "javascript:alert(1)"
    memory = MemoryStore(BUCKET)
    publish_release(memory, PAIR, df, counts(), "manual__evaluation", GATE_REPORT)
    return memory


@pytest.fixture
def client(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    from bitextflow_airflow import data_docs, evaluation

    monkeypatch.setattr(data_docs, "served_dags", lambda: {(BUCKET, PAIR): DAG_ID})
    monkeypatch.setattr(evaluation, "server_object_store", lambda bucket: store)
    evaluation._cached_sample.cache_clear()
    init_auth_manager()
    monkeypatch.setitem(evaluation.app.dependency_overrides, get_user, user_of_test_header)
    return TestClient(evaluation.app)


def user_of_test_header(request: Request) -> SimpleAuthManagerUser:
    """Stands in for ``get_user`` (module docstring): the user named by ``X-Test-User: <name>:<role>``, else 401."""
    value = request.headers.get("x-test-user")
    if not value:
        raise HTTPException(status_code=401, detail="Not authenticated")
    name, role = value.split(":")
    return SimpleAuthManagerUser(username=name, role=role)


def signed_in(role: str, name: str | None = None) -> dict[str, str]:
    return {"X-Test-User": f"{name or role}:{role}"}


def csrf(role: str, name: str | None = None) -> str:
    from bitextflow_airflow.evaluation import csrf_token

    return csrf_token(SimpleAuthManagerUser(username=name or role, role=role))


def writer(name: str = "op") -> dict[str, str]:
    return {**signed_in("op", name), "X-CSRF-Token": csrf("op", name)}


def test_the_page_escapes_and_runs_only_its_own_script(client: TestClient) -> None:
    assert client.get(f"/{BUCKET}/{PAIR}").status_code == 401
    page = client.get(f"/{BUCKET}/{PAIR}?size=12", headers=signed_in("viewer"))
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "require-trusted-types-for 'script'" in csp
    assert "unsafe-inline" not in csp and "<script>" not in page.text.replace('<script src="', "")
    assert " on" not in page.text.lower().replace("aria-live", "")  # no inline handler
    assert page.text.count("<script") == 1 and '<script src="/_static/evaluation.js">' in page.text
    assert 'id="text_a" lang="en" dir="auto"' in page.text and 'id="text_b" lang="es" dir="auto"' in page.text
    script = client.get("/_static/evaluation.js")
    assert script.headers["content-type"].startswith("text/javascript") and "innerHTML" not in script.text
    data = client.get(f"/_api/{BUCKET}/{PAIR}?size=12", headers=signed_in("viewer"))
    texts = {item["text_a"] for item in data.json()["items"]} | {item["text_b"] for item in data.json()["items"]}
    assert set(HOSTILE) <= texts  # as data (JSON), which the script shows with textContent
    assert data.headers["content-type"].startswith("application/json")


def test_the_index_lists_the_pair_escaped(client: TestClient) -> None:
    index = client.get("/", headers=signed_in("viewer"))
    assert index.status_code == 200 and f'href="/{BUCKET}/{PAIR}?version=1"' in index.text


def test_a_label_round_trip_updates_the_estimate_and_exports(client: TestClient) -> None:
    before = client.get(f"/_api/{BUCKET}/{PAIR}?size=12", headers=signed_in("viewer")).json()
    assert before["evaluation"]["overall"]["precision"] is None and before["mine"] == {}
    item = before["items"][0]["item"]
    posted = client.post(
        f"/_api/{BUCKET}/{PAIR}/labels?size=12&version=1", headers=writer("ana"),
        json={"item": item, "label": "good", "comment": "<b>fine</b>", "annotator": "mallory"},
    )  # fmt: skip
    assert posted.status_code == 200, posted.text
    after = posted.json()
    assert after["mine"] == {item: "good"} and after["evaluation"]["overall"]["good"] == 1
    assert after["labels"][-1]["annotator"] == "ana"  # the signed-in user, never the request's name
    tsv = client.get(f"/_api/{BUCKET}/{PAIR}/export?format=tsv", headers=signed_in("viewer"))
    assert tsv.status_code == 200 and f"{item}\tgood\tana\t" in tsv.text
    jsonl = client.get(f"/_api/{BUCKET}/{PAIR}/export?format=jsonl", headers=signed_in("viewer"))
    assert json.loads(jsonl.text.splitlines()[-1])["comment"] == "<b>fine</b>"


def test_labelling_needs_the_csrf_token_and_a_role_that_may_edit(client: TestClient) -> None:
    item = client.get(f"/_api/{BUCKET}/{PAIR}?size=12", headers=signed_in("viewer")).json()["items"][0]["item"]
    url = f"/_api/{BUCKET}/{PAIR}/labels?size=12"
    body = {"item": item, "label": "bad"}
    assert client.post(url, json=body).status_code == 401
    assert client.post(url, json=body, headers=signed_in("op")).status_code == 403  # no token
    wrong = {**signed_in("op"), "X-CSRF-Token": csrf("op", "somebody-else")}
    assert client.post(url, json=body, headers=wrong).status_code == 403
    viewer = {**signed_in("viewer"), "X-CSRF-Token": csrf("viewer")}
    assert client.post(url, json=body, headers=viewer).status_code == 403  # the viewer role may not edit the DAG
    assert client.post(url, json=body, headers=writer()).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/_api/{b}/{p}/labels?size=12", "not json"),
        ("post", "/_api/{b}/{p}/labels?size=12", "[1, 2]"),
        ("post", "/_api/{b}/{p}/labels?size=12", '{"item": "x", "label": "excellent"}'),
        ("post", "/_api/{b}/{p}/labels?size=12", '{"item": "0000000000000000", "label": "good"}'),
        ("post", "/_api/{b}/{p}/labels?size=12", '{"item": 5, "label": "good"}'),
        ("post", "/_api/{b}/{p}/labels?size=12&version=one", '{"item": "x", "label": "good"}'),
        ("post", "/_api/{b}/nope/labels", '{"item": "x", "label": "good"}'),
        ("get", "/_api/{b}/{p}?version=v1", None),
        ("get", "/_api/{b}/{p}?version=7", None),
        ("get", "/_api/{b}/{p}?size=0", None),
        ("get", "/_api/{b}/{p}?size=many", None),
        ("get", "/_api/other-bucket/{p}", None),
        ("get", "/{b}/{p}?version=1.5", None),
        ("get", "/{b}/xx-yy", None),
        ("get", "/_api/{b}/{p}/export?format=xml", None),
        ("get", "/_static/../evaluation.py", None),
    ],
)
def test_malformed_requests_are_4xx(client: TestClient, method: str, path: str, body: str | None) -> None:
    url = path.format(b=BUCKET, p=PAIR)
    response = client.request(method, url, headers=writer(), content=body)
    assert 400 <= response.status_code < 500, (url, response.status_code, response.text)
    assert "Traceback" not in response.text


def test_the_plugin_mounts_the_evaluation_app_before_the_data_docs_app() -> None:
    from bitextflow_plugin import BitextflowPlugin

    prefixes = [entry["url_prefix"] for entry in BitextflowPlugin.fastapi_apps]
    assert prefixes == [f"{API_SERVER_PREFIX}/evaluation", API_SERVER_PREFIX]
    assert BitextflowPlugin.external_views[0]["href"] == f"{API_SERVER_PREFIX}/evaluation/"
