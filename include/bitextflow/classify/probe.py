"""A linear probe: the frozen multilingual sentence encoder plus a multinomial logistic regression.

Training encodes each training sentence once with the project's encoder (multilingual-e5-small by
default, :class:`bitextflow.models.encoder.SentenceEncoder`: mean-pooled, L2-normalised) and fits a
softmax regression on the vectors, so it costs seconds where fine-tuning costs minutes. The encoder is
never changed, and it maps sentences of different languages with the same meaning close together, so
the head transfers zero-shot to the languages it was not trained on far better than the tf-idf SVM,
whose n-grams are those of the training language.

Calibration: the regularisation constant C is chosen by cross-validated log-loss on the training split,
in folds grouped by site (:class:`sklearn.model_selection.GroupKFold`: a site's sentences never straddle
a fold, as the split keeps them whole), never on dev or test; then one temperature T is fitted on dev
(Guo et al. 2017, as for the transformer) and kept only where it lowers the dev log-loss.

The head is stored without pickle: ``head.npz`` (``coef``, ``intercept``, float32), read with
``allow_pickle=False``; the metadata names the encoder (``encoder``: folder name, path, whether it is the
default, the runtime that embedded the training set). At classify time the probe reads the vectors the run made
once for every stage (:mod:`bitextflow.stages.embed`) and loads its encoder only for texts that come without them.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bitextflow.classify.data import LabelledSentence
from bitextflow.classify.transformer import fit_temperature
from bitextflow.errors import StageError

log = logging.getLogger(__name__)
HEAD_FILENAME = "head.npz"
#: C candidates (inverse L2 strength); unit vectors of 384 dimensions have small features and need large C.
#: On the offline English set the cross-validated log-loss is lowest at 30 (300 was tried: worse, and the slowest fit).
C_GRID = (1.0, 3.0, 10.0, 30.0, 100.0)
CV_FOLDS = 4
MAX_ITER = 2000
#: Probabilities of a label a fold's training part lacked are floored at this in the cross-validated log-loss.
_EPS = 1e-7


def encoder_for(path: Path | None, device: str | None = None, runtime: str = "auto"):
    """The SentenceEncoder of `path` (None: the default), loaded once per process, device and runtime."""
    from bitextflow.models.encoder import shared_encoder  # torch: only when a probe embeds texts itself

    return shared_encoder(path, device, runtime)


def encode_logged(encoder, texts: Sequence[str], what: str) -> np.ndarray:
    """Embeddings of `texts`, logging the progress every tenth of them (training sets take a minute on a CPU)."""
    started = time.perf_counter()
    step = max(1, len(texts) // 10)
    logged = [0]

    def progress(done: int, total: int) -> None:
        if done - logged[0] >= step or done == total:
            logged[0] = done
            log.info("probe: encoded %d/%d %s sentences, %.0f s", done, total, what, time.perf_counter() - started)

    return encoder.encode(list(texts), progress=progress)


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def log_loss(logits: np.ndarray, targets: np.ndarray) -> float:
    """Mean negative log-likelihood of softmax(logits) at `targets`."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(targets)), targets].mean())


def _regression(c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=MAX_ITER)


