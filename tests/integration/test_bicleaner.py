"""bifixer + bicleaner-hardrules + bicleaner-ai in their own environment, and the score stage around them.

Tests marked ``needs_bicleaner`` run the real tools in ``.venv-bicleaner`` with the model ``make setup``
trains; they skip only when that environment is absent and BITEXTFLOW_REQUIRE_BICLEANER is unset
(``make test`` sets it, so CI cannot pass by skipping them).
"""

from __future__ import annotations

import json
import os
import runpy
import shlex
import subprocess
import sys
import textwrap
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pandas as pd
import pytest
import yaml

from bitextflow import records
from bitextflow.config import load_pair_config
from bitextflow.errors import StageError
from bitextflow.hashing import tree_sha256
from bitextflow.score import bicleaner
from bitextflow.score.bicleaner_layout import model_folder_problems
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.stages.score import DEFAULT_SCORING_TIMEOUT, POD_COMMAND, POD_MODEL_DIR, URL_MARGIN, Score
from bitextflow.storage.tables import read_table, write_table
from bitextflow.text.comparison import pair_hash
from tests.support import ROOT


def _bicleaner_ready() -> bool:
    missing = bicleaner.missing_parts("en-es")
    if missing and os.environ.get("BITEXTFLOW_REQUIRE_BICLEANER"):
        pytest.fail("BITEXTFLOW_REQUIRE_BICLEANER is set but: " + "; ".join(missing))
    return not missing


needs_bicleaner = pytest.mark.skipif(
    not bicleaner.bicleaner_python().exists() and not os.environ.get("BITEXTFLOW_REQUIRE_BICLEANER"),
    reason=f"{bicleaner.bicleaner_python()} absent (run `make setup`; `make test` sets BITEXTFLOW_REQUIRE_BICLEANER)",
)

# Translations a reader would accept, from documentation rather than the Bible the model learnt from.
GOOD = [
    (
        "The package manager installs the software and its dependencies.",
        "El gestor de paquetes instala el software y sus dependencias.",
    ),
    ("Open a terminal and type the following command.", "Abra una terminal y escriba la siguiente orden."),
    ("The system will restart after the installation.", "El sistema se reiniciará después de la instalación."),
    ("You can change the language of the keyboard later.", "Puede cambiar el idioma del teclado más tarde."),
    ("Do not remove the disk while the computer is on.", "No quite el disco mientras el ordenador está encendido."),
    ("And he said unto them, Go ye into all the world.", "Y les dijo: Id por todo el mundo."),
]


# What the model make setup trains must reach on held-out documentation pairs at threshold 0.5, with a margin
# (v4 on these 150 pairs: AUC 0.949 / 0.969, kept 0.867 of translations, 0.12 of shuffled pairs, 0.053 of
# neighbours; docs/score.md). Its scores are calibrated (Platt on a balanced sample), so 0.5 is an even-odds cut;
# the raw scores keep 0.65 of the translations, so the translations' floor also fails if score_pairs.py stops
# calibrating.
SEPARATION = {"auc": 0.92, "kept_translations": 0.80, "kept_shuffled": 0.18, "kept_neighbours": 0.12}


#: bicleaner on its own: the margin scorer (on by default) would set the shuffled pairs aside before bicleaner saw them
ALONE = {"pair_scorer": "none"}


def config_for(**score: object):
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    return config.with_overrides({f"score.{name}": value for name, value in {**ALONE, **score}.items()})


def shard_frame(pairs: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "url_a": "http://site/en/a.html", "url_b": [f"http://site/es/{i}.html" for i in range(len(pairs))],
            "lang_a": "en", "lang_b": "es",
            "text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs], "alignment_score": 0.9,
            "rule_tags": "", "domain_relevance": 0.0, "domain_terms": "", "pair_hash": [pair_hash(a, b) for a, b in pairs],
        }
    )  # fmt: skip


