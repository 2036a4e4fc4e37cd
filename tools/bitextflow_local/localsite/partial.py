"""Partly translated pages: a translation with some of its sections translated, the rest of its body left in the original.

Real sites publish such pages when a translation is unfinished: the page's navigation, title, table of contents and
some sections are translated, and the rest of the body is the original's text. A language identifier then calls the
page the original's language when most of its text is untranslated, which is how document alignment used to lose it.

The local site makes them from a manual page and its translation. Debian builds both from one DocBook source (po4a),
so they have the same top-level sections in the same order, and a section of the original can stand in for the same
section of the translation.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from bitextflow.errors import StageError

# A top-level section of a DocBook chapter page (its title is an <h2>; nested sections have <h3> and deeper) and the
# navigation footer that follows the last one.
_SECTION = re.compile(r'<div class="section">\s*<div class="titlepage">\s*<div>\s*<div>\s*<h2\b')
_FOOTER = '<div class="navfooter">'


def partly_translated(translation: str, original: str, translated_sections: Collection[int], source: Path) -> str:
    """``translation`` (the page's HTML) with its top-level sections replaced by the ``original``'s, except those
    numbered in ``translated_sections`` (from 1, as the chapter numbers them); ``source`` names the translation's
    file in errors."""
    head, sections, tail = _split(translation, source)
    _, original_sections, _ = _split(original, source)
    if len(sections) != len(original_sections) or not set(translated_sections) < set(range(1, len(sections) + 1)):
        raise StageError(
            f"{source} has {len(sections)} sections and its original {len(original_sections)}: a partly translated page "
            f"needs the same sections in both, and sections {sorted(translated_sections)} translated of them but not all"
        )
    kept = [
        translated if number in translated_sections else untranslated
        for number, (translated, untranslated) in enumerate(zip(sections, original_sections, strict=True), start=1)
    ]
    return head + "".join(kept) + tail


def _split(page: str, source: Path) -> tuple[str, list[str], str]:
    """The page before its first top-level section, its top-level sections, and the page from its footer on."""
    starts = [match.start() for match in _SECTION.finditer(page)]
    footer = page.find(_FOOTER)
    if not starts or footer < starts[-1]:
        raise StageError(
            f"{source} or its original has no top-level DocBook sections before a navigation footer; "
            "it cannot be partly translated"
        )
    bounds = [*starts, footer]
    return page[: starts[0]], [page[start:end] for start, end in zip(bounds, bounds[1:], strict=False)], page[footer:]
