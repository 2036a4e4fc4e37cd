"""Parallel text available offline for training a bicleaner-ai model, all from Debian packages.

- Bibles (SWORD packages read with pysword): verse numbering is shared across translations, so two
  Bibles read verse by verse are a verse-aligned parallel corpus (31,000 verses for a whole Bible).
- Translated documentation, the text of the local site (the Debian reference and the installation
  guide): a translated page keeps the original's block structure, so the visible text blocks of the two
  pages pair up by position when both pages have as many blocks (pages that do not are left out and
  counted); a block pair splits into sentence pairs when both sides have as many sentences. Every
  fourth installation-guide page is held out: the model's evaluation set (tests, bench/mining.py).
- The bilingual dictionary of the sentence aligner (Apertium, :mod:`bitextflow.align.dictionary`):
  lemma pairs, the general vocabulary that neither corpus covers.
- Message catalogs (gettext ``.mo``) of common Debian programs (:data:`CATALOG_PACKAGES`): every
  translated English ``msgid`` with its ``msgstr``, short software sentences written by human
  translators (placeholders, markup and accelerator marks taken out of both sides).

Packages are fetched with ``apt-get download`` and unpacked with ``dpkg -x`` into the cache
(:func:`bitextflow.training.debian.fetch_packages`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polib

from bitextflow.classify.offline import BIBLES, DOCUMENTATION, INSTALLATION_GUIDE, default_data_dir, guide_folder
from bitextflow.errors import StageError
from bitextflow.settings import cache_dir
from bitextflow.training.debian import FetchedPackage, fetch_packages
from bitextflow.training.sword import open_bible

log = logging.getLogger(__name__)

MAX_VERSE_CHARACTERS = 2000
#: A documentation block whose sentences do not pair up is kept whole up to this length.
MAX_BLOCK_CHARACTERS = 600
HELD_OUT_EVERY = 4
_SPACE = re.compile(r"\s+")
# The WEB module drops the space after a comma where a footnote marker stood ("Christ,the").
_MISSING_SPACE = re.compile(r"([,;:])(?=[^\W\d_])")
#: Debian packages whose message catalogs give the ``en``-``<lang>`` pairs (the programs of a base system and its
#: common tools; the list fixes what a build reads, the installed system plays no part). 53 MB of .deb files (258 MB unpacked).
#: Versioned names (postgresql-15, libgnutls30) are Debian 12's: another release needs its own.
CATALOG_PACKAGES = (
    "adduser", "apt", "bash", "binutils-common", "coreutils", "diffutils", "dpkg", "findutils", "gettext", "git",
    "gnupg-l10n", "grep", "libc-l10n", "libdpkg-perl", "libglib2.0-data", "libgnutls30", "libgstreamer1.0-0",
    "libgtk2.0-common", "login", "make", "packagekit", "postgresql-15", "postgresql-client-15", "procps", "sed",
    "systemd", "tar", "wget",
)  # fmt: skip
#: gettext's locale folders where they are not the pair's code: Chinese by its region, Serbian's Latin script by its
#: modifier (there is no ``zh`` folder, so an en-zh pair had no catalog message).
GETTEXT_LOCALES = {"zh": "zh_CN", "zh_Hant": "zh_TW", "sr_Latn": "sr@latin"}
#: Messages longer than this (help screens) are used only when they split into as many lines on both sides.
MAX_MESSAGE_CHARACTERS = 300
# printf conversions (%s, %-10.3lf, %1$s), brace fields ({name}), shell-style variables, markup tags, and the
# accelerator marks of menu labels (_File, &Open): slots, not words, and not always in the same order (binutils has
# its own conversions, %B, %H: any letter counts). Quotes left empty where a slot stood go too.
_PLACEHOLDER = re.compile(r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|ll|[hlLqjzt])?[a-zA-Z%]"
                          r"|\{[^{}\s]*\}|\$\{?\w+\}?|<[^<>]+>|(?<!\w)[_&](?=\w)")  # fmt: skip
_EMPTY_QUOTES = re.compile(r"[\"'`«“‘]\s*[\"'»”’]")


def default_cache_dir() -> Path:
    """``<cache>/bible`` (:func:`bitextflow.settings.cache_dir`)."""
    return cache_dir("bible")


def bible_verse_pairs(lang_a: str, lang_b: str, cache_dir: Path | None = None) -> list[tuple[str, str]]:
    """Verse pairs of the two languages' Bibles, in canonical order, kept as ``verses-<a>-<b>.tsv`` in the cache.

    Reading the modules takes minutes of pysword decompression, hence the cached TSV.
    """
    cache_dir = cache_dir or default_cache_dir()
    cached = cache_dir / f"verses-{lang_a}-{lang_b}.tsv"
    if not cached.is_file():
        pairs = list(_read_verse_pairs(lang_a, lang_b, cache_dir))
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        partial.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
        partial.replace(cached)
    return [tuple(line.split("\t")) for line in cached.read_text(encoding="utf-8").splitlines()]  # type: ignore[misc]


def _read_verse_pairs(lang_a: str, lang_b: str, cache_dir: Path) -> Iterator[tuple[str, str]]:
    """Verses empty on either side are skipped, and so are the few that pysword returns run together with
    the rest of the book (longer than any verse)."""
    missing = [lang for lang in (lang_a, lang_b) if lang not in BIBLES]
    if missing:
        raise StageError(f"no Bible package known for {', '.join(missing)}; known: {', '.join(sorted(BIBLES))}")
    fetched = fetch_packages([BIBLES[lang_a][0], BIBLES[lang_b][0]], cache_dir)
    bible_a = open_bible(fetched[BIBLES[lang_a][0]].root, BIBLES[lang_a][1])
    bible_b = open_bible(fetched[BIBLES[lang_b][0]].root, BIBLES[lang_b][1])
    books_b = {book.name: book for testament in bible_b.get_structure().get_books().values() for book in testament}
    for testament in ("ot", "nt"):
        # The English WEB has the deuterocanonical books, the Reina-Valera does not: only shared books pair up.
        for book_a in (book for book in bible_a.get_structure().get_books()[testament] if book.name in books_b):
            book_b = books_b[book_a.name]
            # One read per book (pysword decompresses a whole block per call); split into chapters by each
            # module's own versification, where a chapter's extra verses at the end have no partner.
            chapters_a = _chapters(list(bible_a.get_iter(books=[book_a.name])), book_a.chapter_lengths)
            chapters_b = _chapters(list(bible_b.get_iter(books=[book_b.name])), book_b.chapter_lengths)
            for verses_a, verses_b in zip(chapters_a, chapters_b, strict=False):
                for text_a, text_b in zip(verses_a, verses_b, strict=False):
                    a, b = _clean(text_a), _clean(text_b)
                    if a and b and max(len(a), len(b)) <= MAX_VERSE_CHARACTERS:
                        yield a, b


@dataclass(frozen=True)
class DocumentationPairs:
    train: list[tuple[str, str]]
    held_out: list[tuple[str, str]]  # pairs of the held-out pages, never trained on
    pages: int  # page pairs read
    pages_left_out: int  # page pairs whose block counts differ


def documentation_pairs(lang_a: str, lang_b: str) -> DocumentationPairs:
    """Block (or sentence) pairs of the Debian reference and installation guide pages of both languages.

    The packages are the offline domain set's (:data:`bitextflow.classify.offline.DOCUMENTATION`), in its cache.
    """
    reference_a, reference_b, guide = _documentation_roots(lang_a, lang_b)
    reference = [
        (path, reference_b / "usr/share/debian-reference" / path.name.replace(f".{lang_a}.", f".{lang_b}."), False)
        for path in sorted((reference_a / "usr/share/debian-reference").glob(f"*.{lang_a}.html"))
    ]
    guide_pages = _guide_pages(guide, lang_a, lang_b)
    pages = reference + [(a, b, index % HELD_OUT_EVERY == 0) for index, (a, b) in enumerate(guide_pages)]
    train: list[tuple[str, str]] = []
    held_out: list[tuple[str, str]] = []
    read = left_out = 0
    for path_a, path_b, is_held_out in pages:
        if not path_b.is_file():
            continue
        read += 1
        pairs = _page_pairs(path_a, path_b, lang_a, lang_b)
        if pairs is None:
            left_out += 1
            continue
        (held_out if is_held_out else train).extend(pairs)
    return DocumentationPairs(train, held_out, read, left_out)


def installation_guide_pages(lang_a: str, lang_b: str) -> list[list[tuple[str, str]]]:
    """The block (or sentence) pairs of each installation-guide page of both languages, page by page in page order
    (pages whose block counts differ left out; none where the guide lacks a language): documents of the local site's
    kind that the Debian Reference, on which bench/release_precision.py measures, is not part of."""
    guide = fetch_packages([INSTALLATION_GUIDE], default_data_dir())[INSTALLATION_GUIDE].root
    pages = []
    for path_a, path_b in _guide_pages(guide, lang_a, lang_b):
        pairs = _page_pairs(path_a, path_b, lang_a, lang_b) if path_b.is_file() else None
        if pairs:
            pages.append(pairs)
    return pages


def _documentation_roots(lang_a: str, lang_b: str) -> tuple[Path, Path, Path]:
    """Where the Debian reference of each language and the installation guide (every language) are unpacked: the offline
    domain set's packages (:data:`bitextflow.classify.offline.DOCUMENTATION`), fetched into its cache."""
    missing = [lang for lang in (lang_a, lang_b) if lang not in DOCUMENTATION]
    if missing:
        raise StageError(f"no translated documentation known for {', '.join(missing)}; known: {', '.join(sorted(DOCUMENTATION))}")
    packages = fetch_packages(sorted({*DOCUMENTATION[lang_a], *DOCUMENTATION[lang_b]}), default_data_dir())
    reference_a, guide = DOCUMENTATION[lang_a][:2]
    return packages[reference_a].root, packages[DOCUMENTATION[lang_b][0]].root, packages[guide].root