@needs_bicleaner
def test_environment_fixes_tags_and_scores_translations_above_shuffled_pairs(tmp_path):
    assert _bicleaner_ready()
    shuffled = [(a, GOOD[(i + 2) % len(GOOD)][1]) for i, (a, _) in enumerate(GOOD)]
    extra = [("Copy the file &amp; restart.", "Copie el fichero &amp; reinicie."), ("Hello", "")]
    source = tmp_path / "pairs.tsv"
    source.write_text(bicleaner.pairs_tsv(GOOD + shuffled + extra), encoding="utf-8")
    out = tmp_path / "scored.tsv"
    bicleaner.run_scoring(bicleaner.score_arguments(bicleaner.default_model_dir("en-es"), "en", "es", str(source), str(out)))

    rows = bicleaner.read_scores(out.read_text(encoding="utf-8"))
    assert len(rows) == len(GOOD) * 2 + len(extra)  # one output line per input line, in order
    good, bad = [r[3] for r in rows[: len(GOOD)]], [r[3] for r in rows[len(GOOD) : 2 * len(GOOD)]]
    print(f"mean score: translations {sum(good) / len(good):.3f}, shuffled {sum(bad) / len(bad):.3f}")
    assert sum(good) / len(good) > sum(bad) / len(bad)
    assert all(0 <= r[3] <= 1 for r in rows)
    assert rows[-2][:2] == ("Copy the file & restart.", "Copie el fichero & reinicie.")  # bifixer unescaped the entity
    assert rows[-1][2] != "keep"  # bicleaner-hardrules rejects an empty side


@needs_bicleaner
def test_model_separates_held_out_documentation_translations_from_other_sentences(tmp_path):
    """The demo's kind of text, never trained on: pairs of the held-out installation-guide pages against the same
    English sentences with another pair's Spanish side and with their page neighbour's (same topic). Scored through
    score_pairs.py, as the pipeline scores."""
    assert _bicleaner_ready()
    from bitextflow.score.training_data import held_out_sample

    sample = held_out_sample("en", "es", 150)
    source, out = tmp_path / "pairs.tsv", tmp_path / "scored.tsv"
    source.write_text(bicleaner.pairs_tsv(sample.translations + sample.shuffled + sample.neighbours), encoding="utf-8")
    bicleaner.run_scoring(bicleaner.score_arguments(bicleaner.default_model_dir("en-es"), "en", "es", str(source), str(out)))

    scores = [row[3] for row in bicleaner.read_scores(out.read_text(encoding="utf-8"))]
    shuffled = bicleaner.separation(scores[:150], scores[150:300], threshold=0.5)
    neighbours = bicleaner.separation(scores[:150], scores[300:], threshold=0.5)
    print(shuffled, neighbours)
    assert min(shuffled["auc"], neighbours["auc"]) >= SEPARATION["auc"]
    assert shuffled["kept_translations"] >= SEPARATION["kept_translations"]
    assert shuffled["kept_shuffled"] <= SEPARATION["kept_shuffled"]
    assert neighbours["kept_shuffled"] <= SEPARATION["kept_neighbours"]


def test_held_out_sample_pairs_each_english_side_with_two_kinds_of_non_translation():
    from bitextflow.score.training_data import held_out_sample

    sample = held_out_sample("en", "es", 100)
    english = [a for a, _ in sample.translations]
    assert [a for a, _ in sample.shuffled] == english == [a for a, _ in sample.neighbours]
    translation_of = dict(sample.translations)
    assert all(b != translation_of[a] for a, b in sample.shuffled + sample.neighbours)


def test_message_catalog_entries_lose_placeholders_and_long_ones_pair_line_by_line():
    from bitextflow.score.training_data import MAX_MESSAGE_CHARACTERS, message_pairs

    assert list(message_pairs('cannot open "%s": %m\n', "no se puede abrir «%s»: %m\n")) == [
        ("cannot open :", "no se puede abrir :")
    ]
    assert list(message_pairs("_Open {name} in ${HOME}", "_Abrir {name} en ${HOME}")) == [("Open in", "Abrir en")]
    assert list(message_pairs("%1$s of %2$d files", "%2$d ficheros de %1$s")) == [("of files", "ficheros de")]
    assert not list(message_pairs("Debian GNU/Linux", "Debian GNU/Linux"))  # untranslated
    assert not list(message_pairs("OK", "Aceptar"))  # a label, not a sentence
    options = ["  -a, --all     do not ignore entries", "  -l            use a long listing format"]
    opciones = ["  -a, --all     no ignora las entradas", "  -l            usa un formato de listado largo"]
    padding = " " * MAX_MESSAGE_CHARACTERS
    assert list(message_pairs("\n".join(options) + padding, "\n".join(opciones) + padding)) == [
        ("-a, --all do not ignore entries", "-a, --all no ignora las entradas"),
        ("-l use a long listing format", "-l usa un formato de listado largo"),
    ]
    assert not list(message_pairs("one line" + padding, "una línea" + padding))


