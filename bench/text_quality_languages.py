"""Text quality in every script: the share of translated running text of GNOME's help that the MaCoCu labels keep.

``bench/text_quality.py`` measures the labels against annotators in five languages, four in the Latin or Cyrillic
script. This one asks the question those languages cannot: does any script lose its running text for the way it is
written (vowel signs that are combining marks, Latin key names in a script without case, quotation marks)?

Data: GNOME's desktop help (Debian's ``gnome-user-docs``, fetched with ``apt-get download`` into ``--cache`` as
``bench/paragraph_lid.py`` does, or ``--help-dir`` names an unpacked ``usr/share/help``), about 40 translations in a
dozen scripts. Its translators write running text: the paragraphs of a
page's top level and sections (:func:`bitextflow_local.localsite.gnome_help.running_paragraphs`; list items, steps,
notes and tables are left out, as they are often fragments). itstool keeps the English page's elements in order, so on
a page with as many such paragraphs as the English one, paragraph i translates paragraph i; it counts when it is
translated (:func:`~bitextflow_local.localsite.gnome_help.is_translated`: a translator left English where it is not)
and holds at least 60 Latin-character equivalents (:func:`bitextflow.text.lengths.weighted_length`). A language
with fewer than 30 such paragraphs is left out.

Metric, per locale folder: ``keep_share``, the share of those paragraphs that
:func:`bitextflow.extract.text_quality.paragraph_quality` labels ``PT`` or ``RTE`` (language identification
included), ``wrong_language_share`` (``WLN``), and for the others the term that weighed most in the drop
(``other`` where the identifier named another language). It should be near 1 in every language: a translation is
publishable running text, though a few paragraphs are file paths or commands.

    .venv/bin/python bench/text_quality_languages.py [--help-dir DIR] [--json]

Where the package cannot be had (no Debian package archive) and no ``--help-dir`` is given, it prints why on stderr
and, with ``--json``, ``{"skipped": true, ...}``; it exits 0. A ``--help-dir`` without GNOME's help exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from bitextflow.errors import BitextflowError
from bitextflow.extract import text_quality as tq
from bitextflow.extract.structure import letters_key
from bitextflow.text.lengths import weighted_length
from bitextflow_local.localsite.gnome_help import (
    DOCUMENT,
    add_help_arguments,
    help_folder,
    is_translated,
    locale_language,
    running_paragraphs,
    translated_blocks,
)

MIN_LENGTH = 60  # Latin-character equivalents
MIN_PARAGRAPHS = 30


def translated_paragraphs(help_root: Path, locale: str) -> list[str]:
    """The running paragraphs of ``locale``'s pages that translate the English page's, by position."""
    return [
        text
        for original, text in translated_blocks(help_root, locale, running_paragraphs)
        if weighted_length(text) >= MIN_LENGTH and is_translated(letters_key(original), letters_key(text))
    ]


def judged(texts: list[str], language: str) -> dict:
    """The labels of ``texts`` in ``language``: keep and WLN shares, and the term that weighed most in each drop."""
    labels: Counter[str] = Counter()
    decided_by: Counter[str] = Counter()
    for text in texts:
        found = tq.terms(text, language)
        verdict = tq.verdict(found)
        labels[verdict.label] += 1
        if verdict.label not in tq.KEEP_LABELS:
            decided_by["other" if found["other"] else max(tq.WEIGHTS, key=lambda name: tq.WEIGHTS[name] * found[name])] += 1
    return {
        "paragraphs": len(texts),
        "keep_share": round(sum(labels[label] for label in tq.KEEP_LABELS) / len(texts), 4),
        "wrong_language_share": round(labels["WLN"] / len(texts), 4),
        "drop_terms": dict(decided_by.most_common()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_help_arguments(parser)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        help_root = help_folder(args.help_dir, args.cache)
    except BitextflowError as error:
        if args.help_dir is not None:  # the folder named is wrong: an error, not a skip
            print(f"bench/text_quality_languages.py: {error}", file=sys.stderr)
            return 2
        # no package archive here (not Debian, or offline): skipped, as text_quality.py is without its data
        reason = f"{error}; or pass --help-dir with an unpacked usr/share/help"
        print(f"bench/text_quality_languages.py: skipped: {reason}", file=sys.stderr)
        if args.json:
            print(json.dumps({"skipped": True, "reason": reason}))
        return 0
    results: dict[str, dict] = {}
    judged_texts = 0
    start = time.perf_counter()
    for locale in sorted(path.parent.name for path in help_root.glob(f"*/{DOCUMENT}")):
        texts = translated_paragraphs(help_root, locale) if locale != "C" else []
        if len(texts) < MIN_PARAGRAPHS:
            continue
        results[locale] = r = judged(texts, locale_language(locale))
        judged_texts += len(texts)
        print(
            f"{locale:9} {r['paragraphs']:5} keep {r['keep_share']:.3f} WLN {r['wrong_language_share']:.3f}  {r['drop_terms']}",
            flush=True,
        )
    seconds = time.perf_counter() - start
    shares = {folder: r["keep_share"] for folder, r in results.items()}
    macro = round(sum(shares.values()) / len(shares), 4)
    lowest = sorted(shares, key=shares.__getitem__)[:5]
    print(f"{len(results)} languages, {judged_texts:,} paragraphs: mean keep share {macro:.3f}, lowest {lowest}")
    if args.json:
        summary = {
            "languages": results,
            "macro_keep_share": macro,
            "min_keep_share": min(shares.values()),
            "lowest": lowest,
            "help": str(help_root),
            "paragraphs_per_s": round(judged_texts / seconds, 1),  # page parsing included
        }
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
