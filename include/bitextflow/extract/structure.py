"""Page structure: typed main-content paragraphs from trafilatura, the rest of the page kept as boilerplate.

trafilatura (XML output, so element types survive) decides what the main content is, in the focus of
:class:`bitextflow.config.ExtractConfig`. The page's own block elements are walked as well; every block
whose text is not part of the main content becomes a paragraph flagged ``boilerplate`` (ILSP-FC's
``crawlinfo="boilerplate"``), placed in page order, and so does a main paragraph whose block is mostly
link text (:func:`flag_link_dense`). The page is parsed once: image names, blocks and metadata are read
from the whole tree, then the elements without page text are dropped (:func:`drop_textless`) and
trafilatura works on its own copy of the rest.

The defaults of these choices are those ``bench/extraction.py`` selects by cross-validation on the two
extraction gold sets (docs/benchmarks.md, "Extraction").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import lxml.etree
import lxml.html
import regex
import trafilatura
from htmldate import find_date
from trafilatura.metadata import extract_title
from trafilatura.utils import repair_faulty_html

from bitextflow.config import ExtractConfig
from bitextflow.extract.model import PageMetadata, Paragraph
from bitextflow.text.encoding import clean_line
from bitextflow.text.lengths import SPELLING_MARK

# trafilatura XML element -> our paragraph type; the outermost matching element is one paragraph.
MAIN_TAGS = {"head": "heading", "p": "text", "item": "listitem", "cell": "cell", "quote": "quote", "code": "code"}
# HTML block elements (a paragraph boundary) and the type of the text directly inside them.
_BLOCK_TYPES = {f"h{i}": "heading" for i in range(1, 7)} | {
    "li": "listitem", "dt": "listitem", "dd": "listitem", "td": "cell", "th": "cell", "blockquote": "quote", "pre": "code",
}  # fmt: skip
_BLOCKS = frozenset(_BLOCK_TYPES) | frozenset(
    "p div section article main header footer nav aside ul ol dl table thead tbody tfoot tr caption figure figcaption "
    "form fieldset legend address details summary body html center menu hr br option label".split()
)
_SKIP = frozenset("head script style noscript template svg math iframe object embed canvas select textarea button".split())
_MIN_CONTAINED = 20  # shorter blocks ("Home", "About") must match a main paragraph whole to count as main
_NON_LETTERS = regex.compile(rf"[^\p{{L}}{SPELLING_MARK}]+", regex.V1)  # re's [\W\d_] deleted Indic and Thai vowels
# trafilatura's repair_faulty_html (see _repaired_utf8): the characters it deletes that are below U+0080, as
# UTF-8 bytes, and how far into the page its other repairs read
_NON_XML_BYTES = bytes(range(0x09)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))
_REPAIRED_PREFIX = 4096
_ASCII_NON_LETTERS = bytes(code for code in range(128) if not chr(code).isalpha())  # [\W\d_] of ASCII
JSON_LD = "application/ld+json"
# Elements trafilatura deletes in its cleaning (``MANUALLY_CLEANED``) that hold no page text, scripts aside
_TEXTLESS = ("style", "svg", "meta", "link")

Focus = Literal["balanced", "precision", "recall"]

# trafilatura deletes, on some of its paths (``utils.remove_control_characters``), every character str.isprintable
# refuses: the zero-width non-joiner and joiner too, which spell words in Persian (میان‌بر), Indic scripts and emoji.
# They cross it as two letters of Mro, a script no page it meets is written in, and are put back after.
_JOINER_STANDINS = {"\u200c": "\U00016a40", "\u200d": "\U00016a41"}
_HIDE_JOINERS = str.maketrans(_JOINER_STANDINS)
_SHOW_JOINERS = str.maketrans({standin: joiner for joiner, standin in _JOINER_STANDINS.items()})

# trafilatura's parser settings (``trafilatura.utils.HTML_PARSER``) but one: lxml.html finds the class of
# every element object it makes with a Python method (half a million calls on the benchmark pages, made by
# trafilatura, htmldate and this module); here every element is an ``HtmlElement``, found in C. The classes
# left out (form, input, select, textarea, label) add form methods that none of them uses.
_PARSER = lxml.html.HTMLParser(collect_ids=False, default_doctype=False, encoding="utf-8", remove_comments=True, remove_pis=True)
_PARSER.set_element_class_lookup(
    lxml.etree.ElementDefaultClassLookup(
        element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
        entity=lxml.html.HtmlEntity,
    )
)  # fmt: skip


@functools.lru_cache(maxsize=8192)  # 4 calls in 10 repeat a text: merge, then dedup, keys each main paragraph
def letters_key(text: str) -> str:
    """Lower-case letters (with the marks a script spells with, :data:`~bitextflow.text.lengths.SPELLING_MARK`) only: two
    texts that differ only in spacing, digits, punctuation or accents share it."""
    folded = text.casefold()
    if folded.isascii():  # most texts: bytes.translate deletes in C, faster than the regex
        return folded.encode("ascii").translate(None, _ASCII_NON_LETTERS).decode("ascii")
    return _NON_LETTERS.sub("", folded)


@dataclass(slots=True)
class Page:
    metadata: PageMetadata
    main: list[tuple[str, str]]  # (type, text) of the main content, in order
    paragraphs: list[Paragraph]  # title, main and boilerplate paragraphs in page order
    images: list[str]  # file names of the page's <img> sources, in page order (ILSP-FC pair detection)


def image_names(tree) -> list[str]:
    """File name (last path segment, no query) of every ``<img src>`` of the page, in page order."""
    sources = (element.get("src") or "" for element in tree.iterfind(".//img"))
    return [name for name in (src.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1] for src in sources) if name]


def parse(html: str) -> lxml.html.HtmlElement | None:
    """The page's lxml tree, or None when there is no HTML to parse.

    The tree ``trafilatura.utils.load_html`` makes of a string (its repairs, its rejection of a tree of one
    element when the page does not look like HTML), parsed from UTF-8 bytes, which lxml reads faster than a
    Python string, with :data:`_PARSER`.
    """
    if not html or html.isspace():
        return None
    beginning = html[:50].lower()
    try:
        tree = lxml.html.fromstring(_repaired_utf8(html, beginning), parser=_PARSER)
    except (ValueError, lxml.etree.LxmlError):
        return None
    if "html" not in beginning and len(tree) < 2:
        return None
    return tree


def _repaired_utf8(html: str, beginning: str) -> bytes:
    """UTF-8 bytes of ``repair_faulty_html(html, beginning)`` without its regex scan of every character.

    Its first repair deletes the characters XML forbids (C0 controls but tab and line breaks, U+FFFE,
    U+FFFF) from the whole page with a regex, 0.1 s on the 28 MB of the benchmark pages; the others only
    read the first line and the first 4,096 characters. A page without those characters (most pages;
    ``bytes.translate`` finds out in C, five times faster) gets the repairs on its first lines only.
    """
    data = html.encode("utf-8", "surrogatepass")
    if len(data.translate(None, _NON_XML_BYTES)) != len(data) or b"\xef\xbf\xbe" in data or b"\xef\xbf\xbf" in data:
        return repair_faulty_html(html, beginning).encode("utf-8", "surrogatepass")
    head = html[: html.find("\n", _REPAIRED_PREFIX) + 1 or len(html)]
    repaired = repair_faulty_html(head, beginning)
    if repaired == head:
        return data
    return repaired.encode("utf-8", "surrogatepass") + data[len(head.encode("utf-8", "surrogatepass")) :]


def main_content(tree, url: str, focus: Focus = "recall"):
    """trafilatura's extraction of ``tree`` (metadata and the XML body), or None when nothing is found."""
    return trafilatura.bare_extraction(
        tree, url=url, output_format="xml", with_metadata=False, include_comments=False, include_tables=True,
        favor_recall=focus == "recall", favor_precision=focus == "precision",
    )  # fmt: skip


