"""Lemma pairs out of the Debian packages that :mod:`.dictionary` builds dictionaries from.

:func:`direct_pairs` finds a pair's packages (:func:`candidate_sources`), fetches them with ``apt-get download`` and
reads them, in one of two kinds:

- Apertium language pairs (``apertium-eng-spa``) hold a compiled bilingual transducer
  ``X-Y.autobil.bin``. ``lt-print`` (Debian ``lttoolbox-dev``) dumps it in AT&T text form; each path
  from the start state reads a source lemma and writes a target lemma, each followed by tags
  (``<n><sg>``). We walk the paths until both sides have reached their first tag: the letters read
  so far are the lemma pair. Only the first section of the transducer holds lemma pairs; the
  others are patterns (numbers, any capitalised word) whose expansion is unbounded, so a section
  that exceeds a work budget is skipped, and entries with digits are left out.
- FreeDict dictionaries (``dict-freedict-deu-fra``) in dictd format: an ``.index`` of headwords with
  base64 offsets into a gzip-compatible ``.dict.dz``. The first line of an entry is the headword
  (with pronunciation and part of speech), the next ones translations; in the WikDict-generated
  dictionaries only the line right after the headword holds translations and the rest are glosses
  in the source language, which would be noise here.

Every lemma is cleaned by :func:`clean_lemma`. What cannot be read (no ``lt-print``, no transducer or
index in the package) raises :class:`DictionaryUnavailable`.
"""

from __future__ import annotations

import functools
import gzip
import logging
import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bitextflow.hashing import file_sha256
from bitextflow.text.languages import normalise_language, three_letter_code

log = logging.getLogger(__name__)

#: ``apt-get`` line that provides ``lt-print``, shown when it is missing.
LT_PRINT_INSTALL = "apt-get install -y --no-install-recommends lttoolbox-dev"
#: Transducer states expanded per section before the section is taken for a pattern and skipped:
#: the lemma section of apertium-eng-spa needs under 300,000; its "any word" pattern never ends.
MAX_SECTION_STEPS = 1_000_000
#: Longest lemma kept, in characters: longer "entries" are phrases or glosses.
MAX_LEMMA_CHARS = 60
#: Most words in a kept lemma (FreeDict entries can be whole explanations).
MAX_LEMMA_WORDS = 4


class DictionaryUnavailable(Exception):
    """No dictionary can be built for a pair; the message says why."""


Kind = Literal["apertium", "freedict"]


@dataclass(frozen=True)
class Source:
    """One Debian package and the direction of its entries (ISO 639-3 codes)."""

    package: str
    kind: Kind
    left: str
    right: str


def clean_lemma(text: str) -> str | None:
    """Lower-cased, whitespace-collapsed lemma, or None if it is no usable word.

    Apertium marks the invariable part of a multiword with ``#`` (``take# out``); it is dropped.
    Entries with digits (number patterns) or with no letter, and over-long phrases, are left out.
    """
    lemma = " ".join(text.replace("#", " ").split()).lower()
    if not lemma or len(lemma) > MAX_LEMMA_CHARS or len(lemma.split()) > MAX_LEMMA_WORDS:
        return None
    if any(c.isdigit() for c in lemma) or not any(c.isalpha() for c in lemma):
        return None
    return lemma


# -- Apertium ----------------------------------------------------------------------------------------
def _att_sections(text: str) -> Iterator[list[tuple[int, int, str, str]]]:
    """Arcs ``(from, to, input, output)`` of each section of an ``lt-print`` dump (``--`` separates)."""
    arcs: list[tuple[int, int, str, str]] = []
    for line in text.split("\n"):
        if line.strip() == "--":
            yield arcs
            arcs = []
            continue
        fields = line.split("\t")
        if len(fields) >= 4:
            arcs.append((int(fields[0]), int(fields[1]), fields[2], fields[3]))
    yield arcs


def _is_tag(symbol: str) -> bool:
    return len(symbol) > 2 and symbol.startswith("<") and symbol.endswith(">")