def _guide_pages(guide: Path, lang_a: str, lang_b: str) -> list[tuple[Path, Path]]:
    """(page in lang_a, the same page in lang_b, which may not exist) of the installation guide package at ``guide``."""
    folder_b = guide_folder(guide, lang_b)
    return [(path, folder_b / path.name) for path in sorted(guide_folder(guide, lang_a).glob("*.html"))]


def _page_pairs(path_a: Path, path_b: Path, lang_a: str, lang_b: str) -> list[tuple[str, str]] | None:
    """The block (or sentence) pairs of two translated pages, or None when their block counts differ."""
    blocks_a, blocks_b = _page_texts(path_a), _page_texts(path_b)
    if len(blocks_a) != len(blocks_b):
        return None
    return list(_sentence_pairs(blocks_a, blocks_b, lang_a, lang_b))


@dataclass(frozen=True)
class HeldOutSample:
    """The model's evaluation set: held-out translations and two kinds of non-translation of the same English sides."""

    translations: list[tuple[str, str]]
    shuffled: list[tuple[str, str]]  # each with the next sampled pair's translation: another page, another topic
    neighbours: list[tuple[str, str]]  # each with the translation of the sentence next to it: same page, same topic


def held_out_sample(lang_a: str, lang_b: str, size: int, seed: int = 0) -> HeldOutSample:
    """``size`` held-out documentation pairs of four words or more, each English side also paired with another sampled
    pair's ``lang_b`` side (a derangement: no pair keeps its own translation) and with its page neighbour's (the
    previous or next block or sentence: the hard negatives bicleaner-ai's neighbour noise trains on)."""
    import random

    held_out = documentation_pairs(lang_a, lang_b).held_out
    candidates = sorted({pair for pair in held_out if len(pair[0].split()) >= 4})
    if len(candidates) < size:
        raise StageError(f"only {len(candidates)} held-out documentation pairs of {lang_a}-{lang_b}, {size} asked for")
    translations = random.Random(seed).sample(candidates, size)
    shuffled = [(a, translations[(i + 1) % size][1]) for i, (a, _) in enumerate(translations)]
    position = {pair: index for index, pair in reversed(list(enumerate(held_out)))}  # first occurrence
    neighbours = []
    for a, b in translations:
        index = position[(a, b)]
        after = held_out[index + 1][1] if index + 1 < len(held_out) else b
        neighbours.append((a, after if after != b else held_out[index - 1][1]))
    return HeldOutSample(translations, shuffled, neighbours)


