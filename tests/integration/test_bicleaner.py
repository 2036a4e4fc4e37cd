"""bifixer + bicleaner-hardrules + bicleaner-ai in their own environment, and the score stage around them.

Tests marked ``needs_bicleaner`` run the real tools in ``.venv-bicleaner`` with the model ``make setup``
trains; they skip only when that environment is absent and BITEXTFLOW_REQUIRE_BICLEANER is unset
(``make test`` sets it, so CI cannot pass by skipping them).


The tests of this module against real services; those that need none are tests/unit/test_bicleaner.py's.
"""

from __future__ import annotations

import json
import runpy
import shlex
import subprocess
import sys
import textwrap
import urllib.request
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest
import yaml

from bitextflow import records
from bitextflow.errors import StageError
from bitextflow.score import bicleaner
from bitextflow.stages.registry import run_context
from bitextflow.stages.score import DEFAULT_SCORING_TIMEOUT, POD_COMMAND, POD_MODEL_DIR, URL_MARGIN, Score
from bitextflow.storage.tables import read_table, write_table
from bitextflow.text.comparison import pair_hash
from tests.support import ROOT
from tests.unit.test_bicleaner import (
    GOOD,
    LITE_MODEL,
    _bicleaner_ready,
    config_for,
    kubernetes_settings,
    needs_bicleaner,
)


def shard_frame(pairs: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "url_a": "http://site/en/a.html", "url_b": [f"http://site/es/{i}.html" for i in range(len(pairs))],
            "lang_a": "en", "lang_b": "es",
            "text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs], "alignment_score": 0.9,
            "rule_tags": "", "domain_relevance": 0.0, "domain_terms": "", "pair_hash": [pair_hash(a, b) for a, b in pairs],
        }
    )  # fmt: skip


def test_missing_model_is_one_clear_error_naming_the_path_and_the_fix(tmp_path, s3_env, store):
    absent = tmp_path / "no-model"
    config = config_for(use_bicleaner="yes", bicleaner_model=str(absent))
    ctx = run_context(config, store, "manual__missing-model")
    key = write_table(store, ctx.key("align_sentences", "shard-0.parquet"), shard_frame(GOOD[:1]), records.SENTENCE_PAIRS)
    with pytest.raises(StageError, match=rf"{absent}/metadata.yaml does not exist; build one with .*bicleaner build en-es"):
        Score(ctx).prepare(key)
    # if-installed without the model: the hard rules only, decided when the task runs (the DAG keeps its shape)
    lenient = run_context(config_for(use_bicleaner="if-installed", bicleaner_model=str(absent)), store, "manual__missing-model")
    assert "input_key" not in Score(lenient).prepare(key)
    assert Score.external_step(config_for(use_bicleaner="no")) is None


@needs_bicleaner
def test_the_score_stage_scores_with_a_downloaded_model_folder(tmp_path, s3_env, store, monkeypatch):
    """A published lite model holds what make setup's model holds less our bitextflow-model.json: the stage scores with
    it in place and uploads nothing (it has no version of ours)."""
    assert _bicleaner_ready()
    downloaded = tmp_path / "bicleaner-ai-lite-en-es"
    downloaded.mkdir()
    for name in LITE_MODEL:
        (downloaded / name).write_bytes((bicleaner.default_model_dir("en-es") / name).read_bytes())
    ctx = run_context(config_for(use_bicleaner="yes", bicleaner_model=str(downloaded)), store, "manual__downloaded-model")
    monkeypatch.setattr(store, "put_tree", lambda *args: pytest.fail("uploaded"))
    key = write_table(store, ctx.key("align_sentences", "shard-0.parquet"), shard_frame(GOOD[:3]), records.SENTENCE_PAIRS)
    Score(ctx).run(key)
    scored = pd.concat([read_table(store, ctx.key("score", f"shard-0.{name}parquet")) for name in ("", "rejected.")])
    assert len(scored) == 3 and scored["bicleaner_score"].between(0, 1).all()


