"""Light URL models of the ``smart`` crawl strategy: hashed URL features and logistic regression, trained in seconds
on several sites and the WMT16 gold URL pairs, and updated during a crawl with the pairs it confirms.

García-Romero et al., "Smart Bilingual Focused Crawling of Parallel Documents" (2024), read P(lang(v)) and
P(parallel(u, v)) off URLs with fine-tuned XLM-R; :mod:`bitextflow.models.url_models` does the same with a truncated
multilingual-e5-small, which takes about 20 minutes on two CPU cores and learns the layouts of its training site.
These two take seconds and read what carries over from one site to another:

- **language**: character 1-4-grams within the tokens of :func:`bitextflow.text.urls.url_text` (``char_wb``: the
  markers ``es``, ``_s``, ``espanol``, ``spanish`` and the words of translated paths), hashed
  (:class:`sklearn.feature_extraction.text.HashingVectorizer`) into a multinomial logistic regression;
- **parallel**: what differs between the two URLs, which is what a translation changes: how many tokens differ, the
  tokens' Jaccard overlap, and where one token replaces another (or is only added) the tokens themselves, their
  shapes (``a1``: one letter, ``d1``: one digit), whether they name languages, whether they sit at the same place; hashed
  (:class:`sklearn.feature_extraction.FeatureHasher`) into a binary logistic regression.

Both are trained by stochastic gradient descent on the log loss (:class:`sklearn.linear_model.SGDClassifier`), so a
crawl can go on training a copy of them (:meth:`NgramUrlModels.learning_copy`) with what it confirms: the language
CLD2 finds for each page, and the page pairs it sees completed (:meth:`NgramUrlModels.learn`). A version folder holds
``url-models.json`` (``"kind": "ngram"``) and ``ngram-models.npz`` (weights of both models).
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction import FeatureHasher
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import SGDClassifier

from bitextflow.errors import StageError
from bitextflow.models.url_training_data import check_training_data, parallel_examples
from bitextflow.models.url_versions import FORMAT_VERSION, METADATA_FILENAME
from bitextflow.text.languages import normalise_language
from bitextflow.text.urls import url_text

KIND = "ngram"
WEIGHTS_FILENAME = "ngram-models.npz"
LANGUAGE_FEATURES = 2**18
PAIR_FEATURES = 2**16
#: A token is a language name or code to :func:`bitextflow.text.languages.normalise_language` when it maps to a
#: two-letter code other than itself spelled out (``es``, ``spa``, ``spanish``, ``espanol``).
_LANGUAGE_TOKEN_LENGTHS = range(2, 12)


@dataclass(frozen=True)
class NgramSettings:
    """How the two models are trained (``crawl.url_model_*`` where a pair config sets them)."""

    epochs: int = 10
    alpha: float = 1e-5  # L2 regularisation of SGD
    seed: int = 13
    online_weight: float = 2.0  # weight of an example the crawl confirms, against 1 for a training example


def _language_vectoriser() -> HashingVectorizer:
    return HashingVectorizer(
        analyzer="char_wb", ngram_range=(1, 4), n_features=LANGUAGE_FEATURES, alternate_sign=False, lowercase=True
    )


_PAIR_HASHER = FeatureHasher(n_features=PAIR_FEATURES, input_type="dict", alternate_sign=False)


def _shape(token: str) -> str:
    """A token's kind and length, which carry over between sites: ``a1`` (one letter), ``a2``, ``d3`` (digits), ..."""
    kind = "d" if token.isdigit() else "a" if token.isalpha() else "x"
    return f"{kind}{min(len(token), 9)}"


def _names_language(token: str) -> bool:
    return len(token) in _LANGUAGE_TOKEN_LENGTHS and len(code := normalise_language(token)) == 2 and code.isalpha()