def att_lemma_pairs(arcs: Sequence[tuple[int, int, str, str]], max_steps: int = MAX_SECTION_STEPS) -> set[tuple[str, str]]:
    """Lemma pairs of one transducer section: the symbols each side reads before its first tag.

    A depth-first walk from state 0; input and output advance independently (lttoolbox pads the
    shorter side with epsilons anywhere), so a path stops only when both have reached a tag. Each
    (state, input so far, output so far) is expanded once, and a state already on the current path
    is not entered again, which bounds the walk on the pattern loops. Raises
    :class:`DictionaryUnavailable` past ``max_steps`` so the caller can skip a pattern section.
    """
    outgoing: defaultdict[int, list[tuple[int, str, str]]] = defaultdict(list)
    for src, dst, sym_in, sym_out in arcs:
        outgoing[src].append((dst, sym_in, sym_out))
    pairs: set[tuple[str, str]] = set()
    seen: set[tuple[int, str, str]] = set()
    # (state, input, output, input done, output done, states on the path)
    stack: list[tuple[int, str, str, bool, bool, frozenset[int]]] = [(0, "", "", False, False, frozenset())]
    steps = 0
    while stack:
        state, left, right, left_done, right_done, path = stack.pop()
        if left_done and right_done:
            pairs.add((left, right))
            continue
        key = (state, left + "\x00" * left_done, right + "\x00" * right_done)
        if key in seen or state in path:
            continue
        seen.add(key)
        steps += 1
        if steps > max_steps:
            raise DictionaryUnavailable(f"section exceeds {max_steps} steps (a pattern, not a word list)")
        path = path | {state}
        for dst, sym_in, sym_out in outgoing.get(state, ()):
            new_left, new_left_done = left, left_done
            if not left_done and sym_in != "ε":
                new_left_done = _is_tag(sym_in)
                new_left = left if new_left_done else left + sym_in
            new_right, new_right_done = right, right_done
            if not right_done and sym_out != "ε":
                new_right_done = _is_tag(sym_out)
                new_right = right if new_right_done else right + sym_out
            stack.append((dst, new_left, new_right, new_left_done, new_right_done, path))
    return pairs


def apertium_pairs(root: Path, left: str, right: str) -> set[tuple[str, str]]:
    """Lemma pairs of the ``left-right`` bilingual transducer in an unpacked Apertium package.

    The file is ``<left>-<right>.autobil.bin`` with 3- or 2-letter codes; if only the reverse
    direction exists it is read and its pairs swapped.
    """
    lt_print = shutil.which("lt-print")
    if lt_print is None:
        raise DictionaryUnavailable(f"lt-print not found; install it with: {LT_PRINT_INSTALL}")
    codes_left = {left, normalise_language(left)}
    codes_right = {right, normalise_language(right)}
    forward = {(x, y) for x in codes_left for y in codes_right}
    for swap in (False, True):
        for path in sorted(root.rglob("*.autobil.bin")):
            first, _, second = path.name.removesuffix(".autobil.bin").partition("-")
            direction = (second.split("_")[0], first) if swap else (first, second.split("_")[0])
            if direction not in forward:
                continue
            dump = subprocess.run([lt_print, str(path)], check=True, capture_output=True, text=True).stdout
            pairs: set[tuple[str, str]] = set()
            for number, arcs in enumerate(_att_sections(dump)):
                try:
                    pairs |= att_lemma_pairs(arcs)
                except DictionaryUnavailable as skipped:
                    log.info("%s section %d skipped: %s", path.name, number, skipped)
            cleaned = {(x, y) for x, y in ((clean_lemma(a), clean_lemma(b)) for a, b in pairs) if x and y}
            return {(y, x) for x, y in cleaned} if swap else cleaned
    raise DictionaryUnavailable(f"no {left}-{right} .autobil.bin in {root}")


# -- FreeDict (dictd) ------------------------------------------------------------------------------------
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PRONUNCIATION = re.compile(r"/[^/]*/")
_PART_OF_SPEECH = re.compile(r"<[^>]*>")
_BRACKETS = re.compile(r"\([^)]*\)|\[[^]]*\]|\{[^}]*\}")
_SENSE_NUMBER = re.compile(r"^\s*\d+\.\s*|\s+\d+\.\s*$")