def test_finish_counts_hardrules_and_threshold_drops_and_keeps_every_score(s3_env, store):
    """The scorer's output is written by hand here: what the worker does with it needs no bicleaner env."""
    config = config_for(use_bicleaner="no", bicleaner_threshold=0.5)
    ctx = run_context(config, store, "manual__threshold")
    pairs = [*GOOD[:3], ("apt-get install foo bar", "apt-get install foo bar")]  # the last: identical sides (our rule)
    key = write_table(store, ctx.key("align_sentences", "shard-0.parquet"), shard_frame(pairs), records.SENTENCE_PAIRS)
    job = Score(ctx).prepare(key)
    job["output_key"] = ctx.key("score", "shard-0.bicleaner-out.tsv")
    scored = [
        ("Fixed one.", "Uno arreglado.", "keep", 0.91),
        ("Two.", "Dos.", "keep", 0.31),  # under the threshold
        ("Three.", "Tres.", "no_urls(left),not_too_long(left,right)", 0.88),  # rejected by bicleaner-hardrules
    ]
    store.put_bytes(job["output_key"], "".join(f"{a}\t{b}\t{t}\t{s}\n" for a, b, t, s in scored).encode())

    kept_key = Score(ctx).finish(job)
    kept = read_table(store, kept_key)
    assert list(kept["text_a"]) == ["Fixed one."] and list(kept["bicleaner_score"]) == [0.91]
    # the gate de-duplicates on the hash: it must be the hash of the texts bifixer left, not of the texts sent
    assert list(kept["pair_hash"]) == [pair_hash("Fixed one.", "Uno arreglado.")]
    rejected = read_table(store, ctx.key("score", "shard-0.rejected.parquet"))
    assert list(rejected["rule_tags"]) == ["bicleaner_below_threshold", "hardrules:no_urls(left)", "identical_sides"]
    assert list(rejected["bicleaner_score"].fillna(-1)) == [0.31, 0.88, -1]
    counts = store.get_json(ctx.key("score", "shard-0.counts.json"))
    assert counts == {
        "stage": "score", "in": 4, "kept": 1,
        "dropped": {"bicleaner_below_threshold": 1, "hardrules:no_urls(left)": 1, "identical_sides": 1},
    }  # fmt: skip


def test_scores_out_of_step_with_the_pairs_sent_are_an_error(s3_env, store):
    ctx = run_context(config_for(), store, "manual__short-output")
    key = write_table(store, ctx.key("align_sentences", "shard-0.parquet"), shard_frame(GOOD[:2]), records.SENTENCE_PAIRS)
    job = {**Score(ctx).prepare(key), "output_key": ctx.key("score", "x.tsv")}
    store.put_bytes(job["output_key"], b"a\tb\tkeep\t0.9\n")
    with pytest.raises(StageError, match="has 1 scored pairs for 2 sent"):
        Score(ctx).finish(job)


# -- presigned URLs: signed when the task that runs the scorer starts, never in XCom, the UI or argv --------
SIGNED = ("X-Amz-Signature", "Signature=", "http")
URL_VARIABLES = (bicleaner.INPUT_URL_VARIABLE, bicleaner.OUTPUT_URL_VARIABLE)
TASK_TIMEOUT = timedelta(hours=3)


def expires_s(url: str) -> int:
    return int(parse_qs(urlsplit(url).query)["X-Amz-Expires"][0])


def signed_parts(text: str) -> list[str]:
    return [mark for mark in SIGNED if mark in text]


def prepared_job(store, run_id: str) -> tuple[Score, dict]:
    """The score stage with bicleaner in a pod, and the job its first task hands on for a shard of three pairs."""
    stage = Score(run_context(config_for(use_bicleaner="yes"), store, run_id))
    key = stage.ctx.key("align_sentences", "shard-0.parquet")
    write_table(store, key, shard_frame(GOOD[:3]), records.SENTENCE_PAIRS)
    return stage, stage.prepare(key, model_dir=POD_MODEL_DIR)