def pair_features(text_a: str, text_b: str) -> dict[str, float]:
    """The features of a URL pair (as :func:`bitextflow.text.urls.url_text` gives each URL): module docstring. A
    translation's URL replaces one token by another (``en`` by ``es``, ``e`` by ``s``, ``1`` by ``2``) or adds one
    (``/es/`` before an unmarked path); what it replaces or adds is only read as such when nothing else differs."""
    tokens_a, tokens_b = text_a.lower().split(), text_b.lower().split()
    set_a, set_b = set(tokens_a), set(tokens_b)
    only_a = [token for token in tokens_a if token not in set_b]
    only_b = [token for token in tokens_b if token not in set_a]
    features: dict[str, float] = {
        f"differing={min(len(only_a) + len(only_b), 8)}": 1.0,
        "jaccard": len(set_a & set_b) / len(set_a | set_b) if set_a | set_b else 0.0,
    }
    if len(only_a) == 1 and len(only_b) == 1:  # one token replaced by another
        a, b = only_a[0], only_b[0]
        features |= {f"swap={a}>{b}": 1.0, f"swap_shape={_shape(a)}>{_shape(b)}": 1.0}
        features["swap_aligned"] = float(len(tokens_a) == len(tokens_b) and tokens_a.index(a) == tokens_b.index(b))
        features["swap_languages"] = float(_names_language(a) and _names_language(b))
    elif len(only_a) + len(only_b) == 1:  # one token added (an unmarked page and its marked version)
        token = (only_a or only_b)[0]
        features |= {f"added={token}": 1.0, f"added_shape={_shape(token)}": 1.0, "added_language": float(_names_language(token))}
    else:
        for token in only_a[:4]:
            features[f"only_a_shape={_shape(token)}"] = 1.0
        for token in only_b[:4]:
            features[f"only_b_shape={_shape(token)}"] = 1.0
    return features


def _pair_matrix(texts: Sequence[tuple[str, str]]) -> Any:
    return _PAIR_HASHER.transform(pair_features(a, b) for a, b in texts)


