"""The training data of the URL classifiers (:mod:`bitextflow.models.url_training`).

Training data are the platform's own outputs: URL -> CLD2 language from a crawl log, and URL pairs from
aligned documents, plus the seed's synthetic negatives for each positive pair (u, v): a random URL of
v's language (random match), the URL of v's language whose URL tokens overlap u's most (maximum
Jaccard), v with a random token removed (removed tokens), and the same-language URL nearest to u
(monolingual pair). Both orders of each positive are used.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.text.urls import url_text, url_tokens


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def read_gold_pairs(path: Path) -> list[tuple[str, str]]:
    """The (URL, URL) pairs of a WMT16 document-alignment gold file (``test.pairs``: tab-separated, the
    last two fields are the English and the French URL): training pairs from other web sites."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.rstrip("\n").split("\t")
        if len(fields) >= 2 and fields[0] and fields[1]:
            pairs.append((fields[-2], fields[-1]))
    return pairs


def check_training_data(languages: Sequence[str], required_languages: Sequence[str], pairs: Sequence[tuple[str, str]]) -> None:
    """Refuses training data that cannot make URL models: pages in fewer than two ``languages`` or without one of
    ``required_languages`` (the pair's), or no parallel ``pairs``; the error says what to do."""
    missing = [lang for lang in required_languages if lang not in languages]
    if missing or len(languages) < 2:
        raise StageError(
            f"URL models need pages in at least two languages, including {', '.join(required_languages) or 'the pair'}; "
            f"the training crawl has {', '.join(languages) or 'none'} (crawl more pages, or check crawl.seeds)"
        )
    if not pairs:
        raise StageError("URL models need parallel URL pairs; align_documents found none in this run (crawl more pages)")


def pages_from_crawl_log(lines: Iterable[dict[str, Any]]) -> tuple[list[tuple[str, str]], StageCounts]:
    """(url, CLD2 language) of every page of a crawl log that was downloaded and identified, and the count
    of log lines left out by reason."""
    counts = StageCounts("train_url_models.pages")
    pages: dict[str, str] = {}
    for line in lines:
        counts.seen()
        if line.get("outcome") != "fetched" or not 200 <= int(line.get("status") or 0) < 300:
            counts.drop("not_downloaded")
        elif not line.get("detected_language"):
            counts.drop("no_language_detected")
        elif line["url"] in pages:
            counts.drop("duplicate_url")
        else:
            pages[line["url"]] = line["detected_language"]
            counts.keep()
    return list(pages.items()), counts


@dataclass(frozen=True)
class PairExample:
    text_a: str
    text_b: str
    label: int  # 1: parallel
    kind: str  # positive, random_match, max_jaccard, removed_token, monolingual
    group: int  # the positive it was made from (held-out splits keep a group together)


def parallel_examples(
    pairs: Sequence[tuple[str, str]], pages: Sequence[tuple[str, str]], rng: random.Random
) -> list[PairExample]:
    """Positives (both orders of each pair) and the seed's four synthetic negatives for each."""
    language = dict(pages)
    partners: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        partners[a].add(b)
        partners[b].add(a)
    by_language: dict[str, list[str]] = defaultdict(list)
    for url, lang in pages:
        by_language[lang].append(url)
    for a, b in pairs:  # pair URLs missing from the log still serve as candidates of their side
        for url, side in ((a, "\0a"), (b, "\0b")):
            if url not in language:
                language[url] = side
                by_language[side].append(url)
    tokens = {url: url_tokens(url) for urls in by_language.values() for url in urls}

    def nearest(url: str, pool: Sequence[str], excluded: set[str]) -> str | None:
        best, best_score = None, -1.0
        for candidate in pool:
            if candidate not in excluded:
                score = _jaccard(tokens[url], tokens[candidate])
                if score > best_score:
                    best, best_score = candidate, score
        return best

    examples: list[PairExample] = []
    oriented = [(a, b) for a, b in dict.fromkeys(pairs)] + [(b, a) for a, b in dict.fromkeys(pairs)]
    for group, (u, v) in enumerate(oriented):
        group_id = group % (len(oriented) // 2)  # both orders of one pair share a group
        text_u, text_v = url_text(u), url_text(v)
        examples.append(PairExample(text_u, text_v, 1, "positive", group_id))
        not_partners = partners[u] | {u}
        same_as_v = by_language[language[v]]
        candidates = [url for url in same_as_v if url not in not_partners]
        if candidates:
            examples.append(PairExample(text_u, url_text(rng.choice(candidates)), 0, "random_match", group_id))
        similar = nearest(u, same_as_v, not_partners)
        if similar is not None:
            examples.append(PairExample(text_u, url_text(similar), 0, "max_jaccard", group_id))
        words = text_v.split()
        if len(words) > 1:
            del words[rng.randrange(len(words))]
            examples.append(PairExample(text_u, " ".join(words), 0, "removed_token", group_id))
        monolingual = nearest(u, by_language[language[u]], {u})
        if monolingual is not None:
            examples.append(PairExample(text_u, url_text(monolingual), 0, "monolingual", group_id))
    return examples
