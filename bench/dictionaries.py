"""Bilingual dictionaries as the aligners see them: how often the dictionary overlap alone ranks a translation first.

For each pair, each variant of its dictionary is met with parallel text the way the aligners meet it
(:class:`bitextflow.align.lexical.LexicalMatches`: words folded and stemmed, ``sim`` = the share of a 1-1 bead's word
types covered through the dictionary or by identical tokens). Of N translation pairs, every sentence (or block) of
the first language is compared with the N of the second:

- ``top1``: the share whose translation has the highest overlap, ties counted as misses;
- ``true_overlap``: the mean overlap of the translations; ``mean_overlap``: the mean over all N x N (the noise floor:
  what a wrong pair gets).

Parallel text, each where the language has it: Tatoeba (``--data``, the 1,000 test pairs of each language), 1,500
blocks of Debian's installation guide, 1,500 blocks of the Debian Reference from the local site of
``bench/release_precision.py --pair en-XX`` where that benchmark has built it (never built here), and 1,500 messages
of three English words or more from Debian's message catalogs (``score.training_data.catalog_pairs``: the only one
with Arabic). Blocks are sampled
with seed 0, so every variant sees the same ones.

Variants (lemma pairs as read from Debian's packages; nothing is built twice, ``.deb`` files are cached):

- ``shipped``: what the aligners load (:func:`bitextflow.align.dictionary.load_dictionary`);
- ``none``: no dictionary, identical tokens only;
- ``direct``: the pair's own packages, without the pivot languages (for a pair completed through them);
- ``direct + pivots through N+ lemmas``: completed with the compositions through the pivot languages that N pivot
  lemmas or more lead to (:mod:`bitextflow.align.dictionary_pivots` ships N = 2, Tanaka and Umemura's inverse
  consultation), and the same on the direct dictionary cut to 10,000 random pairs (``direct cut to 10,000``), for a
  pair whose direct dictionary is large enough to be shipped alone: what completing it would do, and what the
  composition does to a small one;
- ``kana lemmas under N chars left out`` (pairs with Japanese): :data:`bitextflow.align.lexical.MIN_KANA_LEMMA_CHARS`
  at 0 (every reading kept), and at 2 and 4 for the choice of 3;
- ``Arabic as written`` (pairs with Arabic): :data:`bitextflow.align.lexical.STEMMED_LANGUAGES` empty; ``Arabic through
  Snowball's stemmer alone``: :data:`bitextflow.align.lexical.ARABIC_PREFIXES` empty.

Usage, from the project root (builds the missing dictionaries and pivot legs first: minutes, once)::

    .venv/bin/python bench/dictionaries.py [--json] [--data ../shared/eval/tatoeba] [--pairs en-es,en-ru,en-ja]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bitextflow.align import lexical
from bitextflow.align.dictionary import BilingualDictionary, default_cache_dir, load_dictionary
from bitextflow.align.dictionary_dumps import DictionaryUnavailable, direct_pairs, has_packages
from bitextflow.align.dictionary_pivots import MIN_DIRECT_PAIRS, MIN_PIVOT_LEMMAS, pivot_compositions
from bitextflow.align.lexical import LexicalMatches, WordTranslations, words
from bitextflow.score.training_data import catalog_pairs, installation_guide_pages
from bitextflow.text.languages import three_letter_code

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "tatoeba"
DEFAULT_PAIRS = "en-es,en-fr,en-el,en-ru,en-ja,en-ar"
BLOCKS = 1500
SEED = 0
Pairs = set[tuple[str, str]]


def tatoeba(data: Path, language: str) -> list[tuple[str, str]]:
    code = {"zho": "cmn"}.get(three_letter_code(language) or language, three_letter_code(language) or language)
    english, other = data / f"tatoeba.{code}-eng.eng", data / f"tatoeba.{code}-eng.{code}"
    if not english.is_file():
        return []
    return list(zip(english.read_text().splitlines(), other.read_text().splitlines(), strict=True))


def guide_blocks(language: str) -> list[tuple[str, str]]:
    return _sample([pair for page in installation_guide_pages("en", language) for pair in page])


def catalog_messages(language: str) -> list[tuple[str, str]]:
    """1,500 messages of three English words or more and their translations, from Debian's message catalogs."""
    return _sample([(a, b) for a, b in catalog_pairs("en", language).pairs if len(a.split()) >= 3])


def reference_blocks(language: str) -> list[tuple[str, str]]:
    """The Debian Reference's translated blocks of pages whose block counts match, from the local site's cache."""
    from bitextflow.extract.structure import page_blocks, parse
    from bitextflow_local.localsite.layouts import site_language
    from bitextflow_local.localsite.paths import default_cache_dir as site_cache
    from bitextflow_local.localsite.truth import Truth

    code = site_language(language)
    site = next((path for path in (site_cache().with_name(f"localsite-en-{code}"), site_cache()) if path.is_dir()), None)
    if site is None or not (site / "truth.json").is_file():
        return []
    truth, pairs = Truth.load(site), []
    for path_a, path_b in truth.pairs("en", code):
        if path_a.startswith("reference/") and (site / "site" / path_b).is_file():
            blocks_a, blocks_b = (
                [text for _kind, text in page_blocks(parse((site / "site" / p).read_text()))] for p in (path_a, path_b)
            )
            if len(blocks_a) == len(blocks_b):
                pairs += [(a, b) for a, b in zip(blocks_a, blocks_b, strict=True) if a != b and len(a) > 30]
    return _sample(pairs)


