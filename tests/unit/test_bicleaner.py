"""bifixer + bicleaner-hardrules + bicleaner-ai in their own environment, and the score stage around them.

Tests marked ``needs_bicleaner`` run the real tools in ``.venv-bicleaner`` with the model ``make setup``
trains; they skip only when that environment is absent and BITEXTFLOW_REQUIRE_BICLEANER is unset
(``make test`` sets it, so CI cannot pass by skipping them).


The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_bicleaner.py's.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import textwrap
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import yaml

from bitextflow.config import load_pair_config
from bitextflow.errors import StageError
from bitextflow.hashing import tree_sha256
from bitextflow.score import bicleaner
from bitextflow.score.bicleaner_layout import model_folder_problems
from bitextflow.stages.registry import REGISTRY
from bitextflow.stages.score import Score
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


def test_worker_script_refuses_a_folder_without_a_model(tmp_path, capsys):
    main = runpy.run_path(str(bicleaner.SCORE_SCRIPT))["main"]
    args = bicleaner.score_arguments(tmp_path, "en", "es", str(tmp_path / "in.tsv"), str(tmp_path / "out.tsv"))
    assert main(args) == 2
    assert f"no bicleaner-ai model at {tmp_path}" in capsys.readouterr().err


def test_worker_script_names_an_unset_url_variable(tmp_path):
    (tmp_path / "metadata.yaml").touch()
    main = runpy.run_path(str(bicleaner.SCORE_SCRIPT))["main"]
    with pytest.raises(SystemExit, match=f"env:{bicleaner.INPUT_URL_VARIABLE} names the environment variable"):
        main(bicleaner.score_arguments(tmp_path, "en", "es", *bicleaner.URLS_FROM_ENVIRONMENT))


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