def test_the_job_between_the_tasks_holds_storage_keys_and_no_url(s3_env, store):
    """The job is an XCom value: the UI shows it to whoever may read the DAG's task instances."""
    _, job = prepared_job(store, "manual__job-keys")
    assert not signed_parts(json.dumps(job)), job
    assert {"input_key", "output_key", "model", "source", "target"} <= set(job)
    assert store.get_bytes(job["input_key"]).decode().count("\n") == 3
    assert (job["model"], job["source"], job["target"]) == (POD_MODEL_DIR, "en", "es")


@pytest.mark.parametrize(
    ("timeout", "lifetime"),
    [
        (TASK_TIMEOUT, TASK_TIMEOUT + URL_MARGIN),
        (timedelta(hours=30), timedelta(hours=30) + URL_MARGIN),  # longer than the old fixed 6 h
        (None, DEFAULT_SCORING_TIMEOUT + URL_MARGIN),  # no timeout set: the CLI
    ],
)
def test_urls_are_signed_when_the_scorer_starts_for_its_timeout_plus_a_margin(s3_env, store, timeout, lifetime):
    stage, job = prepared_job(store, "manual__url-lifetime")
    call = stage.external_call(job, timeout)
    assert call.arguments == bicleaner.score_arguments(POD_MODEL_DIR, "en", "es", *bicleaner.URLS_FROM_ENVIRONMENT)
    assert not signed_parts(" ".join(call.arguments)) and "Signature" not in repr(call)  # a logged call shows none
    assert {expires_s(call.env[name]) for name in URL_VARIABLES} == {int(lifetime.total_seconds())}
    # the URLs work without credentials: the scorer's GET reads the input, its PUT (with the signed type) writes
    with urllib.request.urlopen(call.env[bicleaner.INPUT_URL_VARIABLE]) as response:
        assert response.read() == store.get_bytes(job["input_key"])
    put = urllib.request.Request(
        call.env[bicleaner.OUTPUT_URL_VARIABLE],
        data=b"scored",
        method="PUT",
        headers={"Content-Type": "application/octet-stream"},
    )
    urllib.request.urlopen(put).close()
    assert store.get_bytes(job["output_key"]) == b"scored"


def test_a_timeout_longer_than_s3_lets_a_url_live_is_one_clear_error(s3_env, store):
    stage, job = prepared_job(store, "manual__url-too-long")
    with pytest.raises(StageError, match=r"execution_timeout of 7 days, 0:00:00 .* set it to at most 6 days, 23:45:00"):
        stage.external_call(job, timedelta(days=7))


@pytest.fixture
def recording_python(tmp_path, monkeypatch) -> Path:
    """The bicleaner interpreter behind a script that first records the command line it was started with (what
    every local user can read in /proc/<pid>/cmdline) and the URL variables it got; returns their folder."""
    records_dir = tmp_path / "scorer"
    records_dir.mkdir()
    wrapper = records_dir / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$0" "$@" > {shlex.quote(str(records_dir / "argv"))}\n'
        f'printf "%s\\n" "${URL_VARIABLES[0]}" "${URL_VARIABLES[1]}" > {shlex.quote(str(records_dir / "urls"))}\n'
        f'exec {shlex.quote(str(bicleaner.bicleaner_python()))} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("BITEXTFLOW_BICLEANER_PYTHON", str(wrapper))
    return records_dir


@needs_bicleaner
def test_the_scorer_gets_its_urls_in_its_environment_not_on_its_command_line(recording_python, s3_env, store):
    """The CLI path (Score.run); the local DAG task runs the same code (test below)."""
    assert _bicleaner_ready()
    ctx = run_context(config_for(use_bicleaner="yes"), store, "manual__scorer-argv")
    key = write_table(store, ctx.key("align_sentences", "shard-0.parquet"), shard_frame(GOOD), records.SENTENCE_PAIRS)
    kept = read_table(store, Score(ctx).run(key))

    argv = (recording_python / "argv").read_text()
    assert str(bicleaner.SCORE_SCRIPT) in argv and not signed_parts(argv), argv
    urls = (recording_python / "urls").read_text().split()
    assert len(urls) == 2 and all("X-Amz-Signature=" in url for url in urls)
    assert {expires_s(url) for url in urls} == {int((DEFAULT_SCORING_TIMEOUT + URL_MARGIN).total_seconds())}
    rejected = read_table(store, ctx.key("score", "shard-0.rejected.parquet"))
    scored = pd.concat([kept, rejected], ignore_index=True)
    # every pair came back with its score (which of them clear the threshold is the trained model's judgement)
    assert len(scored) == len(GOOD) and scored["bicleaner_score"].notna().all(), scored[
        ["text_a", "bicleaner_score", "rule_tags"]
    ]


