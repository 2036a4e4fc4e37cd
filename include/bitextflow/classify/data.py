"""Labelled sentences for domain classifiers: reading, checking, the sequential split and down-sampling.

The method is the MaCoCu DSI classifier's (van Noord et al., "MaCoCu DSI: Domain-specific identification
of web text"): a sentence takes the domain label of the site (or site section) it was crawled from, the
``Other`` class comes from general pages, the split is sequential per site so that the sentences of one
page never straddle train and test, and each class is down-sampled, the ``Other`` class to half.

A labelled set is a JSONL file, one sentence per line: ``{"text", "label", "site", "language"}``;
``site`` names the site or document a sentence came from (the unit of the split).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bitextflow.errors import StageError

OTHER = "Other"
SPLITS = ("train", "dev", "test")
#: Fewer sites than this in one class cannot give every split at least one whole site.
MIN_SITES_PER_LABEL = len(SPLITS)


@dataclass(frozen=True)
class LabelledSentence:
    text: str
    label: str
    site: str
    language: str


@dataclass(frozen=True)
class Split:
    train: list[LabelledSentence]
    dev: list[LabelledSentence]
    test: list[LabelledSentence]

    def counts(self) -> dict[str, dict[str, int]]:
        """Sentences per split and label, for the model's metadata."""
        return {name: dict(sorted(Counter(s.label for s in getattr(self, name)).items())) for name in SPLITS}


def write_labelled(path: Path, sentences: Iterable[LabelledSentence]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for sentence in sentences:
            out.write(json.dumps(asdict(sentence), ensure_ascii=False) + "\n")
    return path


def read_labelled(path: Path) -> list[LabelledSentence]:
    """A labelled JSONL file; a malformed line raises StageError naming the file and line."""
    if not path.is_file():
        raise StageError(
            f"labelled set {path} does not exist; give a JSONL file (text, label, site, language per line) in domain.training.data or --data"
        )
    sentences = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                sentences.append(
                    LabelledSentence(str(record["text"]), str(record["label"]), str(record["site"]), str(record["language"]))
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise StageError(
                    f"{path} line {number} is not a labelled sentence ({exc}); each line needs text, label, site and language"
                ) from None
    return sentences


def check_labels(sentences: Sequence[LabelledSentence], labels: Sequence[str], source: str, require_all: bool = True) -> None:
    """Every sentence's label must be one of `labels` (the first unknown one is named with the fix) and,
    with `require_all`, every label must have sentences."""
    known = set(labels)
    for index, sentence in enumerate(sentences, 1):
        if sentence.label not in known:
            raise StageError(
                f"{source}: sentence {index} (site {sentence.site!r}) has unknown domain label {sentence.label!r}; "
                f"known labels: {', '.join(labels)}; add it to domain.training.labels or fix the data"
            )
    missing = known - {s.label for s in sentences}
    if require_all and missing:
        raise StageError(
            f"{source}: no sentence has label(s) {', '.join(sorted(missing))}; add data for them or remove them from domain.training.labels"
        )


def sequential_split(sentences: Sequence[LabelledSentence], dev_share: float = 0.1, test_share: float = 0.1) -> Split:
    """Per label, whole sites in their order of appearance: the first go to train, then dev, then test.

    Cuts fall on site boundaries near the shares of the label's sentences, so a page (and a site) never
    straddles two splits; each split gets at least one site of every label.
    """
    by_label: dict[str, dict[str, list[LabelledSentence]]] = {}
    for sentence in sentences:
        by_label.setdefault(sentence.label, {}).setdefault(sentence.site, []).append(sentence)
    parts: dict[str, list[LabelledSentence]] = {name: [] for name in SPLITS}
    for label, sites in by_label.items():
        if len(sites) < MIN_SITES_PER_LABEL:
            raise StageError(
                f"label {label!r} has sentences from {len(sites)} site(s); the sequential split needs at least "
                f"{MIN_SITES_PER_LABEL} (one whole site per split): add sites for it"
            )
        names = list(sites)
        starts, seen = [], 0  # sentences before each site
        for name in names:
            starts.append(seen)
            seen += len(sites[name])
        first_dev = _first_site_from(starts, (1 - dev_share - test_share) * seen, 1, len(names) - 2)
        first_test = _first_site_from(starts, (1 - test_share) * seen, first_dev + 1, len(names) - 1)
        for index, name in enumerate(names):
            split = "train" if index < first_dev else "dev" if index < first_test else "test"
            parts[split].extend(sites[name])
    return Split(**parts)


def _first_site_from(starts: Sequence[int], sentences_before: float, lowest: int, highest: int) -> int:
    """Index of the first site starting at or past `sentences_before` sentences, kept within [lowest, highest]."""
    index = next((i for i, start in enumerate(starts) if start >= sentences_before), len(starts))
    return min(max(index, lowest), highest)


def downsample(sentences: Sequence[LabelledSentence], max_per_class: int, seed: int = 0) -> list[LabelledSentence]:
    """At most `max_per_class` sentences per label and half as many of ``Other`` (DSI), input order kept."""
    rng = random.Random(seed)
    by_label: dict[str, list[int]] = {}
    for index, sentence in enumerate(sentences):
        by_label.setdefault(sentence.label, []).append(index)
    keep: set[int] = set()
    for label, indices in by_label.items():
        cap = max(1, max_per_class // 2) if label == OTHER else max_per_class
        keep.update(indices if len(indices) <= cap else rng.sample(indices, cap))
    return [sentences[i] for i in sorted(keep)]


def label_crawled_sentences(
    rows: Iterable[Mapping[str, str]], site_labels: Mapping[str, str], other_sites: Sequence[str] = ()
) -> tuple[list[LabelledSentence], Counter[str]]:
    """Sentences of a crawl (``url``, ``text``, ``language`` rows) labelled by the URL prefix they start with.

    The longest matching prefix of `site_labels` wins (a section can differ from its site); URLs under
    `other_sites` are ``Other``; the rest are not used, counted under ``unlabelled_site``. The site of a
    sentence is its page URL, so the split keeps pages whole.
    """
    prefixes = sorted({**site_labels, **dict.fromkeys(other_sites, OTHER)}.items(), key=lambda item: -len(item[0]))
    labelled, dropped = [], Counter()
    for row in rows:
        label = next((label for prefix, label in prefixes if row["url"].startswith(prefix)), None)
        if label is None:
            dropped["unlabelled_site"] += 1
            continue
        labelled.append(LabelledSentence(row["text"], label, row["url"], row["language"]))
    return labelled, dropped