def page_metadata(tree) -> PageMetadata:
    """Title (trafilatura's choice), description, keywords and site name from the meta tags, date (htmldate).

    Cheaper than trafilatura's full metadata (author, categories, licence, dateparser's extensive date
    search), which cost more than the extraction itself. It leaves the tree as it is (htmldate prunes a copy).
    """
    meta: dict[str, str] = {}
    for element in tree.iterfind(".//meta"):
        name = (element.get("name") or element.get("property") or element.get("itemprop") or "").strip().lower()
        content = element.get("content")
        if name and content and name not in meta:
            meta[name] = content
    keywords = [meta[key] for key in ("keywords", "news_keywords", "article:tag") if key in meta]
    try:
        date = find_date(tree, extensive_search=False, original_date=True, outputformat="%Y-%m-%d") or ""
    except Exception:  # noqa: BLE001 - a date is a nicety; a page must not be lost for it
        date = ""
    return PageMetadata(
        title=clean_line(extract_title(tree) or ""),
        description=clean_line(meta.get("description") or meta.get("og:description") or ""),
        keywords=clean_line(", ".join(keywords)),
        date=date,
        sitename=clean_line(meta.get("og:site_name") or ""),
    )


def drop_textless(tree) -> None:
    """Scripts (JSON-LD aside), styles, SVG drawings, meta and link tags out of ``tree``; tails stay.

    trafilatura deletes them too, but in its cleaning, after it has copied the whole tree and run its
    raw-tree XPath prunes over every element: on the benchmark pages they are half the bytes (scripts
    and styles) and a seventh of the elements. Dropping them first saves 4% of the instructions of
    :func:`page` and about 5% of the stage's CPU time, with the same extraction (tests/integration/test_extract.py). JSON-LD stays: trafilatura reads it
    (forum threads, its baseline's ``articleBody``). Call it after everything that reads them.
    """
    for script in list(tree.iter("script")):
        if (script.get("type") or "").strip().lower() != JSON_LD:
            script.drop_tree()
    lxml.etree.strip_elements(tree, *_TEXTLESS, with_tail=False)