def shown_in_airflow(run) -> str:
    """Every XCom value and rendered template field (and pod YAML) of ``run``: what the UI shows."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rendered
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        xcoms = session.query(XComModel.task_id, XComModel.value).filter(XComModel.run_id == run.run_id).all()
        rendered = (
            session.query(Rendered.task_id, Rendered.rendered_fields, Rendered.k8s_pod_yaml)
            .filter(Rendered.run_id == run.run_id)
            .all()
        )
    assert {task_id for task_id, *_ in rendered} >= {"score_rules", "bicleaner", "score"}
    shown = json.dumps([list(row) for row in [*xcoms, *rendered]], default=str)
    assert "bicleaner-in.tsv" in shown  # the job is there, as keys
    return shown


DAG_FILE = """
from datetime import datetime, timedelta

from airflow.sdk import DAG, task

from bitextflow.config import load_pair_config
from bitextflow.stages.registry import REGISTRY
from bitextflow.stages.score import DEFAULT_SCORING_TIMEOUT, POD_COMMAND, POD_MODEL_DIR, URL_MARGIN, Score
from bitextflow_airflow.pair_dag import add_stage

CONFIG = load_pair_config({config!r}).with_overrides({overrides!r})

with DAG({dag_id!r}, start_date=datetime(2026, 1, 1), schedule=None, default_args={{"execution_timeout": timedelta(seconds={timeout_s})}}) as dag:

    @task
    def shards() -> list[str]:
        return [{key!r}]

    add_stage(dag, Score, CONFIG, shards(), REGISTRY, {{}})
