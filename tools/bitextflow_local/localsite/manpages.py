"""The full site's manual pages, laid out as manpages.debian.org lays them out: mostly English only.

Real multilingual sites are mostly pages without a translation, with the translated part a minority;
Debian's man page site is one: the Linux man-pages project (Debian `manpages`, `manpages-dev`: about
1,100 pages) is English, and the manpages-l10n project translates a minority of them into some
languages (`manpages-<lang>`). Every page is rendered by groff to text (`-Tutf8`, which `groff-base`
provides on every Debian system) and then to simple HTML: section headings, paragraphs, preformatted
blocks, and links to the pages it cites (`open(2)`), in its own language where that translation exists,
else in English. URLs name the language the way the Reference does (`/man/man2/open.2.es.html`); every
page gets the manuals' language switcher. `/man/` lists the sections (English) and the translations
(one index page per language); a section's index lists its pages with their one-line description.
"""

from __future__ import annotations

import gzip
import html
import re
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bitextflow.errors import StageError

ENGLISH_PACKAGES = ("manpages", "manpages-dev")
MAN_SECTIONS = ("1", "2", "3", "4", "5", "7")  # the sections the man-pages project writes
# Site language -> the folder manpages-l10n installs it in (`manpages-<lang>` is the package).
L10N_FOLDERS: dict[str, str] = {
    "cs": "cs", "da": "da", "de": "de", "el": "el", "es": "es", "fr": "fr", "id": "id", "it": "it", "nl": "nl",
    "pt-br": "pt_BR", "ro": "ro", "ru": "ru", "sv": "sv", "vi": "vi",
}  # fmt: skip
SITE_DIR = "man"
_SO_REQUEST = re.compile(rb"^\.so\s", re.MULTILINE)
_REFERENCE = re.compile(r"\b([A-Za-z_][\w.+:-]*)\((\d)\)")


def package_names(languages: Sequence[str]) -> list[str]:
    """The packages of the man pages in `languages` (English is always built: it is the original)."""
    return [*ENGLISH_PACKAGES, *(f"manpages-{lang}" for lang in languages if lang in L10N_FOLDERS)]


def site_path(key: str, lang: str) -> str:
    """`man2/open.2` in `es` -> `man/man2/open.2.es.html`."""
    return f"{SITE_DIR}/{key}.{lang}.html"


def discover(roots: Mapping[str, Path], languages: Sequence[str]) -> dict[str, dict[str, Path]]:
    """Page key (`man2/open.2`) -> language -> source file, for every English page and its translations.

    `roots` maps a package name to its unpacked root. Aliases (symbolic links, and files that only
    `.so`-include another page) are left out: they are the same page under another name. Translations
    of pages the English packages do not ship (manpages-l10n also translates other packages) have no
    original here and are left out too.
    """
    pages: dict[str, dict[str, Path]] = {}
    for package in ENGLISH_PACKAGES:
        for section in MAN_SECTIONS:
            for source in sorted((roots[package] / "usr/share/man" / f"man{section}").glob("*.gz")):
                if _is_page(source):
                    pages.setdefault(f"man{section}/{source.name[:-3]}", {})["en"] = source
    for lang in languages:
        if lang not in L10N_FOLDERS:
            continue
        folder = roots[f"manpages-{lang}"] / "usr/share/man" / L10N_FOLDERS[lang]
        for key, sources in pages.items():
            source = folder / f"{key}.gz"
            if source.is_file() and _is_page(source):
                sources[lang] = source
    return {key: pages[key] for key in sorted(pages)}


def _is_page(source: Path) -> bool:
    return not source.is_symlink() and _SO_REQUEST.search(gzip.decompress(source.read_bytes())[:4096]) is None


def render_all(pages: Mapping[str, Mapping[str, Path]], workers: int) -> dict[tuple[str, str], str]:
    """(key, language) -> the page rendered to text by groff, `workers` groff processes at a time."""
    jobs = [(key, lang, source) for key, sources in pages.items() for lang, source in sources.items()]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        texts = list(pool.map(lambda job: _groff(job[2]), jobs))
    return {(key, lang): text for (key, lang, _source), text in zip(jobs, texts, strict=True)}


