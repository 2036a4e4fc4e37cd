"""The DSI paper's baseline: tf-idf unigrams and bigrams with a linear SVM, probabilities by calibration.

van Noord et al. (MaCoCu DSI) use this as the reference their fine-tuned transformers beat. A linear SVM
gives margins, not probabilities; scikit-learn's ``CalibratedClassifierCV`` fits Platt's sigmoid per
class on held-out folds (Platt 1999) and normalises, so the output is a distribution like the
transformer's. The model file is a joblib pickle: load only models this platform trained (docs/classify.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bitextflow.classify.data import LabelledSentence
from bitextflow.errors import StageError

MODEL_FILENAME = "model.joblib"
CALIBRATION_FOLDS = 3


class SvmClassifier:
    kind = "svm"

    def __init__(self, pipeline, labels: Sequence[str]) -> None:
        self.pipeline = pipeline
        self.labels = list(labels)
        # the pipeline orders its columns by sorted label; ours follow `labels`
        self._columns = [list(pipeline.classes_).index(label) for label in self.labels]

    @classmethod
    def train(cls, train: Sequence[LabelledSentence], labels: Sequence[str], min_count: int = 5, c: float = 1.0) -> SvmClassifier:
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.pipeline import make_pipeline
        from sklearn.svm import LinearSVC

        smallest = min(sum(s.label == label for s in train) for label in labels)
        if smallest < CALIBRATION_FOLDS:
            raise StageError(
                f"the SVM baseline needs at least {CALIBRATION_FOLDS} training sentences per label for calibration; one label has {smallest}"
            )
        pipeline = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), min_df=min_count, sublinear_tf=True),
            CalibratedClassifierCV(LinearSVC(C=c), cv=CALIBRATION_FOLDS, method="sigmoid"),
        )
        try:
            pipeline.fit([s.text for s in train], [s.label for s in train])
        except ValueError as exc:  # e.g. no n-gram reaches min_count in a tiny set
            raise StageError(
                f"the SVM baseline cannot be trained on {len(train)} sentences ({exc}); add data or lower domain.training.min_count"
            ) from None
        return cls(pipeline, labels)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        return self.pipeline.predict_proba(list(texts))[:, self._columns].astype(np.float32)

    def save(self, folder: Path) -> None:
        import joblib

        joblib.dump(self.pipeline, folder / MODEL_FILENAME)

    @classmethod
    def load(cls, folder: Path, labels: Sequence[str]) -> SvmClassifier:
        import joblib

        return cls(joblib.load(folder / MODEL_FILENAME), labels)
