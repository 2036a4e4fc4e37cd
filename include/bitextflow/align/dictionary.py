"""Bilingual lemma dictionaries built from Debian packages, for dictionary-based sentence alignment.

Hunalign-style alignment (:mod:`.lexical`) needs word translations, and nothing can be downloaded
from a model hub here, but Debian ships two kinds of free bilingual data that ``apt-get download``
fetches without root:

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

Apertium data is preferred where it exists (hand-checked, 32k en-es pairs); otherwise every
FreeDict package of the pair in either direction is merged. A pair with no package gets ``None``
and a logged reason: the length-based aligners still work for it.

The result is plain TSV (``lemma_a<TAB>lemma_b``, lower-cased, stripped, sorted, unique) under
``$BITEXTFLOW_CACHE/dictionaries/<a>-<b>/`` (default ``~/.cache/bitextflow``), with a
``manifest.json`` naming every package, its Debian version and the sha256 of the ``.deb`` and of the
TSV, so an alignment can say exactly which dictionary it used and a changed file is rebuilt rather
than trusted. Build ahead of time (``make setup`` does) with::

    python -m bitextflow.align.dictionary en-es de-fr en-hu
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from bitextflow.align.documents import normalise_language, three_letter_code
from bitextflow.hashing import file_sha256

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
TSV_NAME = "lemmas.tsv"
MANIFEST_NAME = "manifest.json"
#: ``apt-get`` line that provides ``lt-print``, shown when it is missing.
LT_PRINT_INSTALL = "apt-get install -y --no-install-recommends lttoolbox-dev"
#: Transducer states expanded per section before the section is taken for a pattern and skipped:
#: the lemma section of apertium-eng-spa needs under 300,000; its "any word" pattern never ends.
MAX_SECTION_STEPS = 1_000_000
#: Longest lemma kept, in characters: longer "entries" are phrases or glosses.
MAX_LEMMA_CHARS = 60
#: Most words in a kept lemma (FreeDict entries can be whole explanations).
MAX_LEMMA_WORDS = 4

Kind = Literal["apertium", "freedict"]


class DictionaryUnavailable(Exception):
    """No dictionary can be built for a pair; the message says why."""


@dataclass(frozen=True)
class Source:
    """One Debian package and the direction of its entries (ISO 639-3 codes)."""

    package: str
    kind: Kind
    left: str
    right: str


@dataclass(frozen=True, eq=False)
class BilingualDictionary:
    """Lemma pairs ``(lemma in lang_a, lemma in lang_b)`` and the manifest of where they came from.

    Compared and hashed by identity (``eq=False``): hashing 100,000 pairs per lookup would cost more
    than the alignment it serves, and caches keyed on a dictionary only need the same object.
    """

    lang_a: str
    lang_b: str
    pairs: tuple[tuple[str, str], ...]
    manifest: dict[str, Any]

    def __len__(self) -> int:
        return len(self.pairs)

    def reversed(self) -> BilingualDictionary:
        """The same dictionary seen from ``lang_b`` to ``lang_a``."""
        return BilingualDictionary(self.lang_b, self.lang_a, tuple((b, a) for a, b in self.pairs), self.manifest)


def default_cache_dir() -> Path:
    """``$BITEXTFLOW_CACHE/dictionaries``, else ``~/.cache/bitextflow/dictionaries``."""
    root = os.environ.get("BITEXTFLOW_CACHE") or Path.home() / ".cache" / "bitextflow"
    return Path(root) / "dictionaries"


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


def _package_exists(package: str) -> bool:
    result = subprocess.run(["apt-cache", "show", "--no-all-versions", package], capture_output=True, text=True)
    return result.returncode == 0 and "Package:" in result.stdout


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


def _entry_directory(lang_a: str, lang_b: str, cache_dir: Path) -> Path:
    return cache_dir / "-".join(sorted((lang_a, lang_b)))


def build_dictionary(lang_a: str, lang_b: str, cache_dir: Path | None = None) -> BilingualDictionary:
    """Download, unpack and convert the pair's Debian packages; write TSV and manifest.

    Files are written under a temporary name and renamed, manifest last, so a concurrent or
    interrupted build never leaves a manifest that describes a partial TSV.
    """
    a, b = normalise_language(lang_a), normalise_language(lang_b)
    cache_dir = cache_dir or default_cache_dir()
    if shutil.which("apt-cache") is None or shutil.which("dpkg-deb") is None:
        raise DictionaryUnavailable("apt-cache/dpkg-deb not found: dictionaries are built from Debian packages")
    available = [source for source in candidate_sources(a, b) if _package_exists(source.package)]
    apertium = [source for source in available if source.kind == "apertium"]
    chosen = apertium[:1] or available
    if not chosen:
        names = ", ".join(s.package for s in candidate_sources(a, b)) or "none (unknown language code)"
        raise DictionaryUnavailable(f"no Debian dictionary package for {a}-{b} (looked for: {names})")
    first, second = sorted((a, b))
    first3 = three_letter_code(first)
    pairs: set[tuple[str, str]] = set()
    packages = []
    for source in chosen:
        try:
            deb = _download(source.package, cache_dir / "debs")
            found = _pairs_of(source, deb)
        except DictionaryUnavailable as error:
            log.warning("dictionary %s-%s: %s skipped: %s", a, b, source.package, error)
            continue
        pairs |= found if source.left == first3 else {(y, x) for x, y in found}
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
        raise DictionaryUnavailable(f"no lemma pairs from {', '.join(s.package for s in chosen)} for {a}-{b}")
    directory = _entry_directory(a, b, cache_dir)
    directory.mkdir(parents=True, exist_ok=True)
    tsv = directory / TSV_NAME
    rows = sorted(pairs)
    _atomic_write(tsv, "".join(f"{x}\t{y}\n" for x, y in rows))
    manifest = {
        "format": FORMAT_VERSION,
        "languages": [first, second],
        "pairs": len(rows),
        "tsv": TSV_NAME,
        "tsv_sha256": file_sha256(tsv),
        "packages": packages,
        "built": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _atomic_write(directory / MANIFEST_NAME, json.dumps(manifest, indent=2) + "\n")
    log.info("dictionary %s-%s: %d lemma pairs from %s", first, second, len(rows), ", ".join(p["name"] for p in packages))
    dictionary = BilingualDictionary(first, second, tuple(rows), manifest)
    return dictionary if first == a else dictionary.reversed()


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def _read_cached(a: str, b: str, cache_dir: Path) -> BilingualDictionary | None:
    """The cached dictionary if its manifest is current and the TSV matches its checksum."""
    directory = _entry_directory(a, b, cache_dir)
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tsv = directory / TSV_NAME
    if manifest.get("format") != FORMAT_VERSION or not tsv.is_file() or file_sha256(tsv) != manifest.get("tsv_sha256"):
        log.info("dictionary %s-%s: cache at %s is stale or damaged; rebuilding", a, b, directory)
        return None
    lines = tsv.read_text(encoding="utf-8").splitlines()
    rows = tuple((left, right) for left, _, right in (line.partition("\t") for line in lines) if right)
    first, second = manifest["languages"]
    dictionary = BilingualDictionary(first, second, rows, manifest)
    return dictionary if first == a else dictionary.reversed()


def load_dictionary(lang_a: str, lang_b: str, cache_dir: Path | None = None, build: bool = True) -> BilingualDictionary | None:
    """The ``lang_a``-``lang_b`` dictionary from the cache, built first if missing and ``build``.

    Returns None, with the reason logged, when the pair has no Debian package or the build cannot
    run (no apt, no ``lt-print``, no registry): a pair without a dictionary still aligns by length.
    """
    a, b = normalise_language(lang_a), normalise_language(lang_b)
    cache_dir = cache_dir or default_cache_dir()
    cached = _read_cached(a, b, cache_dir)
    if cached is not None or not build:
        if cached is None:
            log.warning("dictionary %s-%s: not in %s and building is off", a, b, cache_dir)
        return cached
    try:
        return build_dictionary(a, b, cache_dir)
    except (DictionaryUnavailable, OSError, subprocess.CalledProcessError) as error:
        log.warning("dictionary %s-%s unavailable, aligning without it: %s", a, b, error)
        return None


def main(argv: Iterable[str] | None = None) -> int:
    """Build (or check) the dictionaries of the given pairs; exit 1 if any could not be built."""
    parser = argparse.ArgumentParser(description="Build bilingual lemma dictionaries from Debian packages.")
    parser.add_argument("pairs", nargs="+", help="language pairs such as en-es de-fr")
    parser.add_argument("--cache-dir", type=Path, default=None, help=f"default {default_cache_dir()}")
    args = parser.parse_args(None if argv is None else list(argv))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    failed = 0
    for pair in args.pairs:
        lang_a, _, lang_b = pair.partition("-")
        dictionary = load_dictionary(lang_a, lang_b, args.cache_dir)
        if dictionary is None:
            failed += 1
            print(f"{pair}: no dictionary")
            continue
        packages = ", ".join(f"{p['name']} {p['version']}" for p in dictionary.manifest["packages"])
        print(f"{pair}: {len(dictionary)} lemma pairs ({packages})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