def _groff(source: Path) -> str:
    """The page as plain UTF-8 text: no overstrike, left-aligned and unhyphenated, 78 columns."""
    command = ["groff", "-k", "-t", "-man", "-Tutf8", "-P-cbou", "-rLL=78n", "-rHY=0", "-dAD=l"]
    try:
        result = subprocess.run(command, input=gzip.decompress(source.read_bytes()), capture_output=True, check=False)
    except FileNotFoundError:
        raise StageError("groff not found: the full local site renders man pages with it; install groff-base") from None
    if result.returncode != 0 or not result.stdout.strip():
        reason = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise StageError(f"groff cannot render {source} ({reason[0]}); delete the package from the cache and build again")
    return result.stdout.decode("utf-8", "replace")


def description(text: str) -> str:
    """The page's one-line description: the NAME section's text (`open, openat, creat - open and ...`)."""
    blocks = _blocks(text)
    # the first heading is NAME in the page's language (NOMBRE, NOM...)
    return " ".join(blocks[1][1].split()) if len(blocks) > 1 and blocks[0][0] == "heading" else ""


def page_html(key: str, text: str, href_of: Mapping[str, str]) -> tuple[str, str]:
    """The title and the HTML body of a rendered page; `href_of` maps a cited page (`open.2`) to the
    site path to link it to."""
    name, section = key.split("/", 1)[1].rsplit(".", 1)
    title = f"{name}({section})"
    description_text = description(text)
    if description_text:
        title += " — " + description_text
    parts = []
    for kind, block in _blocks(text):
        if kind == "heading":
            parts.append(f"<h2>{html.escape(block)}</h2>\n")
        elif kind == "code":
            parts.append(f"<pre>{_linked(block, href_of)}</pre>\n")
        else:
            parts.append(f"<p>{_linked(' '.join(block.split()), href_of)}</p>\n")
    back = f'<p><a href="/{SITE_DIR}/">man</a></p>\n'
    return title, f"<h1>{html.escape(title)}</h1>\n" + "".join(parts) + back


def _linked(text: str, href_of: Mapping[str, str]) -> str:
    """Escaped text whose citations of other pages (`close(2)`) link to them where they exist."""

    def link(match: re.Match[str]) -> str:
        target = href_of.get(f"{match.group(1)}.{match.group(2)}")
        return match.group(0) if target is None else f'<a href="/{target}">{match.group(0)}</a>'

    return _REFERENCE.sub(link, html.escape(text, quote=False))


def _blocks(text: str) -> list[tuple[str, str]]:
    """The page's text as (kind, text) blocks: `heading` (an unindented line), `code` (a block with
    lines indented deeper than its first), `text` (a paragraph). The header and footer lines go."""
    lines = text.splitlines()[1:-1]
    blocks: list[tuple[str, str]] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            indents = [len(line) - len(line.lstrip()) for line in paragraph]
            kind = "code" if max(indents) > indents[0] and len(paragraph) > 1 else "text"
            blocks.append(
                (kind, "\n".join(line[min(indents) :] for line in paragraph) if kind == "code" else " ".join(paragraph))
            )
            paragraph.clear()

    for line in lines:
        if not line.strip():
            flush()
        elif not line[0].isspace():
            flush()
            blocks.append(("heading", line.strip()))
        else:
            paragraph.append(line.rstrip())
    flush()
    return blocks


def index_body(heading: str, entries: Sequence[tuple[str, str, str]]) -> str:
    """Body of an index page: `entries` are (site path, page name, description)."""
    items = "".join(
        f'<li><a href="/{html.escape(path)}">{html.escape(name)}</a> {html.escape(text)}</li>\n' for path, name, text in entries
    )
    return f"<h1>{html.escape(heading)}</h1>\n<ul>\n{items}</ul>\n"
