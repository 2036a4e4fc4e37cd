"""An honest multi-class labelled set built offline from Debian packages, for when no labelled crawl exists.

The DSI method labels sentences by the site they came from; here each "site" is one document of a
package whose domain is not in doubt (labels and why, docs/classify.md):

============  =====================================================================  ==================
label         English (training, dev, test)                                          Spanish (zero-shot)
============  =====================================================================  ==================
computing     Debian reference chapters, installation guide pages (HTML)             the same, Spanish
religion      World English Bible, one book per site (``sword-text-web``, pysword)   Reina-Valera 1909
legal         free-software licences (``/usr/share/common-licenses``), the Debian     (none)
              constitution and social contract (``doc-debian``)
Other         fortune-cookie files on general topics (``fortunes``): wisdom, love,   ``fortunes-es``
              food, work, people, sports ... (the computing, law and Debian files
              are left out: they belong to other labels)
============  =====================================================================  ==================

Sentences are split with sentencex, whitespace-normalised, kept at 6-50 tokens (the DSI window) and
de-duplicated across the whole set (licences repeat each other). Packages are fetched with ``apt-get
download`` into ``$BITEXTFLOW_CACHE/domain-data`` once (:mod:`bitextflow.training.debian`).
"""

from __future__ import annotations

import gzip
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

from bitextflow.classify.data import OTHER, LabelledSentence, write_labelled
from bitextflow.errors import StageError
from bitextflow.settings import cache_dir
from bitextflow.text.sentences import split_sentences
from bitextflow.training.debian import fetch_packages
from bitextflow.training.sword import open_bible

log = logging.getLogger(__name__)
LABELS = ("computing", "religion", "legal", OTHER)
#: Bump when the sources or the sentence filters change, so cached sets are rebuilt.
OFFLINE_SET_VERSION = 1
LANGUAGES = ("en", "es")
MIN_TOKENS, MAX_TOKENS = 6, 50
LICENSES_DIR = Path("/usr/share/common-licenses")
BIBLES = {"en": ("sword-text-web", "engWEB2015eb"), "es": ("sword-text-sparv", "spaRV1909eb")}
#: Debian's installation guide, every language in one package.
INSTALLATION_GUIDE = "installation-guide-amd64"
#: The guide's folder of a language where it is not the language's code (the guide has Simplified Chinese only).
GUIDE_FOLDERS = {"zh": "zh_CN"}
DOCUMENTATION = {
    "en": ("debian-reference-en", INSTALLATION_GUIDE),
    "es": ("debian-reference-es", INSTALLATION_GUIDE),
}
FORTUNES = {"en": "fortunes", "es": "fortunes-es"}
#: fortune files on another label's topic, or not prose
FORTUNES_LEFT_OUT = frozenset(
    "ascii-art computers debian definitions law linux linuxcookie perl zippy informatica translate-me knghtbrd".split()
)
_MARKUP_NOTE = re.compile(r"<note\b.*?</note>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def default_data_dir() -> Path:
    return cache_dir("domain-data")


def sentences_of_text(text: str, language: str) -> Iterator[str]:
    """Sentences of a paragraph within the DSI token window, whitespace collapsed."""
    for piece in split_sentences(language, " ".join(text.split())):
        sentence = " ".join(piece.split())
        if MIN_TOKENS <= len(sentence.split()) <= MAX_TOKENS:
            yield sentence


def _paragraphs_of_plain_text(text: str) -> Iterator[str]:
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("--")]
        if lines:
            yield " ".join(lines)


def _read_text(path: Path) -> str:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.decode("utf-8", errors="replace")


def guide_folder(guide: Path, language: str) -> Path:
    """The folder of ``language``'s pages in the installation guide package unpacked at ``guide``."""
    return guide / "usr/share/doc" / INSTALLATION_GUIDE / GUIDE_FOLDERS.get(language, language)