def _page_texts(path: Path) -> list[str]:
    """The page's visible text blocks in order, code left out (not translated, and often reflowed)."""
    from bitextflow.extract.structure import page_blocks, parse

    tree = parse(path.read_text(encoding="utf-8", errors="replace"))
    return [text for kind, text in (page_blocks(tree) if tree is not None else []) if kind != "code"]


def _sentence_pairs(blocks_a: list[str], blocks_b: list[str], lang_a: str, lang_b: str) -> Iterator[tuple[str, str]]:
    """Untranslated blocks (the same text on both sides) are skipped; long blocks whose sentences do not pair up too."""
    from bitextflow.text.sentences import split_sentences

    for block_a, block_b in zip(blocks_a, blocks_b, strict=True):
        a, b = _clean(block_a), _clean(block_b)
        if not a or not b or a == b:
            continue
        sentences_a = [s for s in map(_clean, split_sentences(lang_a, a)) if s]
        sentences_b = [s for s in map(_clean, split_sentences(lang_b, b)) if s]
        if len(sentences_a) == len(sentences_b) > 1:
            yield from zip(sentences_a, sentences_b, strict=True)
        elif max(len(a), len(b)) <= MAX_BLOCK_CHARACTERS:
            yield a, b


def dictionary_pairs(lang_a: str, lang_b: str) -> list[tuple[str, str]]:
    """The lemma pairs of the sentence aligner's dictionary (built on first use); empty when the pair has none."""
    from bitextflow.align.dictionary import load_dictionary

    dictionary = load_dictionary(lang_a, lang_b)
    return list(dictionary.pairs) if dictionary is not None else []


