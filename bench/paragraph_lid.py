"""Paragraph and page language identification within a pair's languages, as the extract stage asks it, on GNOME's
help.

Data: Debian's ``gnome-user-docs`` (GNOME's desktop help, Mallard pages in English and about 40 translations, each
made from the English page's strings, so paragraphs correspond by position). The package is fetched with
``apt-get download`` into ``--cache`` (nothing is installed), or ``--help-dir`` names an unpacked ``usr/share/help``.
For every page whose translation has as many paragraphs (``p``, ``title`` and ``item`` outside ``info``), each
translated paragraph of at least four English words that differs from the English one is identified with
:func:`bitextflow.extract.language.identify`, the candidates being the pair's two languages (``{"en", LANG}``, what
a bilingual page's language set holds). A paragraph is right when the answer is the translation's language; the
translator's paragraphs left in English or quoting a name only ("Praveen Kumar ...") count as wrong, the same for
every identifier.

Pages: every page whose paragraphs of four English words or more are all translated, its paragraphs one per line as a
page's main text, named as the extract stage names a page of the pair ``en``-``LANG``
(:func:`bitextflow.text.languages.document_language`, then :func:`bitextflow.extract.language.page_language`). A page
named otherwise is no page of the pair: it is neither aligned nor released.

Identifiers: ``shipped`` (``extract.language_identifier: heliport``, the default: heliport's answer first, then CLD2
and fastText; needs ``.venv-heliport``, from ``bitextflow-local prepare``) and ``cld2`` (CLD2, then fastText).
Figures per identifier: the share right per language, its mean over the languages (``macro_accuracy``) and the wrong
answers most given; the same for pages (``page_macro_accuracy``, ``page_per_language``, ``page_wrong_answers``); languages with fewer than ``--min-paragraphs`` paragraphs are left out. Speed: paragraphs per wall
second, the answer caches emptied first.

    .venv/bin/python bench/paragraph_lid.py [--languages hr,sr@latin,fa] [--help-dir DIR] --json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from lxml import etree

from bitextflow.errors import BitextflowError
from bitextflow.extract import language
from bitextflow.text.languages import document_language
from bitextflow_local.localsite.gnome_help import (
    MALLARD,
    add_help_arguments,
    help_folder,
    locale_language,
    translated_blocks,
    translated_pages,
)

MIN_ENGLISH_WORDS = 4


def paragraphs(root: etree._Element) -> list[str]:
    """The page's paragraphs, titles and list items in document order, outside its ``info`` block."""
    found = []
    for element in root.iter(MALLARD + "p", MALLARD + "title", MALLARD + "item"):
        if any(ancestor.tag == MALLARD + "info" for ancestor in element.iterancestors()):
            continue
        if element.tag == MALLARD + "item" and element.find(MALLARD + "p") is not None:
            continue  # an item of paragraphs: they are counted themselves
        found.append(re.sub(r"\s+", " ", "".join(element.itertext())).strip())
    return found


def translated(help_dir: Path, locale: str) -> Iterator[str]:
    """The translation's paragraphs that differ from the English ones, on pages whose paragraphs correspond by position."""
    for english, translation in translated_blocks(help_dir, locale, paragraphs):
        if english != translation and len(english.split()) >= MIN_ENGLISH_WORDS:
            yield translation


def translated_page_texts(help_dir: Path, locale: str) -> Iterator[str]:
    """The main text of each page whose paragraphs of four English words or more are all translated, one per line."""
    for page in translated_pages(help_dir, locale, paragraphs):
        counted = [(english, translation) for english, translation in page if len(english.split()) >= MIN_ENGLISH_WORDS]
        if counted and all(english != translation for english, translation in counted):
            yield "\n".join(translation for _english, translation in page)


def accuracy(answers: dict[str, list[str]], prefix: str = "") -> dict:
    """The share of right answers per language, their mean and the wrong answers most given."""
    per_language = {code: round(sum(answer == code for answer in found) / len(found), 4) for code, found in answers.items()}
    return {
        f"{prefix}macro_accuracy": round(sum(per_language.values()) / len(per_language), 4),
        f"{prefix}per_language": per_language,
        f"{prefix}wrong_answers": {
            code: dict(Counter(answer for answer in found if answer != code).most_common(3)) for code, found in answers.items()
        },
    }


def measured(texts: dict[str, list[str]], pages: dict[str, list[str]], first: language.Heliport | None) -> dict:
    language.second_opinion.cache_clear()
    started = time.monotonic()
    answers = {
        code: [language.identify(text, frozenset({"en", code}), first)[0] for text in lines] for code, lines in texts.items()
    }
    seconds = time.monotonic() - started
    named = {
        code: [language.page_language(text, document_language(text), frozenset({"en", code}), first)[0] for text in found]
        for code, found in pages.items()
        if found
    }
    return {
        **accuracy(answers),
        "languages": len(answers),
        "paragraphs_per_s": round(sum(map(len, answers.values())) / seconds, 1),
        **accuracy(named, "page_"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_help_arguments(parser)
    parser.add_argument("--languages", default="", help="comma-separated GNOME locale folders (default: all)")
    parser.add_argument("--min-paragraphs", type=int, default=100, help="leave out languages with fewer (at least 1)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        help_dir = help_folder(args.help_dir, args.cache)
    except BitextflowError as error:  # no package archive here (not Debian, or offline): one line, as every bench says
        print(f"paragraph_lid: {error}; or pass --help-dir with an unpacked usr/share/help", file=sys.stderr)
        return 2
    locales = args.languages.split(",") if args.languages else sorted(p.name for p in help_dir.iterdir() if p.name != "C")
    texts, pages = {}, {}
    for locale in locales:
        lines = list(translated(help_dir, locale))
        if lines and len(lines) >= args.min_paragraphs:
            texts[locale_language(locale)] = lines
            pages[locale_language(locale)] = list(translated_page_texts(help_dir, locale))
    if not texts:
        print(f"no language has {args.min_paragraphs} translated paragraphs in {help_dir}", file=sys.stderr)
        return 2
    print(f"{sum(map(len, texts.values()))} paragraphs in {len(texts)} languages", file=sys.stderr)
    result = {
        "paragraphs": {code: len(lines) for code, lines in texts.items()},
        "pages": {code: len(found) for code, found in pages.items()},
        "identifiers": {},
        "shipped": "shipped",
    }
    for name, first in [("shipped", language.first_opinion("heliport")), ("cld2", None)]:
        result["identifiers"][name] = figures = measured(texts, pages, first)
        for prefix, what in (("", "paragraphs"), ("page_", "pages")):
            print(f"{name}: {what}' macro accuracy {figures[prefix + 'macro_accuracy']}", file=sys.stderr)
            for code, right in sorted(figures[prefix + "per_language"].items(), key=lambda item: item[1])[:6]:
                print(f"  {code:>8} {right:.4f}  {figures[prefix + 'wrong_answers'][code]}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