def _sample(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The same :data:`BLOCKS` pairs in every run, whatever order they were found in."""
    ordered = sorted(pairs)
    random.Random(SEED).shuffle(ordered)
    return ordered[:BLOCKS]


def retrieval(pairs: list[tuple[str, str]], translations: WordTranslations) -> dict[str, float]:
    language_a, language_b = translations.languages
    source = [set(words(a, language=language_a)) for a, _ in pairs]
    target = [set(words(b, language=language_b)) for _, b in pairs]
    similarity = LexicalMatches(source, target, translations, 1, 1).similarity(1, 1, 0, len(source), 0, len(target))
    best = similarity.max(axis=1)
    truth = np.diag(similarity)
    alone = (similarity == best[:, None]).sum(axis=1) == 1
    return {
        "top1": round(float(np.mean((truth == best) & alone)), 4),
        "true_overlap": round(float(truth.mean()), 4),
        "mean_overlap": round(float(similarity.mean()), 4),
    }


def table(language: str, pairs: Pairs | None) -> WordTranslations:
    return WordTranslations(BilingualDictionary("en", language, sorted(pairs), {}) if pairs else None)


@contextlib.contextmanager
def lexical_choice(name: str, value: Any) -> Iterator[None]:
    """:mod:`bitextflow.align.lexical`'s constant ``name`` set to ``value`` for a variant."""
    kept = getattr(lexical, name)
    setattr(lexical, name, value)
    try:
        yield
    finally:
        setattr(lexical, name, kept)


def pivot_counts(language: str) -> Counter[tuple[str, str]]:
    """Each composed pair with the number of pivot lemmas it came through (the shipped dictionary keeps those of
    :data:`MIN_PIVOT_LEMMAS` or more, where it composes at all)."""
    counts, _pivots = pivot_compositions("en", language, lambda a, b: direct_pairs(a, b, default_cache_dir()), has_packages)
    return counts


def variants(language: str) -> Iterator[tuple[str, WordTranslations, int]]:
    shipped = load_dictionary("en", language)
    yield "shipped", WordTranslations(shipped), len(shipped) if shipped else 0
    yield "none", WordTranslations(None), 0
    try:
        direct, _packages = direct_pairs("en", language, default_cache_dir())
    except DictionaryUnavailable:
        direct = set()
    counts = pivot_counts(language)
    composed = {lemmas: {pair for pair, n in counts.items() if n >= lemmas} for lemmas in (1, 2, 3)} if counts else {}
    completed = shipped is not None and bool(shipped.manifest.get("pivots"))
    bases = {"direct": direct}
    if completed:
        yield "direct", table(language, direct), len(direct)
    else:
        bases[f"direct cut to {MIN_DIRECT_PAIRS:,}"] = cut = set(
            random.Random(SEED).sample(sorted(direct), min(MIN_DIRECT_PAIRS, len(direct)))
        )
        yield f"direct cut to {MIN_DIRECT_PAIRS:,}", table(language, cut), len(cut)
    for name, base in bases.items():
        for lemmas, pairs in composed.items():
            if not (completed and lemmas == MIN_PIVOT_LEMMAS):  # that one is the shipped dictionary
                yield f"{name} + pivots through {lemmas}+ lemmas", table(language, base | pairs), len(base | pairs)
    if language == "ja" and shipped is not None:
        for chars in (0, 2, 4):
            with lexical_choice("MIN_KANA_LEMMA_CHARS", chars):
                yield f"kana lemmas under {chars} chars left out", WordTranslations(shipped), len(shipped)
    if language == "ar" and shipped is not None:
        with lexical_choice("STEMMED_LANGUAGES", frozenset()):
            yield "Arabic as written", WordTranslations(shipped), len(shipped)
        with lexical_choice("ARABIC_PREFIXES", ()):
            yield "Arabic through Snowball's stemmer alone", WordTranslations(shipped), len(shipped)


def measure(data: Path, languages: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"min_direct_pairs": MIN_DIRECT_PAIRS, "min_kana_lemma_chars": lexical.MIN_KANA_LEMMA_CHARS}
    result["pairs"] = {}
    for language in languages:
        sources = {"tatoeba": tatoeba(data, language), "installation-guide": guide_blocks(language)}
        sources["debian-reference"] = reference_blocks(language)
        sources["catalogs"] = catalog_messages(language)
        sources = {name: pairs for name, pairs in sources.items() if pairs}
        entry: dict[str, Any] = {"texts": {name: len(pairs) for name, pairs in sources.items()}, "variants": {}}
        for name, translations, size in variants(language):
            figures = {source: retrieval(pairs, translations) for source, pairs in sources.items()}
            entry["variants"][name] = {"lemma_pairs": size, **figures}
            cells = "  ".join(
                f"{source} {f['top1']:.3f} ({f['true_overlap']:.3f}/{f['mean_overlap']:.3f})" for source, f in figures.items()
            )
            print(f"en-{language} {name:<42} {size:>8,}  {cells}", flush=True)
        result["pairs"][f"en-{language}"] = entry
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="Tatoeba test pairs (tatoeba.XXX-eng.*); skipped if absent"
    )
    parser.add_argument("--pairs", default=DEFAULT_PAIRS, help=f"comma-separated en-XX pairs (default {DEFAULT_PAIRS})")
    args = parser.parse_args()
    languages = [pair.split("-", 1)[1] for pair in args.pairs.split(",")]
    if any(not pair.startswith("en-") for pair in args.pairs.split(",")):
        print("dictionaries: every pair is en-XX (the parallel text pairs English with each language)", file=sys.stderr)
        return 2
    print("pair   variant   lemma pairs   per source: top1 (true overlap / mean overlap)")
    result = measure(args.data, languages)
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