"""


def scoring_dag(dag_folder: Path, store, dag_id: str, pairs: list[tuple[str, str]], **overrides: object):
    """A DAG of the score stage (``score.use_bicleaner: yes`` and ``overrides``) on one shard of ``pairs``, whose
    tasks may run TASK_TIMEOUT."""
    from airflow.dag_processing.dagbag import DagBag

    config = config_for(use_bicleaner="yes")
    # One shard for all runs of this DAG: the input key holds no run id (the tasks write under theirs).
    key = run_context(config, store, "fixture").key("align_sentences", f"{dag_id}.parquet")
    write_table(store, key, shard_frame(pairs), records.SENTENCE_PAIRS)
    settings = {"score.use_bicleaner": "yes", "score.pair_scorer": "none", **overrides}
    source = DAG_FILE.format(
        config=str(ROOT / "include/pairs/en-es.yaml"),
        overrides=settings,
        dag_id=dag_id,
        timeout_s=int(TASK_TIMEOUT.total_seconds()),
        key=key,
    )
    (dag_folder / f"{dag_id}.py").write_text(textwrap.dedent(source))
    bag = DagBag(dag_folder=str(dag_folder))
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id]


@needs_bicleaner
def test_local_bicleaner_task_signs_at_its_start_and_scores_a_shard_under_dag_test(dag_folder, recording_python, s3_env, store):
    assert _bicleaner_ready()
    config = config_for(use_bicleaner="yes")
    shuffled = [(a, GOOD[(i + 3) % len(GOOD)][1]) for i, (a, _) in enumerate(GOOD)]
    frame = shard_frame(GOOD + shuffled)
    dag = scoring_dag(dag_folder, store, "bicleaner_local", GOOD + shuffled)
    assert dag.get_task("bicleaner").operator_class.__name__ == "_PythonDecoratedOperator"  # in the worker

    run = dag.test()
    assert run.state == "success"
    ctx = run_context(config, store, run.run_id)
    counts = store.get_json(ctx.key("score", "bicleaner_local.counts.json"))
    kept = read_table(store, ctx.key("score", "bicleaner_local.parquet"))
    rejected = read_table(store, ctx.key("score", "bicleaner_local.rejected.parquet"))
    print(json.dumps(counts))
    assert counts["in"] == len(frame) == len(kept) + len(rejected)
    assert (kept["bicleaner_score"] >= config.score.bicleaner_threshold).all()
    scores = pd.concat([kept, rejected]).set_index("url_b")["bicleaner_score"]
    row = [f"http://site/es/{i}.html" for i in range(len(frame))]
    assert scores[row[: len(GOOD)]].mean() > scores[row[len(GOOD) :]].mean()
    assert store.exists(f"models/en-es/bicleaner/v{bicleaner.MODEL_VERSION}/{bicleaner.MODEL_METADATA}")

    assert not signed_parts((recording_python / "argv").read_text())
    urls = (recording_python / "urls").read_text().split()
    assert {expires_s(url) for url in urls} == {int((TASK_TIMEOUT + URL_MARGIN).total_seconds())}
    assert not signed_parts(shown_in_airflow(run))


def test_bicleaner_pod_gets_urls_signed_at_its_start_in_its_environment_only(dag_folder, s3_env, store, monkeypatch):
    """No Kubernetes cluster can run here. Only the operator's talk with the Kubernetes API is replaced
    (``KubernetesPodOperator.execute_sync``: create the pod, follow it, delete it): the stand-in builds the pod as
    the operator submits it, validates its manifest against the API schema and does what the pod's container
    does, with score_pairs.py's own I/O on the pod's arguments and environment; it scores every pair 0.9."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
    from kubernetes.client import ApiClient

    submitted = []

    def cluster_stand_in(operator, context):
        manifest = ApiClient().sanitize_for_serialization(operator.build_pod_request_obj(context))
        submitted.append(manifest)
        (container,) = manifest["spec"]["containers"]
        script = runpy.run_path(str(bicleaner.SCORE_SCRIPT))
        arguments = container["args"]
        with monkeypatch.context() as pod:
            for variable in container["env"]:
                pod.setenv(variable["name"], variable["value"])
            pairs = script["_read"](script["_location"](arguments[arguments.index("--input") + 1])).decode().splitlines()
            scored = "".join(f"{line}\tkeep\t0.9\n" for line in pairs)
            script["_write"](script["_location"](arguments[arguments.index("--output") + 1]), scored.encode())

    monkeypatch.setattr(KubernetesPodOperator, "execute_sync", cluster_stand_in)
    image = "registry.example.org/bitextflow/bicleaner-en-es:v1"
    dag = scoring_dag(
        dag_folder, store, "bicleaner_pod", GOOD[:4], **kubernetes_settings(dag_folder), **{"score.bicleaner_image": image}
    )
    assert [t.task_id for t in dag.topological_sort()] == ["shards", "score_shards", "score_rules", "bicleaner", "score"]

    run = dag.test()
    assert run.state == "success"
    kept = read_table(store, run_context(config_for(), store, run.run_id).key("score", "bicleaner_pod.parquet"))
    assert list(kept["bicleaner_score"]) == [0.9] * len(kept) and len(kept) >= 3

    (manifest,) = submitted
    (container,) = manifest["spec"]["containers"]
    assert container["image"] == image and container["command"] == list(POD_COMMAND)
    assert container["args"] == bicleaner.score_arguments(POD_MODEL_DIR, "en", "es", *bicleaner.URLS_FROM_ENVIRONMENT)
    env = {variable["name"]: variable["value"] for variable in container["env"]}
    assert {expires_s(env[name]) for name in URL_VARIABLES} == {int((TASK_TIMEOUT + URL_MARGIN).total_seconds())}
    assert not signed_parts(shown_in_airflow(run))
    (dag_folder / "pod.yaml").write_text(yaml.safe_dump(manifest))
    validator = Path(sys.executable).parent / "kubernetes-validate"
    result = subprocess.run(
        [str(validator), "--strict", "--kubernetes-version", "1.32.0", str(dag_folder / "pod.yaml")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