def main_paragraphs(body) -> list[tuple[str, str]]:
    """(type, text) of trafilatura's main-content paragraphs; a line break (``<br>``) starts a new one."""
    found: list[tuple[str, str]] = []
    if body is None:
        return found
    walker = lxml.etree.iterwalk(body, events=("start",), tag=list(MAIN_TAGS))
    for _event, element in walker:
        walker.skip_subtree()  # the outermost element is the paragraph; those inside it are part of its text
        kind = MAIN_TAGS[element.tag]
        found.extend((kind, text) for text in map(clean_line, _lines(element)) if text)
    return found


def _lines(element) -> list[str]:
    """The element's text cut at its line breaks (trafilatura's ``<lb/>``), which have no text of their own:
    joined, the words on either side would stick together ("...Palm Beach, FLJune 10 -- ...")."""
    if element.find(".//lb") is None:  # most paragraphs: lxml joins the text in C
        return ["".join(element.itertext())]
    lines: list[str] = []
    line: list[str] = []
    for event, node in lxml.etree.iterwalk(element, events=("start", "end")):
        if event == "start":
            if node.tag == "lb":
                lines.append("".join(line))
                line = []
            elif node.text:
                line.append(node.text)
        elif node is not element and node.tail:
            line.append(node.tail)
    lines.append("".join(line))
    return lines


def page_blocks(tree) -> list[tuple[str, str]]:
    """(type, text) of every block of visible text in the page, in document order."""
    return [(kind, text) for kind, text, _share in linked_blocks(tree)]


def linked_blocks(tree) -> list[tuple[str, str, float]]:
    """(type, text, link share) of every block of visible text in the page, in document order.

    The link share is the part of the block's text inside ``<a>`` elements: the link density of
    boilerpipe (Kohlschütter, Fankhauser and Nejdl, 2010, "Boilerplate detection using shallow text
    features") and jusText (Pomikálek, 2011), their best single sign of navigation and teaser blocks.
    """
    blocks: list[tuple[str, str, float]] = []
    buffer: list[str] = []
    types = ["text"]
    linked = 0  # characters of the buffer's text inside links, layout spaces left out
    links_open = 0

    def flush() -> None:  # called with text in the buffer only
        nonlocal linked
        text = "".join(buffer)
        buffer.clear()
        in_links, linked = linked, 0
        if not text.isspace():
            text = clean_line(text)
            if text:
                blocks.append((types[-1], text, min(1.0, in_links / len(text))))

    walker = lxml.etree.iterwalk(tree, events=("start", "end"))
    skip, blocks_tags, block_types = _SKIP, _BLOCKS, _BLOCK_TYPES
    for event, element in walker:
        tag = element.tag  # lower case: lxml.html's parser
        if not isinstance(tag, str):  # comments, processing instructions
            tag = "script"
        if event == "start":
            if tag in skip:
                walker.skip_subtree()
                continue
            if tag in blocks_tags:
                if buffer:
                    flush()
                types.append(block_types.get(tag, "text" if tag in ("p", "div") else types[-1]))
            elif tag == "a":
                links_open += 1
            # layout whitespace at the start of a block (most text between tags) would only be stripped
            if (text := element.text) and (buffer or not text.isspace()):
                buffer.append(text)
                if links_open:
                    linked += len(text.strip())
        else:
            if tag in blocks_tags:
                if buffer:
                    flush()
                types.pop()
            else:
                if tag == "a":
                    links_open -= 1
                if buffer and tag not in skip:
                    buffer.append(" ")  # inline elements: keep words apart
            if (tail := element.tail) and (buffer or not tail.isspace()):
                buffer.append(tail)
                if links_open:
                    linked += len(tail.strip())
    if buffer:
        flush()
    return blocks