@dataclass(frozen=True)
class CatalogPairs:
    """Message pairs of the catalogs, and the :data:`CATALOG_PACKAGES` the package archive could not give."""

    pairs: list[tuple[str, str]]
    packages_missing: list[str]


def catalog_pairs(lang_a: str, lang_b: str, cache_dir: Path | None = None) -> CatalogPairs:
    """``(English message, translation)`` pairs of the :data:`CATALOG_PACKAGES` catalogs of ``lang_b``, deduplicated,
    in package and catalog order; ``lang_a`` must be ``en`` (gettext's msgids are English).

    The list names Debian 12 packages; where the archive lacks some (another release renames
    ``postgresql-15`` or ``libgnutls30``), they are left out and named in ``packages_missing`` rather than
    stopping the build; none at all is an error.
    """
    if lang_a != "en":
        raise StageError(f"message catalogs pair English with another language, not {lang_a}-{lang_b}; use en-{lang_b}")
    cache_dir = cache_dir or default_cache_dir().with_name("catalogs")
    fetched: dict[str, FetchedPackage] = {}
    missing: list[str] = []
    for name in CATALOG_PACKAGES:  # one by one: a single unknown name fails a whole `apt-get download`
        try:
            fetched.update(fetch_packages([name], cache_dir))
        except StageError as exc:
            log.warning("message catalogs: package %s left out (%s)", name, exc)
            missing.append(name)
    if not fetched:
        raise StageError(f"none of the message-catalog packages could be fetched into {cache_dir}: {', '.join(missing)}")
    pairs: dict[tuple[str, str], None] = {}
    for name in fetched:
        for catalog in sorted(
            fetched[name].root.glob(f"usr/share/locale/{GETTEXT_LOCALES.get(lang_b, lang_b)}/LC_MESSAGES/*.mo")
        ):
            for entry in polib.mofile(str(catalog)):  # plural forms are left out: their msgstr is per number
                if entry.msgid and entry.msgstr and not entry.msgid_plural:
                    pairs.update(dict.fromkeys(message_pairs(entry.msgid, entry.msgstr)))
    return CatalogPairs(list(pairs), missing)


def message_pairs(msgid: str, msgstr: str) -> Iterator[tuple[str, str]]:
    """The sentence pairs of one catalog entry: the whole message, or line by line where a long one has as many lines
    in both languages; placeholders removed; untranslated and letterless messages skipped."""
    if len(msgid) > MAX_MESSAGE_CHARACTERS or len(msgstr) > MAX_MESSAGE_CHARACTERS:
        lines_a, lines_b = msgid.splitlines(), msgstr.splitlines()
        if len(lines_a) != len(lines_b) or len(lines_a) == 1:
            return
        candidates = zip(lines_a, lines_b, strict=True)
    else:
        candidates = iter([(msgid, msgstr)])
    for raw_a, raw_b in candidates:
        a, b = (_clean(_EMPTY_QUOTES.sub(" ", _PLACEHOLDER.sub(" ", raw))) for raw in (raw_a, raw_b))
        if a != b and len(a.split()) >= 2 and any(ch.isalpha() for ch in b) and max(len(a), len(b)) <= MAX_MESSAGE_CHARACTERS:
            yield a, b


def _chapters(verses: list[str], lengths: list[int]) -> list[list[str]]:
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    return [verses[start : start + length] for start, length in zip(starts, lengths, strict=True)]


def _clean(verse: str) -> str:
    """One line, single spaces, no tab (the cache and the trainer read TSV)."""
    return _MISSING_SPACE.sub(r"\1 ", _SPACE.sub(" ", verse).strip())