class NgramUrlModels:
    """The two models, as the ``UrlModels`` protocol of the crawler wants them, and trainable on during a crawl."""

    def __init__(self, language: SGDClassifier, parallel: SGDClassifier, metadata: dict[str, Any], version: str = ""):
        self.language_model = language
        self.parallel_model = parallel
        self.metadata = metadata
        self.version = version or metadata.get("version", "")
        self.online_weight = float(metadata.get("settings", {}).get("online_weight", NgramSettings.online_weight))
        self._vectoriser = _language_vectoriser()
        self._label = {str(label): index for index, label in enumerate(language.classes_)}
        self._language_cache: dict[str, np.ndarray] = {}

    # -- the UrlModels protocol --------------------------------------------------------------------------------
    def language_probabilities(self, urls: Sequence[str], language: str) -> list[float]:
        new = [url for url in dict.fromkeys(urls) if url not in self._language_cache]
        if new:
            rows = self.language_model.predict_proba(self._vectoriser.transform([url_text(url) for url in new]))
            self._language_cache.update(zip(new, rows, strict=True))
        index = self._label.get(normalise_language(language))
        if index is None:  # a language no training page was in
            return [0.0] * len(urls)
        return [float(self._language_cache[url][index]) for url in urls]

    def parallel_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        rows = self.parallel_model.predict_proba(_pair_matrix([(url_text(a), url_text(b)) for a, b in pairs]))
        return [float(row[1]) for row in rows]

    # -- learning during a crawl --------------------------------------------------------------------------------
    def learning_copy(self) -> NgramUrlModels:
        """A copy a crawl may train on without changing the models other crawls load."""
        return NgramUrlModels(copy.deepcopy(self.language_model), copy.deepcopy(self.parallel_model), self.metadata, self.version)

    def learn(
        self,
        pages: Sequence[tuple[str, str]] = (),
        pairs: Sequence[tuple[str, str]] = (),
        not_pairs: Sequence[tuple[str, str]] = (),
    ) -> None:
        """One gradient step on what a crawl confirmed: ``pages`` (URL, language CLD2 found; languages the model does
        not know are skipped), ``pairs`` of URLs whose pages translate each other and ``not_pairs`` that do not."""
        known = [(url, self._label[code]) for url, language in pages if (code := normalise_language(language)) in self._label]
        if known:
            x = self._vectoriser.transform([url_text(url) for url, _label in known])
            labels = self.language_model.classes_[[label for _url, label in known]]
            self.language_model.partial_fit(x, labels, sample_weight=np.full(len(known), self.online_weight))
            self._language_cache.clear()  # every URL's probabilities moved
        examples = [(a, b, 1) for a, b in pairs] + [(a, b, 0) for a, b in not_pairs]
        if examples:
            x = _pair_matrix([(url_text(a), url_text(b)) for a, b, _label in examples])
            self.parallel_model.partial_fit(
                x, np.array([label for *_urls, label in examples]), sample_weight=np.full(len(examples), self.online_weight)
            )

    # -- saving and loading -------------------------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        """``ngram-models.npz`` and ``url-models.json`` (written last: a folder without it is incomplete)."""
        folder.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            folder / WEIGHTS_FILENAME,
            language_coef=self.language_model.coef_.astype(np.float32),
            language_intercept=self.language_model.intercept_,
            language_classes=np.array(self.language_model.classes_, dtype=str),
            parallel_coef=self.parallel_model.coef_.astype(np.float32),
            parallel_intercept=self.parallel_model.intercept_,
        )
        (folder / METADATA_FILENAME).write_text(json.dumps(self.metadata, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: Path, metadata: dict[str, Any], version: str = "") -> NgramUrlModels:
        try:
            with np.load(folder / WEIGHTS_FILENAME) as weights:
                arrays = {name: weights[name] for name in weights.files}
        except (OSError, ValueError, KeyError) as exc:
            raise StageError(
                f"URL models at {folder}: {WEIGHTS_FILENAME} cannot be read ({exc}); train the version again"
            ) from None
        language = _restored(arrays["language_coef"], arrays["language_intercept"], arrays["language_classes"], metadata)
        parallel = _restored(arrays["parallel_coef"], arrays["parallel_intercept"], np.array([0, 1]), metadata)
        return cls(language, parallel, metadata, version)


def _classifier(settings: NgramSettings) -> SGDClassifier:
    return SGDClassifier(loss="log_loss", alpha=settings.alpha, random_state=settings.seed)


def _restored(coef: np.ndarray, intercept: np.ndarray, classes: np.ndarray, metadata: dict[str, Any]) -> SGDClassifier:
    """A trained classifier from its weights (what :meth:`SGDClassifier.fit` leaves, enough to predict and go on
    training with ``partial_fit``)."""
    model = _classifier(NgramSettings(**metadata.get("settings", {})))
    model.coef_ = coef.astype(np.float64)
    model.intercept_ = intercept.astype(np.float64)
    model.classes_ = classes
    model.t_ = 1.0 + metadata.get("training_data", {}).get("pair_examples", 0)  # the learning-rate schedule's step
    model.n_features_in_ = coef.shape[1]
    return model


def _fit(model: SGDClassifier, x: Any, y: np.ndarray, settings: NgramSettings) -> SGDClassifier:
    """Epochs of ``partial_fit`` over shuffled rows, classes weighed by inverse frequency (four synthetic negatives per
    positive must not teach "never parallel")."""
    classes, counts = np.unique(y, return_counts=True)
    weight_of = {label: len(y) / (len(classes) * count) for label, count in zip(classes, counts, strict=True)}
    weights = np.array([weight_of[label] for label in y])
    order = np.arange(len(y))
    rng = np.random.default_rng(settings.seed)
    for _epoch in range(settings.epochs):
        rng.shuffle(order)
        model.partial_fit(x[order], y[order], classes=classes, sample_weight=weights[order])
    return model


def train_ngram_models(
    pages: Sequence[tuple[str, str]],
    pairs: Sequence[tuple[str, str]],
    out_dir: Path | None = None,
    settings: NgramSettings | None = None,
    required_languages: Sequence[str] = (),
) -> NgramUrlModels:
    """Both models from (url, language) ``pages`` (the crawl logs of one or more sites) and (url_a, url_b) parallel
    ``pairs`` (their document pairs, plus gold pairs of other sites such as WMT16's), with the seed's synthetic
    negatives (:func:`bitextflow.models.url_training_data.parallel_examples`); saved to ``out_dir`` when given."""
    settings = settings or NgramSettings()
    labelled = [(url, code) for url, language in pages if (code := normalise_language(language))]
    languages = sorted({code for _url, code in labelled})
    check_training_data(languages, [normalise_language(lang) for lang in required_languages], pairs)
    started = time.monotonic()
    language_model = _fit(
        _classifier(settings),
        _language_vectoriser().transform([url_text(url) for url, _code in labelled]),
        np.array([code for _url, code in labelled]),
        settings,
    )
    examples = parallel_examples(pairs, labelled, random.Random(settings.seed))
    parallel_model = _fit(
        _classifier(settings),
        _pair_matrix([(e.text_a, e.text_b) for e in examples]),
        np.array([e.label for e in examples]),
        settings,
    )
    metadata = {
        "format": FORMAT_VERSION,
        "kind": KIND,
        "settings": asdict(settings),
        "languages": languages,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "train_seconds": round(time.monotonic() - started, 2),
        "training_data": {"pages": len(labelled), "pairs": len(pairs), "pair_examples": len(examples)},
    }
    models = NgramUrlModels(language_model, parallel_model, metadata)
    if out_dir is not None:
        models.save(out_dir)
    return models