def merge(title: str, main: list[tuple[str, str]], blocks: list[tuple[str, str, float]]) -> list[Paragraph]:
    """Title, then main paragraphs and boilerplate blocks in page order.

    A block is main content when its letters match a main paragraph's (it is emitted with the main
    paragraphs up to it, and gives that paragraph its link share) or are contained in the main text;
    otherwise it is boilerplate. A main paragraph that no block matches (trafilatura joins the list of links of a page
    that is little else into one) has the share of its letters in the links of the blocks it contains.
    """
    paragraphs = [Paragraph("title", title)] if title else []
    keys = [letters_key(text) for _type, text in main]
    first: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        first.setdefault(key, []).append(index)
    main_letters = "\n".join(keys)
    covered = {letters_key(title)} if title else set()
    block_keys: dict[str, str] = {}  # a page repeats a quarter of its blocks (menus, "Read more")
    emitted = 0
    linked: dict[int, float] = {}  # main paragraph -> letters in links of the blocks it contains

    def joined(index: int) -> Paragraph:
        letters = len(keys[index])
        share = min(1.0, linked.get(index, 0.0) / letters) if letters else 0.0
        return Paragraph(main[index][0], main[index][1], link_share=share)

    for btype, text, link_share in blocks:
        key = block_keys.get(text)
        if key is None:
            key = block_keys[text] = letters_key(text)
        if not key or key in covered:
            continue
        match = next((i for i in first[key] if i >= emitted), None) if key in first else None
        if match is not None:
            paragraphs.extend(joined(index) for index in range(emitted, match))
            paragraphs.append(Paragraph(main[match][0], main[match][1], link_share=link_share))
            emitted = match + 1
            continue
        inside = (link_share > 0 or len(key) >= _MIN_CONTAINED) and key in main_letters
        if inside and link_share:  # a link of a list trafilatura joined into one paragraph, or of a paragraph's words
            holder = next((index for index in range(emitted, len(keys)) if key in keys[index]), None)
            if holder is not None:
                linked[holder] = linked.get(holder, 0.0) + link_share * len(key)
        if inside and len(key) >= _MIN_CONTAINED:
            continue  # a piece of a main paragraph (trafilatura split or merged blocks differently)
        paragraphs.append(Paragraph(btype, text, boilerplate=True, link_share=link_share))
        covered.add(key)  # a repeated menu is flagged once
    paragraphs.extend(joined(index) for index in range(emitted, len(main)))
    return paragraphs


def flag_link_dense(paragraphs: list[Paragraph], max_link_density: float | None) -> None:
    """Flag as boilerplate every paragraph whose block has more than ``max_link_density`` of its text in links.

    trafilatura tests link density on whole sections with fixed thresholds and keeps, inside the content,
    lines such as "Related: ...", "READ MORE: ..." or a list of teaser links; boilerpipe and jusText judge
    each block by its own link density. ``None`` flags nothing.
    """
    if max_link_density is None:
        return
    for paragraph in paragraphs:
        if paragraph.link_share > max_link_density:
            paragraph.boilerplate = True


def _hide_joiners(tree) -> None:
    """Replace the joiners of every text of ``tree`` by their stand-ins (:data:`_JOINER_STANDINS`), in place."""
    for element in tree.iter():
        if element.text:
            element.text = element.text.translate(_HIDE_JOINERS)
        if element.tail:
            element.tail = element.tail.translate(_HIDE_JOINERS)


def page(html: str, url: str, config: ExtractConfig | None = None, boilerplate: bool = True) -> Page | None:
    """Metadata and paragraphs of one HTML page; None when the page has no main content.

    ``config`` gives the extraction choices (trafilatura's focus, link density; the defaults when None).
    Without ``boilerplate`` the page's blocks are not walked: no boilerplate paragraphs, no link shares.
    """
    config = config or ExtractConfig()
    tree = parse(html)
    if tree is None:
        return None
    images = image_names(tree)
    blocks = linked_blocks(tree) if boilerplate else []
    metadata = page_metadata(tree)
    drop_textless(tree)
    joiners = "\u200c" in html or "\u200d" in html
    if joiners:
        _hide_joiners(tree)
    extracted = main_content(tree, url, config.extraction_focus)  # works on a copy of the tree
    main = main_paragraphs(extracted.body) if extracted is not None else []
    if joiners:
        main = [(kind, text.translate(_SHOW_JOINERS)) for kind, text in main]
    if not main:
        return None
    paragraphs = merge(metadata.title, main, blocks)
    flag_link_dense(paragraphs, config.max_link_density)
    return Page(metadata, main, paragraphs, images)
