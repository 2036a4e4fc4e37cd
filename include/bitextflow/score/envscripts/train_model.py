"""Train a bicleaner-ai lite model; runs INSIDE the bicleaner environment (.venv-bicleaner), by path.

``bicleaner-ai-train`` exposes only a few of its classifier's settings (batch size, epochs, steps) and
fixes the others for GPU-sized training: a 32,000-piece SentencePiece vocabulary (more than a corpus of
a few tens of thousands of sentences fills), 300-dimensional embeddings, 100-token inputs, 200 hidden
units. This wrapper runs the same training with any of those settings replaced (they are saved in the
model's metadata.yaml, so bicleaner-ai-classify rebuilds the same network) and rebuilds the learning-rate
schedule from the replaced ``lr`` and ``steps_per_epoch`` (bicleaner-ai builds it from its defaults).

Cross-lingual start: bicleaner-ai starts the classifier's embeddings from GloVe vectors trained on the
monolingual text of both languages, where "house" and "casa" are unrelated until the parallel data teaches
otherwise. With ``"embeddings": "<file>.npy"`` in the settings the wrapper starts them from that table
instead (one row per SentencePiece id; bitextflow.score.bicleaner.piece_embeddings builds it from a
multilingual sentence encoder). ``--vocabulary SETTINGS_JSON MODEL_DIR MONOLINGUAL`` trains only the
SentencePiece model, exactly as bicleaner-ai-train would, so that table can be built for its pieces.

It also replaces bicleaner-ai's Platt calibration (up to 5,000 Keras epochs: minutes on 2 cores) with the
same fit done by L-BFGS: the same balanced sample and smoothed targets, the same ``A * score + B``
parameters (Platt, 1999, "Probabilistic outputs for support vector machines"). Usage:

    python train_model.py --vocabulary '{"vocab_size": 8000}' MODEL_DIR MONOLINGUAL_TXT
    python train_model.py '{"vocab_size": 8000, "emb_dim": 100, "embeddings": "e.npy"}' <bicleaner-ai-train arguments...>
"""

import json
import sys

import numpy as np
import sentencepiece
from bicleaner_ai import bicleaner_ai_train, models
from scipy.optimize import minimize
from tensorflow.keras.optimizers import Adam
from tensorflow.keras.optimizers.schedules import InverseTimeDecay


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "--vocabulary":
        train_vocabulary(json.loads(argv[1]), argv[2], argv[3])
        return 0
    if len(argv) < 2 or not argv[0].startswith("{"):
        print("usage: train_model.py SETTINGS_JSON <bicleaner-ai-train arguments>", file=sys.stderr)
        return 2
    settings = json.loads(argv[0])
    embeddings = settings.pop("embeddings", None)
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
    if embeddings:
        models.BaseModel.load_embed = lambda model: setattr(model, "wv", np.load(embeddings).astype(np.float32))
    models.calibrate_output = platt_calibration
    bicleaner_ai_train.perform_training(args)
    return 0


def train_vocabulary(settings: dict, directory: str, monolingual: str) -> None:
    """The SentencePiece model of ``BaseModel.train_vocab`` (same ids, same special pieces), without its GloVe step."""
    model = models.DecomposableAttention(directory, settings)
    given = model.settings
    sentencepiece.SentencePieceTrainer.train(
        input=monolingual, model_prefix=f"{directory}/{model.spm_prefix}", vocab_size=given["vocab_size"],
        input_sentence_size=5_000_000, shuffle_input_sentence=True, pad_id=given["pad_id"], unk_id=given["unk_id"],
        bos_id=given["bos_id"], eos_id=given["eos_id"], user_defined_symbols=given["separator"], num_threads=2, minloglevel=1,
    )  # fmt: skip


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