def _head(model, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(coef (classes, dim), intercept (classes,)) of a fitted softmax regression, in label order; a class its
    training rows lacked (a cross-validation fold) gets a zero row and a very low intercept."""
    present = model.classes_.astype(int)
    coef = np.zeros((classes, model.coef_.shape[1]), dtype=np.float64)
    intercept = np.full(classes, math.log(_EPS) * 10, dtype=np.float64)
    if len(present) == 2:  # sklearn stores one row w for two classes: softmax([-z/2, z/2]) = sigmoid(z)
        coef[present] = np.stack([-model.coef_[0] / 2, model.coef_[0] / 2])
        intercept[present] = [-model.intercept_[0] / 2, model.intercept_[0] / 2]
    else:
        coef[present], intercept[present] = model.coef_, model.intercept_
    return coef, intercept


def choose_c(features: np.ndarray, targets: np.ndarray, groups: Sequence[str], classes: int) -> tuple[float, dict[str, float]]:
    """The C of `C_GRID` with the lowest log-loss over site-grouped folds of the training split, and every C's loss.

    Every fit starts cold: warm-starting each C from the previous one's solution was 3 times faster but
    stopped early at large C (the losses of C = 100 and 300 came out equal), which flattens the curve.
    """
    from sklearn.model_selection import GroupKFold

    folds = min(CV_FOLDS, len(set(groups)))
    if folds < 2:
        return 1.0, {}
    held_out: dict[float, list[np.ndarray]] = {c: [] for c in C_GRID}
    for train_rows, test_rows in GroupKFold(n_splits=folds).split(features, targets, groups):
        for c in C_GRID:
            coef, intercept = _head(_regression(c).fit(features[train_rows], targets[train_rows]), classes)
            probabilities = np.clip(softmax(features[test_rows] @ coef.T + intercept), _EPS, 1.0)
            held_out[c].append(-np.log(probabilities[np.arange(len(test_rows)), targets[test_rows]]))
    losses = {str(c): round(float(np.concatenate(held_out[c]).mean()), 5) for c in C_GRID}
    best = min(C_GRID, key=lambda c: losses[str(c)])
    return best, losses


class ProbeClassifier:
    kind = "probe"
    max_length = None  # the encoder truncates at its own limit (512 tokens)

    def __init__(
        self,
        load_encoder: Callable[[], Any],
        labels: Sequence[str],
        coef: np.ndarray,
        intercept: np.ndarray,
        temperature: float = 1.0,
        base_model: str | None = None,
        calibration: dict[str, Any] | None = None,
    ) -> None:
        self._load_encoder = load_encoder  # called on the first text to embed: a run's vectors need no encoder
        self.labels = list(labels)
        self.coef = np.asarray(coef, dtype=np.float32)
        self.intercept = np.asarray(intercept, dtype=np.float32)
        self.temperature = float(temperature)
        self.base_model = base_model  # domain.training.base_model at training; None: the default encoder
        self.calibration = calibration or {}

    @functools.cached_property
    def encoder(self):
        """The probe's encoder, loaded on first use and checked to give the head's dimensions."""
        encoder = self._load_encoder()
        self._check_dimensions(encoder.dim, f"the encoder {encoder.path}")
        return encoder

    def _check_dimensions(self, dim: int, what: str) -> None:
        if dim != self.coef.shape[1]:
            raise StageError(
                f"domain classifier kind probe was trained on {self.coef.shape[1]}-dimensional embeddings, but {what} gives "
                f"{dim}; retrain the probe on that encoder or embed with the one it was trained on (align.encoder_model)"
            )

    @classmethod
    def train(
        cls,
        train: Sequence[LabelledSentence],
        dev: Sequence[LabelledSentence],
        labels: Sequence[str],
        base_model: str | None = None,
        device: str | None = None,
        runtime: str = "auto",
    ) -> ProbeClassifier:
        """Encode `train` (on the encoder `runtime`), choose C by site-grouped cross-validation on it, fit, then fit T on
        `dev` if it helps."""
        encoder = encoder_for(Path(base_model) if base_model else None, device, runtime)
        index = {label: i for i, label in enumerate(labels)}
        features = encode_logged(encoder, [s.text for s in train], "training")
        targets = np.array([index[s.label] for s in train])
        started = time.perf_counter()
        c, losses = choose_c(features, targets, [s.site for s in train], len(labels))
        coef, intercept = _head(_regression(c).fit(features, targets), len(labels))
        log.info(
            "probe: C = %s by %d-fold site-grouped cross-validation (log-loss %s), %.0f s",
            c,
            CV_FOLDS,
            losses,
            time.perf_counter() - started,
        )
        classifier = cls(lambda: encoder, labels, coef, intercept, 1.0, base_model)
        calibration: dict[str, Any] = {"c": c, "cv_folds": CV_FOLDS, "cv_log_loss": losses, "runtime": encoder.runtime}
        if dev:
            dev_logits = classifier.logits([s.text for s in dev])
            dev_targets = np.array([index[s.label] for s in dev])
            temperature = fit_temperature(dev_logits, dev_targets)  # the transformer's (Guo et al. 2017)
            before, after = log_loss(dev_logits, dev_targets), log_loss(dev_logits / temperature, dev_targets)
            classifier.temperature = temperature if after < before else 1.0
            calibration.update(
                dev_log_loss_t1=round(before, 5), dev_log_loss_fitted=round(after, 5), fitted_temperature=temperature
            )
            log.info(
                "probe: dev log-loss %.4f at T = 1, %.4f at T = %.3f; T = %.3f kept",
                before,
                after,
                temperature,
                classifier.temperature,
            )
        classifier.calibration = calibration
        return classifier

    def logits(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        return self.encoder.encode(list(texts)) @ self.coef.T + self.intercept

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """softmax(logits / T): the calibrated distribution over `labels`, one row per text."""
        return softmax(self.logits(texts) / self.temperature).astype(np.float32)

    def predict_proba_vectors(self, vectors: np.ndarray) -> np.ndarray:
        """The distributions of texts whose vectors the run already made (the ``embed`` stage), one row per vector."""
        if not len(vectors):
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        self._check_dimensions(vectors.shape[1], "the run's embed stage")
        return softmax((vectors @ self.coef.T + self.intercept) / self.temperature).astype(np.float32)

    @property
    def metadata_fields(self) -> dict[str, Any]:
        """What ``bitextflow-domain.json`` records besides the common fields: the encoder and the calibration."""
        path = Path(self.encoder.path)
        encoder = {"name": path.name, "path": str(path), "default": self.base_model is None, "dim": int(self.coef.shape[1])}
        return {"encoder": encoder, "probe": self.calibration}

    def save(self, folder: Path) -> None:
        np.savez(folder / HEAD_FILENAME, coef=self.coef, intercept=self.intercept)

    @classmethod
    def load(cls, folder: Path, metadata: dict[str, Any], device: str | None = None, runtime: str = "auto") -> ProbeClassifier:
        labels = metadata["labels"]
        with np.load(folder / HEAD_FILENAME, allow_pickle=False) as head:
            coef, intercept = head["coef"], head["intercept"]
        if coef.ndim != 2 or coef.shape[0] != len(labels) or intercept.shape != (len(labels),):
            raise ValueError(f"{HEAD_FILENAME} has shapes {coef.shape} and {intercept.shape} for {len(labels)} labels")
        recorded = metadata.get("encoder") or {}
        base_model = None if recorded.get("default", True) else recorded.get("path")
        if base_model and not Path(base_model).is_dir():
            raise StageError(
                f"domain classifier {folder} is a probe on the encoder {base_model} (domain.training.base_model at training), "
                "which does not exist here; install that encoder folder there or retrain the probe"
            )
        encoder_path = Path(base_model) if base_model else None
        return cls(
            functools.partial(encoder_for, encoder_path, device, runtime), labels, coef, intercept,
            float(metadata.get("temperature") or 1.0), base_model, metadata.get("probe"),
        )  # fmt: skip
