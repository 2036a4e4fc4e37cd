"""Train a bicleaner-ai lite model; runs INSIDE the bicleaner environment (.venv-bicleaner), by path.

``bicleaner-ai-train`` exposes only a few of its classifier's settings (batch size, epochs, steps) and
fixes the others for GPU-sized training: a 32,000-piece SentencePiece vocabulary (more than a corpus of
a few tens of thousands of sentences fills), 300-dimensional embeddings, 100-token inputs, 200 hidden
units. This wrapper runs the same training with any of those settings replaced (they are saved in the
model's metadata.yaml, so bicleaner-ai-classify rebuilds the same network) and rebuilds the learning-rate
schedule from the replaced ``lr`` and ``steps_per_epoch`` (bicleaner-ai builds it from its defaults).

It also replaces bicleaner-ai's Platt calibration (up to 5,000 Keras epochs: minutes on 2 cores) with the
same fit done by L-BFGS: the same balanced sample and smoothed targets, the same ``A * score + B``
parameters (Platt, 1999, "Probabilistic outputs for support vector machines"). Usage:

    python train_model.py '{"vocab_size": 8000, "emb_dim": 100}' <bicleaner-ai-train arguments...>
"""

import json
import sys

import numpy as np
from bicleaner_ai import bicleaner_ai_train, models
from scipy.optimize import minimize
from tensorflow.keras.optimizers import Adam
from tensorflow.keras.optimizers.schedules import InverseTimeDecay


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].startswith("{"):
        print("usage: train_model.py SETTINGS_JSON <bicleaner-ai-train arguments>", file=sys.stderr)
        return 2
    settings = json.loads(argv[0])
    args = bicleaner_ai_train.get_arguments(argv[1:])
    bicleaner_ai_train.initialization(args)
    build = bicleaner_ai_train.get_model

    def get_model(classifier_type: str):
        def with_settings(directory: str, given: dict, **kwargs):
            model = build(classifier_type)(directory, {**given, **settings}, **kwargs)
            schedule = InverseTimeDecay(model.settings["lr"], decay_steps=model.settings["steps_per_epoch"] // 4, decay_rate=0.2)
            model.settings["scheduler"] = schedule
            model.settings["optimizer"] = Adam(learning_rate=schedule, clipnorm=model.settings["clipnorm"])
            return model

        return with_settings

    bicleaner_ai_train.get_model = get_model
    models.calibrate_output = platt_calibration
    bicleaner_ai_train.perform_training(args)
    return 0


def platt_calibration(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float, float]:
    """``A``, ``B`` of ``sigmoid(A * score + B)`` as bicleaner-ai's ``calibrate_output`` defines them."""
    y_true, y_pred = np.ravel(y_true), np.ravel(y_pred).astype(np.float64)
    n_pos, n_neg = int((y_true == 1).sum()), int((y_true == 0).sum())
    positives, negatives = np.flatnonzero(y_true == 1), np.flatnonzero(y_true == 0)
    if n_pos < n_neg:  # as bicleaner-ai: as many negatives as positives, picked at random
        negatives = np.random.permutation(negatives)[:n_pos]
    chosen = np.concatenate([negatives, positives])
    scores = y_pred[chosen]
    targets = np.where(y_true[chosen] == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        logits = params[0] * scores + params[1]
        # binary cross-entropy on logits, stable for large |logits|
        value = np.sum(np.logaddexp(0, logits) - targets * logits)
        residual = 1 / (1 + np.exp(-logits)) - targets
        return float(value), np.array([np.sum(residual * scores), np.sum(residual)])

    fitted = minimize(loss, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
    return float(fitted.x[0]), float(fitted.x[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