def _dictd_number(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _BASE64.index(char)
    return value


def _terms(line: str, language: str) -> list[str]:
    """Comma/semicolon-separated terms of one dictd line, without numbering, brackets, IPA, tags."""
    line = _BRACKETS.sub(" ", _PART_OF_SPEECH.sub(" ", _PRONUNCIATION.sub(" ", line)))
    terms = []
    for part in re.split(r"[,;]", _SENSE_NUMBER.sub("", line)):
        term = _SENSE_NUMBER.sub("", part).strip()
        if language == "eng" and term.lower().startswith("to "):
            term = term[3:]  # English verbs are given as infinitives ("to donate")
        cleaned = clean_lemma(term)
        if cleaned:
            terms.append(cleaned)
    return terms


def freedict_pairs(root: Path, left: str, right: str) -> set[tuple[str, str]]:
    """Headword/translation pairs of the dictd database in an unpacked FreeDict package."""
    index = next(root.rglob("*.index"), None)
    if index is None:
        raise DictionaryUnavailable(f"no dictd .index in {root}")
    with gzip.open(index.with_suffix(".dict.dz")) as stream:
        data = stream.read()
    entries = []
    wikdict = False
    for line in index.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        start, length = _dictd_number(fields[1]), _dictd_number(fields[2])
        body = data[start : start + length].decode("utf-8", errors="replace")
        if fields[0].startswith("00-database") or fields[0].startswith("00database"):
            wikdict = wikdict or "wikdict" in body.lower()
            continue
        entries.append(body)
    pairs: set[tuple[str, str]] = set()
    for body in entries:
        lines = [line for line in body.split("\n") if line.strip()]
        if len(lines) < 2:
            continue
        translations = lines[1:2] if wikdict else lines[1:]
        heads = _terms(lines[0], left)
        for line in translations:
            pairs.update((head, term) for head in heads for term in _terms(line, right))
    return pairs


# -- Debian packages -----------------------------------------------------------------------------------
def candidate_sources(lang_a: str, lang_b: str) -> list[Source]:
    """Debian packages that could hold an ``lang_a``-``lang_b`` dictionary, best first."""
    a3, b3 = three_letter_code(lang_a), three_letter_code(lang_b)
    if a3 is None or b3 is None:
        return []
    a2, b2 = normalise_language(lang_a), normalise_language(lang_b)
    sources = [
        Source(f"apertium-{x}-{y}", "apertium", x3, y3)
        for x, y, x3, y3 in ((a3, b3, a3, b3), (b3, a3, b3, a3), (a2, b2, a3, b3), (b2, a2, b3, a3))
    ]
    sources += [Source(f"dict-freedict-{x}-{y}", "freedict", x, y) for x, y in ((a3, b3), (b3, a3))]
    return sources


@functools.cache
def _package_exists(package: str) -> bool:
    result = subprocess.run(["apt-cache", "show", "--no-all-versions", package], capture_output=True, text=True)
    return result.returncode == 0 and "Package:" in result.stdout


def has_packages(lang_a: str, lang_b: str) -> bool:
    """Whether Debian has a package of the pair's dictionary (:func:`candidate_sources`), without downloading it."""
    return any(_package_exists(source.package) for source in candidate_sources(lang_a, lang_b))


def _download(package: str, debs: Path) -> Path:
    """The package's ``.deb`` in ``debs``, fetched with ``apt-get download`` unless already there."""
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        result = subprocess.run(["apt-get", "download", package], cwd=debs, capture_output=True, text=True)
        found = sorted(debs.glob(f"{package}_*.deb"))
        if result.returncode != 0 or not found:
            raise DictionaryUnavailable(f"apt-get download {package} failed: {result.stderr.strip()[-300:]}")
    return found[-1]


def _pairs_of(source: Source, deb: Path) -> set[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix="bitextflow-dict-") as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True, capture_output=True)
        reader = apertium_pairs if source.kind == "apertium" else freedict_pairs
        return reader(Path(tmp), source.left, source.right)


def direct_pairs(lang_a: str, lang_b: str, cache_dir: Path) -> tuple[set[tuple[str, str]], list[dict[str, Any]]]:
    """The ``(lang_a, lang_b)`` lemma pairs of the pair's own Debian packages (Apertium's where it has one, else every
    FreeDict package of the pair in either direction) and a manifest entry per package read."""
    available = [source for source in candidate_sources(lang_a, lang_b) if _package_exists(source.package)]
    chosen = [source for source in available if source.kind == "apertium"][:1] or available
    if not chosen:
        unnamed = " and ".join(lang for lang in (lang_a, lang_b) if three_letter_code(lang) is None)
        names = ", ".join(s.package for s in candidate_sources(lang_a, lang_b)) or (
            f"none: Debian names these packages by ISO 639-2 codes, and the project knows none for {unnamed}"
        )
        raise DictionaryUnavailable(f"no Debian dictionary package for {lang_a}-{lang_b} (looked for: {names})")
    a3 = three_letter_code(lang_a)
    pairs: set[tuple[str, str]] = set()
    packages = []
    for source in chosen:
        try:
            deb = _download(source.package, cache_dir / "debs")
            found = _pairs_of(source, deb)
        except DictionaryUnavailable as error:
            log.warning("dictionary %s-%s: %s skipped: %s", lang_a, lang_b, source.package, error)
            continue
        pairs |= found if source.left == a3 else {(y, x) for x, y in found}
        version = subprocess.run(
            ["dpkg-deb", "-f", str(deb), "Version"], check=True, capture_output=True, text=True
        ).stdout.strip()
        packages.append(
            {
                "name": source.package,
                "kind": source.kind,
                "version": version,
                "deb": deb.name,
                "sha256": file_sha256(deb),
                "pairs": len(found),
            }
        )
    if not pairs:
        raise DictionaryUnavailable(f"no lemma pairs from {', '.join(s.package for s in chosen)} for {lang_a}-{lang_b}")
    return pairs, packages
