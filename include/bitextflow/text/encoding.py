"""Bytes to clean text: charset choice, binary sniffing, mojibake repair, space and control normalisation.

Charset order (what a browser does, plus a detector): byte-order mark, the HTTP ``Content-Type``
charset, the page's ``<meta charset>`` (or ``http-equiv`` content type), then detection: strict UTF-8
first (valid UTF-8 is almost never anything else), charset_normalizer otherwise, windows-1252 as the
last resort. A declared charset that cannot decode the bytes is skipped, not trusted.
Text is then repaired with ftfy (mojibake such as ``CafÃ©``), composed to NFC (pages written with
combining accents, ``u`` + U+0308, would otherwise never equal the same words typed with ``ü``) and
normalised: the many Unicode spaces become a plain space, invisible format characters and control
characters go.
"""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata
from dataclasses import dataclass

import ftfy
import webencodings
from charset_normalizer import from_bytes
from ftfy.badness import is_bad

# Magic numbers of formats that servers mislabel as text/html.
BINARY_SIGNATURES = (
    (b"%PDF-", "pdf"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"PK\x03\x04", "zip"),
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"RIFF", "riff"),
    (b"OggS", "ogg"),
    (b"ID3", "mp3"),
    (b"\x00\x00\x01\x00", "ico"),
    (b"wOFF", "woff"),
    (b"wOF2", "woff2"),
    (b"\x7fELF", "elf"),
    (b"MZ", "exe"),
    (b"\xd0\xcf\x11\xe0", "ole"),
)
_TEXT_BYTES = bytes(b for b in range(256) if not (b < 0x20 and b not in b"\t\n\r\x0c\x1b"))  # deleted: C0 controls remain
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]{1,40})""", re.IGNORECASE)
# WHATWG encoding rules: these labels mean windows-1252 on the web; utf-16 in a meta tag means utf-8.
# Detection results we accept: the encodings seen on the web. On short or odd input charset_normalizer
# may name exotic code pages (cp1006, mac_*): windows-1252 is the better guess then.
_DETECTABLE = frozenset(
    "utf-8 cp1250 cp1251 cp1252 cp1253 cp1254 cp1255 cp1256 cp1257 cp1258 iso8859-2 iso8859-5 iso8859-7 iso8859-15 "
    "koi8-r koi8-u shift_jis cp932 euc_jp iso2022_jp gb2312 gbk gb18030 big5 euc_kr cp949 cp874 tis-620 utf-16".split()
)
_WEB_ALIASES = {"iso8859-1": "cp1252", "latin-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254", "iso8859-11": "cp874"}

# Spaces that become U+0020: no-break, ogham, en/em quads and spaces, three-per-em ... hair, narrow
# no-break, medium mathematical, ideographic; tabs and other line breaks too.
_SPACES = "\t\x0b\x0c\x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"
# Invisible format characters that only get in the way of matching (zero-width space, word joiner,
# BOM, soft hyphen, bidi marks, embeddings and isolates, the Arabic letter mark that right-to-left pages put around
# numbers and Latin names). ZWJ/ZWNJ stay: they change spelling in some scripts.
_INVISIBLE = (
    "\u00ad\u061c\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
_CONTROLS = "".join(chr(c) for c in [*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F, *range(0x80, 0x85), *range(0x86, 0xA0)])
_REPLACEMENTS = {ch: " " for ch in _SPACES} | {ch: "" for ch in _INVISIBLE + _CONTROLS} | {"\r": "\n"}
# A regex finds the few characters to replace far faster than str.translate with a dict walks every
# character of non-ASCII text (6x on the benchmark pages), and most texts have none at all.
_SPECIAL = re.compile("[" + re.escape("".join(_REPLACEMENTS)) + "]")
_FTFY = ftfy.TextFixerConfig(uncurl_quotes=False, fix_latin_ligatures=True, normalization="NFC", explain=False)
# Besides mojibake (ftfy.badness.is_bad), ftfy has work to do on HTML entities left in text,
# Latin ligatures, C1 controls and replacement characters.
_FTFY_WORK = re.compile("&#?[A-Za-z0-9]{2,8};|[\u0080-\u009f\ufb00-\ufb06\ufffd]")
_ASCII_RUN = re.compile(r"([\x00-\x7f]{2})[\x00-\x7f]+([\x00-\x7f]{2})")  # see _looks_like_mojibake


_MIN_DETECTION_BYTES = 64


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str
    source: str  # bom | http | meta | detected | fallback
    #: Charsets the response declared that are no encoding of web pages (``undefined``, ``unicode_escape``,
    #: ``utf-7``...): refused, and the text decoded as if nothing had been declared.
    refused: tuple[str, ...] = ()


def binary_signature(body: bytes) -> str | None:
    """Name of a binary format ``body`` starts with (or ``binary`` for NUL-heavy data); None for text."""
    head = body[:16]
    for signature, name in BINARY_SIGNATURES:
        if head.startswith(signature):
            return name
    if any(body.startswith(bom) for bom, _ in _BOMS):
        return None
    sample = body[:4096]
    # Text (UTF-16 aside, which has a BOM) has no NULs and next to no C0 controls besides tab and line breaks.
    if sample and (sample.count(0) > len(sample) // 1000 or len(sample.translate(None, _TEXT_BYTES)) > len(sample) // 100):
        return "binary"
    return None


@functools.lru_cache(maxsize=256)
def declared_codec(label: str | None) -> str | None:
    """The Python codec of a charset label that a response or its ``<meta>`` declares, or None.

    Only the labels of the WHATWG Encoding Standard count, mapped as browsers map them (``latin1`` and
    ``ascii`` are windows-1252, ``gb2312`` is GBK, ``iso-2022-kr`` is the replacement encoding, refused).
    Python's other codecs (``unicode_escape``, ``punycode``, ``rot13``, ``undefined``...) are no decoders of
    web pages: a page declaring one is decoded as if it had declared nothing.
    """
    if not label:
        return None
    found = webencodings.lookup(label.strip().strip("\"'"))
    if found is None or found.name == "replacement":
        return None
    try:
        return codecs.lookup(found.codec_info.name).name
    except LookupError:  # x-user-defined: webencodings' own codec, which no page in practice needs
        return None


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().strip("\"'").lower()).name
    except LookupError:
        return None
    return _WEB_ALIASES.get(name, name)


def meta_charset(body: bytes) -> str | None:
    """The charset a ``<meta>`` tag declares in the first 4 KB, if any."""
    return _meta_codec(meta_label(body))


def _meta_codec(label: str | None) -> str | None:
    # a <meta> inside the page cannot be UTF-16 (it would not have been readable as ASCII): browsers read UTF-8
    codec = declared_codec(label)
    return "utf-8" if codec in ("utf-16", "utf-16-le", "utf-16-be") else codec


def meta_label(body: bytes) -> str | None:
    """The charset label a ``<meta>`` tag names in the first 4 KB, as written."""
    found = _META_CHARSET.search(body[:4096])
    return found.group(1).decode("ascii", "replace") if found else None


def decode_html(body: bytes, http_charset: str | None = None) -> Decoded:
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return Decoded(body.decode(codec, "replace"), codec, "bom")
    meta = meta_label(body)
    refused = tuple(label for label in (http_charset, meta) if label and declared_codec(label) is None)
    for codec, source in ((declared_codec(http_charset), "http"), (_meta_codec(meta), "meta")):
        if codec:
            try:
                return Decoded(body.decode(codec), codec, source, refused)
            except UnicodeError:
                continue
    try:
        return Decoded(body.decode("utf-8"), "utf-8", "detected", refused)
    except UnicodeDecodeError:
        pass
    if len(body) < _MIN_DETECTION_BYTES:  # a guess from a few bytes is noise: the web's default is better
        return Decoded(body.decode("cp1252", "replace"), "cp1252", "fallback", refused)
    best = from_bytes(body[:200_000]).best()
    if best is not None and best.encoding:
        codec = _codec(best.encoding)
        if codec in _DETECTABLE:
            return Decoded(body.decode(codec, "replace"), codec, "detected", refused)
    return Decoded(body.decode("cp1252", "replace"), "cp1252", "fallback", refused)


def normalise(text: str) -> str:
    """Special spaces to U+0020, invisible and control characters removed, CR to LF."""
    if _SPECIAL.search(text) is None:
        return text
    return _SPECIAL.sub(lambda found: _REPLACEMENTS[found.group()], text)


def _looks_like_mojibake(text: str) -> bool:
    """ftfy's heuristic (``is_bad``) on the lines with non-ASCII characters only, ASCII runs shortened.

    Every pattern of ftfy's ``BADNESS_RE`` needs a non-ASCII character and reaches at most two ASCII
    characters to either side of the non-ASCII ones (``[a-z]\\s?Ã``, ``Â [ ...``, ``ВЂВ.[A-Za-z ]``), and
    none is made of ASCII alone. So ASCII-only lines cannot match, and an ASCII run of five or more
    characters can be cut to its first two and last two without creating or losing a match: the check
    then reads the accented letters and symbols of a page instead of all its text (4x faster on the
    benchmark pages; equal to ``is_bad`` on random strings, tests/integration/test_extract.py).
    """
    suspect = [line for line in text.split("\n") if not line.isascii()]
    # the leading newline keeps line-start patterns
    return bool(suspect) and is_bad(_ASCII_RUN.sub(r"\1\2", "\n" + "\n".join(suspect)))


def repair(text: str) -> tuple[str, str | None]:
    """ftfy repair (mojibake, HTML entities left in text, ligatures, NFC) or NFC alone, then :func:`normalise`.

    Returns the text and the repair made, if any: ``mojibake_repaired`` when ftfy changed the text,
    ``nfc_composed`` when only combining characters were composed.
    """
    if _looks_like_mojibake(text) or _FTFY_WORK.search(text):
        fixed = ftfy.fix_text(text, _FTFY)  # composes to NFC too
        if fixed != text:
            return normalise(fixed), "mojibake_repaired"
    elif not unicodedata.is_normalized("NFC", text):
        return normalise(unicodedata.normalize("NFC", text)), "nfc_composed"
    return normalise(text), None


def clean_line(text: str) -> str:
    """One paragraph on one line: normalised, whitespace runs collapsed."""
    return " ".join(normalise(text).split())