def test_catalog_pairs_read_the_packages_spanish_catalogs():
    from bitextflow.score.training_data import catalog_pairs

    catalogs = catalog_pairs("en", "es")
    pairs = catalogs.pairs
    assert catalogs.packages_missing == []
    assert len(pairs) > 30_000 and len(set(pairs)) == len(pairs)
    assert not [pair for pair in pairs if "%s" in pair[0] or "%s" in pair[1]]
    with pytest.raises(StageError, match="use en-fr"):
        catalog_pairs("es", "fr")


def test_catalog_entries_with_a_context_count_and_plural_forms_do_not(monkeypatch, tmp_path):
    import polib

    from bitextflow.score import training_data

    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    catalog.append(polib.POEntry(msgid="Save the file before closing", msgstr="Guarda el archivo antes de cerrar"))
    catalog.append(polib.POEntry(msgctxt="menu", msgid="Open the recent files", msgstr="Abre los archivos recientes"))
    catalog.append(
        polib.POEntry(msgid="%d file copied", msgid_plural="%d files copied", msgstr_plural={0: "%d copiado", 1: "%d copiados"})
    )
    catalog.append(polib.POEntry(msgid="Not translated yet", msgstr=""))
    root = tmp_path / "pkg"
    (root / "usr/share/locale/es/LC_MESSAGES").mkdir(parents=True)
    catalog.save_as_mofile(str(root / "usr/share/locale/es/LC_MESSAGES/pkg.mo"))
    monkeypatch.setattr(training_data, "CATALOG_PACKAGES", ("pkg",))
    fetched = training_data.FetchedPackage("pkg", "1", tmp_path / "pkg.deb", root)
    monkeypatch.setattr(training_data, "fetch_packages", lambda names, cache_dir: {"pkg": fetched})
    assert sorted(training_data.catalog_pairs("en", "es", tmp_path).pairs) == [
        ("Open the recent files", "Abre los archivos recientes"),
        ("Save the file before closing", "Guarda el archivo antes de cerrar"),
    ]


def test_catalog_packages_the_archive_lacks_are_left_out_and_named(monkeypatch):
    """Another Debian release renames some packages. The archive is not asked here (tests stay off the
    network): a stand-in for fetch_packages refuses the made-up name as apt-get would, and passes the
    others to the real one, which finds them in the cache `make setup` filled."""
    from bitextflow.score import training_data

    real_fetch = training_data.fetch_packages

    def archive_without(names, cache_dir):
        if "postgresql-99" in names:
            raise StageError("cannot download Debian package(s) postgresql-99 (E: Unable to locate package postgresql-99)")
        return real_fetch(names, cache_dir)

    monkeypatch.setattr(training_data, "fetch_packages", archive_without)
    monkeypatch.setattr(training_data, "CATALOG_PACKAGES", ("postgresql-99", "sed", "grep"))
    catalogs = training_data.catalog_pairs("en", "es")
    assert catalogs.packages_missing == ["postgresql-99"] and catalogs.pairs

    monkeypatch.setattr(training_data, "CATALOG_PACKAGES", ("postgresql-99",))
    with pytest.raises(StageError, match="none of the message-catalog packages"):
        training_data.catalog_pairs("en", "es")