def _documentation(roots: list[Path], language: str) -> Iterator[tuple[str, str]]:
    from bitextflow.extract.structure import page

    reference = sorted((roots[0] / "usr/share/debian-reference").glob(f"*.{language}.html"))
    guide = sorted(guide_folder(roots[1], language).glob("*.html"))
    for path in reference + guide:
        parsed = page(path.read_text(encoding="utf-8", errors="replace"), path.as_uri(), boilerplate=False)
        for kind, text in parsed.main if parsed else []:
            if kind in ("text", "listitem", "quote"):
                yield path.name if path in reference else f"install/{path.name}", text


def _bible(root: Path, module: str) -> Iterator[tuple[str, str]]:
    bible = open_bible(root, module)
    for testament in bible.get_structure().get_books().values():
        for book in testament:
            # footnotes sit inside verses without spaces around them: drop them before the tags
            raw = bible.get(books=[book.name], clean=False, join="\n")
            for verse in raw.splitlines():
                yield book.name, _TAG.sub("", _MARKUP_NOTE.sub(" ", verse))


def _legal() -> Iterator[tuple[str, str]]:
    doc_debian = fetch_packages(["doc-debian"], default_data_dir())["doc-debian"].root / "usr/share/doc/debian"
    licences = sorted({path.resolve() for path in LICENSES_DIR.glob("*") if path.is_file()}) if LICENSES_DIR.is_dir() else []
    for path in [*licences, doc_debian / "constitution.txt.gz", doc_debian / "social-contract.txt.gz"]:
        for paragraph in _paragraphs_of_plain_text(_read_text(path)):
            yield path.name, paragraph


def _fortunes(root: Path) -> Iterator[tuple[str, str]]:
    for path in sorted((root / "usr/share/games/fortunes").rglob("*")):
        name = path.name.removesuffix(".fortunes")
        if not path.is_file() or path.suffix in (".dat", ".u8") or name in FORTUNES_LEFT_OUT or "off" in path.parts:
            continue
        for entry in _read_text(path).split("\n%\n"):
            for paragraph in _paragraphs_of_plain_text(entry):
                yield f"fortunes/{name}", paragraph


def offline_set(language: str = "en") -> Path:
    """The labelled JSONL file of `language`, built on first use (a minute or two) and cached beside the packages."""
    path = default_data_dir() / f"offline-{language}-v{OFFLINE_SET_VERSION}.jsonl"
    if not path.is_file():
        log.info("building the offline domain set %s from Debian packages (10-30 s; once)", path)
        partial = write_labelled(path.with_suffix(f".{os.getpid()}.tmp"), build_offline_set(language))
        partial.replace(path)  # atomically: a killed build leaves no half set behind
    return path


def build_offline_set(language: str = "en") -> list[LabelledSentence]:
    """The labelled set of `language` (module docstring); downloads the packages on first use."""
    if language not in LANGUAGES:
        raise StageError(
            f"the offline domain set has English and Spanish only, not {language!r}; pass a labelled set (--data) for it"
        )
    bible_package, bible_module = BIBLES[language]
    packages = fetch_packages([*DOCUMENTATION[language], bible_package, FORTUNES[language]], default_data_dir())
    sources = {
        "computing": _documentation([packages[name].root for name in DOCUMENTATION[language]], language),
        "religion": _bible(packages[bible_package].root, bible_module),
        "legal": _legal() if language == "en" else iter(()),
        OTHER: _fortunes(packages[FORTUNES[language]].root),
    }
    seen: set[str] = set()
    labelled = []
    for label, paragraphs in sources.items():
        for site, paragraph in paragraphs:
            for sentence in sentences_of_text(paragraph, language):
                if sentence not in seen:
                    seen.add(sentence)
                    labelled.append(LabelledSentence(sentence, label, f"{label}/{site}", language))
    return labelled


if __name__ == "__main__":  # `python -m bitextflow.classify.offline en es`: build (or find) the cached sets
    import sys

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for code in sys.argv[1:] or LANGUAGES:
        print(offline_set(code))