def test_piece_embeddings_start_translations_close_together(tmp_path):
    """The cross-lingual start of the classifier: a piece's nearest other-language piece is its translation."""
    pieces = ["<pad>", "<unk>", "▁house", "▁water", "▁book", "▁father", "▁casa", "▁agua", "▁libro", "▁padre", "▁the", "▁de"]
    (tmp_path / "spm.vocab").write_text("".join(f"{piece}\t0\n" for piece in pieces), encoding="utf-8")
    vectors = bicleaner.piece_embeddings(tmp_path / "spm.vocab", dims=8, scale=0.1)
    assert vectors.shape == (len(pieces), 8) and not vectors[:2].any()
    english, spanish = vectors[2:6], vectors[6:10]
    similarity = (english / np.linalg.norm(english, axis=1, keepdims=True)) @ (
        spanish / np.linalg.norm(spanish, axis=1, keepdims=True)
    ).T
    assert list(similarity.argmax(axis=1)) == [0, 1, 2, 3]


def test_documentation_pairs_hold_out_whole_pages_and_align_blocks_by_position():
    from bitextflow.score.training_data import documentation_pairs

    documentation = documentation_pairs("en", "es")
    assert documentation.pages >= 90 and documentation.pages_left_out <= documentation.pages // 10
    assert len(set(documentation.train)) > 5000 and len(set(documentation.held_out)) > 1000
    # held-out pages are other pages: only boilerplate-like sentences ("Note", headings) occur in both sets
    sentences = {pair for pair in documentation.held_out if len(pair[0].split()) >= 8}
    assert len(sentences & set(documentation.train)) <= 0.01 * len(sentences)
    lengths = [len(b) / len(a) for a, b in documentation.train]
    assert 0.9 < sorted(lengths)[len(lengths) // 2] < 1.4  # Spanish runs a little longer: pairs line up


@needs_bicleaner
def test_fast_platt_calibration_recovers_a_known_sigmoid():
    """train_model.py's replacement of bicleaner-ai's Keras calibration fits the same A * score + B."""
    snippet = textwrap.dedent(
        """
        import sys
        import numpy as np
        sys.path.insert(0, sys.argv[1])
        from train_model import platt_calibration

        rng = np.random.default_rng(0)
        scores = rng.uniform(size=20000)
        labels = (rng.uniform(size=scores.size) < 1 / (1 + np.exp(-(6 * scores - 3)))).astype(int)
        print(*platt_calibration(labels, scores))
        """
    )
    result = subprocess.run(
        [str(bicleaner.bicleaner_python()), "-c", snippet, str(bicleaner.SCRIPTS_DIR)], capture_output=True, text=True, check=True
    )
    slope, intercept = map(float, result.stdout.split()[-2:])
    assert slope == pytest.approx(6, abs=0.5) and intercept == pytest.approx(-3, abs=0.3)


def test_model_metadata_records_version_sha256_and_training_counts():
    if not _bicleaner_ready():
        pytest.skip("no bicleaner model built (run `make setup`)")
    model = bicleaner.default_model_dir("en-es")
    metadata = bicleaner.model_metadata(model)
    assert metadata["version"] == bicleaner.MODEL_VERSION
    assert metadata["sha256"] == tree_sha256(model, frozenset({bicleaner.MODEL_METADATA}))
    assert metadata["training_data"]["train_pairs"] > 20_000


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


# The files of bicleaner-ai's published models (Hugging Face bitextor/bicleaner-ai-full-en-xx, full models v2.0; the
# lite tarballs of bitextor/bicleaner-ai-data): metadata.yaml and what it names, the language-model and porn-removal
# files of bicleaner-hardrules besides (score_pairs.py turns those filters off, so they may be absent).
FULL_MODEL = ["config.json", "metadata.yaml", "sentencepiece.bpe.model", "special_tokens_map.json", "tf_model.h5",
              "tokenizer.json", "tokenizer_config.json"]  # fmt: skip
LITE_MODEL = ["metadata.yaml", "model.h5", "spm.model", "spm.vocab"]


def published_folder(folder: Path, files: list[str], classifier_type: str, **metadata: object) -> Path:
    folder.mkdir()
    for name in files:
        (folder / name).write_bytes(b"")
    settings = {"calibration_params": [7.9, -2.4], **metadata.pop("settings", {})}  # type: ignore[dict-item]
    fields = {"source_lang": "en", "target_lang": "es", "classifier_type": classifier_type, "classifier_settings": settings}
    (folder / "metadata.yaml").write_text(yaml.safe_dump({**fields, **metadata}), encoding="utf-8")
    return folder


def test_a_published_model_folder_is_checked_against_the_files_bicleaner_ai_reads(tmp_path):
    full = published_folder(tmp_path / "full", FULL_MODEL, "xlmr", source_lm="lm.en", porn_removal_file="porn_removal.ftz")
    lite = published_folder(tmp_path / "lite", LITE_MODEL, "dec_attention")
    assert model_folder_problems(full, "en", "es") == []  # the hardrules files it names are not needed
    assert model_folder_problems(lite, "en", "es") == []

    (full / "tf_model.h5").unlink()
    (full / "tokenizer.json").unlink()
    (full / "sentencepiece.bpe.model").unlink()
    problems = model_folder_problems(full, "en", "es")
    assert any(f"{full / 'tf_model.h5'} is missing" in line for line in problems)
    assert any("no XLM-R tokenizer" in line for line in problems)
    # settings may name other files; the lite defaults are bicleaner-ai's own
    renamed = published_folder(tmp_path / "renamed", LITE_MODEL, "transformer", settings={"model_file": "clf.h5"})
    assert model_folder_problems(renamed, "en", "es") == [
        f"{renamed / 'clf.h5'} is missing: bicleaner-ai reads it for this transformer model; download the model again"
    ]
    assert "a model for en-es, not en-fr" in model_folder_problems(lite, "en", "fr")[0]
    multilingual = published_folder(tmp_path / "multi", LITE_MODEL, "dec_attention", target_lang="xx")
    assert model_folder_problems(multilingual, "en", "fr") == []
    # the score stage sees the same lines, naming the folder a pair config points at
    (lite / "model.h5").unlink()
    assert f"{lite / 'model.h5'} is missing: bicleaner-ai reads it for this dec_attention model; download the model again" in (
        bicleaner.missing_parts("en-es", str(lite))
    )


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


def test_worker_script_refuses_a_folder_without_a_model(tmp_path, capsys):
    main = runpy.run_path(str(bicleaner.SCORE_SCRIPT))["main"]
    args = bicleaner.score_arguments(tmp_path, "en", "es", str(tmp_path / "in.tsv"), str(tmp_path / "out.tsv"))
    assert main(args) == 2
    assert f"no bicleaner-ai model at {tmp_path}" in capsys.readouterr().err


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


def test_worker_script_names_an_unset_url_variable(tmp_path):
    (tmp_path / "metadata.yaml").touch()
    main = runpy.run_path(str(bicleaner.SCORE_SCRIPT))["main"]
    with pytest.raises(SystemExit, match=f"env:{bicleaner.INPUT_URL_VARIABLE} names the environment variable"):
        main(bicleaner.score_arguments(tmp_path, "en", "es", *bicleaner.URLS_FROM_ENVIRONMENT))


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


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: nowhere, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: nobody, user: {token: not-a-real-token}}]
contexts: [{name: nowhere, context: {cluster: nowhere, user: nobody}}]
current-context: nowhere
"""


def kubernetes_settings(folder: Path) -> dict[str, object]:
    (folder / "kubeconfig").write_text(KUBECONFIG)
    return {
        "gpu.mode": "kubernetes",
        "gpu.image": "gpu-worker:1",
        "gpu.in_cluster": False,
        "gpu.config_file": str(folder / "kubeconfig"),
    }


def test_kubernetes_mode_needs_the_bicleaner_image(tmp_path):
    from airflow.sdk import DAG

    from bitextflow.errors import ConfigError
    from bitextflow_airflow.pair_dag import add_stage

    config = config_for(use_bicleaner="yes").with_overrides(kubernetes_settings(tmp_path))
    with (
        pytest.raises(ConfigError, match="score.bicleaner_image is empty"),
        DAG("no_image", start_date=datetime(2026, 1, 1)) as dag,
    ):
        add_stage(dag, Score, config, ["k"], REGISTRY, {})


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
