"""Document alignment by language-neutral URLs (the WMT16 shared-task / Bitextor URL baseline).

Multilingual sites usually publish a translation under the URL of the original with the language
marker swapped: ``/en/guide.html`` and ``/es/guide.html``, ``ch01.en.html`` and ``ch01.es.html``,
``?lang=fr``, ``fr.example.com``, ``/english/`` and ``/espanol/``. Removing every language marker
gives a key that the versions share, and documents in the two languages with the same key are
paired. The rule is precise and costs nothing, which is why it is the baseline that the
content-based aligners have to beat (García-Romero et al., "Smart bilingual focused crawling",
report recall 59.91 for their URL rule on the full WMT16 test set). On the 2,402 WMT16 en-fr gold
pairs, matching only the gold URLs (so no distractors), this module pairs 48.9% of them with no
wrong pair; most misses are single-letter markers (``_e.html``/``_f.html``), which are ambiguous
across languages, and translated paths, which only content can pair.

Markers are recognised for every language, not only the pair's, because sites mark all their
versions and a marker left in a key (``/de/`` on an en-es site) would break nothing but would hide
pages that are reachable under several prefixes. A token is only removed when it is a whole host
label, path segment, dot-delimited file-name part, language query value, or a hyphen/underscore
part of a segment; two-letter codes that are also common English words (``it``, ``to``, ``no``)
are not removed as hyphen/underscore parts, where they are more often words than markers.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

#: Method name written to document-pair records.
METHOD = "url_tokens"

# ISO 639-1 code | English name | endonyms and other spellings (comma-separated, lower case).
# Every ISO 639-1 language is listed; multi-word names are left out because a marker is one token.
_LANGUAGE_TABLE = """
aa|afar|
ab|abkhazian|
ae|avestan|
af|afrikaans|
ak|akan|
am|amharic|
an|aragonese|
ar|arabic|العربية
as|assamese|
av|avaric|
ay|aymara|
az|azerbaijani|azerbaycan,azərbaycanca
ba|bashkir|
be|belarusian|беларуская,belaruskaya
bg|bulgarian|български,balgarski
bh|bihari|
bi|bislama|
bm|bambara|
bn|bengali|bangla,বাংলা
bo|tibetan|
br|breton|brezhoneg
bs|bosnian|bosanski
ca|catalan|catala,català
ce|chechen|
ch|chamorro|
co|corsican|
cr|cree|
cs|czech|cesky,česky,cestina,čeština
cu|slavonic|
cv|chuvash|
cy|welsh|cymraeg
da|danish|dansk
de|german|deutsch
dv|divehi|
dz|dzongkha|
ee|ewe|
el|greek|ελληνικά,ellinika
en|english|
eo|esperanto|
es|spanish|espanol,español,castellano
et|estonian|eesti
eu|basque|euskara
fa|persian|farsi,فارسی
ff|fulah|
fi|finnish|suomi
fj|fijian|
fo|faroese|føroyskt
fr|french|francais,français
fy|frisian|frysk
ga|irish|gaeilge
gd|gaelic|gàidhlig
gl|galician|galego
gn|guarani|
gu|gujarati|
gv|manx|
ha|hausa|
he|hebrew|עברית,ivrit
hi|hindi|हिन्दी
ho|motu|
hr|croatian|hrvatski
ht|haitian|
hu|hungarian|magyar
hy|armenian|հայերեն,hayeren
hz|herero|
ia|interlingua|
id|indonesian|
ie|interlingue|
ig|igbo|
ii|yi|
ik|inupiaq|
io|ido|
is|icelandic|islenska,íslenska
it|italian|italiano
iu|inuktitut|
ja|japanese|日本語,nihongo
jv|javanese|
ka|georgian|ქართული,kartuli
kg|kongo|
ki|kikuyu|
kj|kuanyama|
kk|kazakh|қазақша,qazaqsha
kl|kalaallisut|
km|khmer|
kn|kannada|
ko|korean|한국어,hangugeo
kr|kanuri|
ks|kashmiri|
ku|kurdish|kurdî
kv|komi|
kw|cornish|
ky|kirghiz|kyrgyz
la|latin|latina
lb|luxembourgish|letzebuergesch,lëtzebuergesch
lg|ganda|
li|limburgish|
ln|lingala|
lo|lao|
lt|lithuanian|lietuviu,lietuvių
lu|luba|
lv|latvian|latviesu,latviešu
mg|malagasy|
mh|marshallese|
mi|maori|
mk|macedonian|македонски,makedonski
ml|malayalam|
mn|mongolian|
mr|marathi|
ms|malay|melayu
mt|maltese|malti
my|burmese|
na|nauru|
nb|bokmal|bokmål
nd|ndebele|
ne|nepali|
ng|ndonga|
nl|dutch|nederlands
nn|nynorsk|
no|norwegian|norsk
nr|southndebele|
nv|navajo|
ny|chichewa|
oc|occitan|
oj|ojibwa|
om|oromo|
or|oriya|odia
os|ossetian|
pa|punjabi|
pi|pali|
pl|polish|polski
ps|pashto|
pt|portuguese|portugues,português
qu|quechua|
rm|romansh|
rn|rundi|
ro|romanian|romana,română
ru|russian|русский,russkij,russkiy
rw|kinyarwanda|
sa|sanskrit|
sc|sardinian|
sd|sindhi|
se|sami|
sg|sango|
si|sinhala|
sk|slovak|slovensky,slovencina,slovenčina
sl|slovenian|slovene,slovenscina,slovenščina
sm|samoan|
sn|shona|
so|somali|
sq|albanian|shqip
sr|serbian|srpski,српски
ss|swati|
st|sotho|
su|sundanese|
sv|swedish|svenska
sw|swahili|kiswahili
ta|tamil|
te|telugu|
tg|tajik|
th|thai|ไทย
ti|tigrinya|
tk|turkmen|
tl|tagalog|filipino
tn|tswana|
to|tonga|
tr|turkish|turkce,türkçe
ts|tsonga|
tt|tatar|
tw|twi|
ty|tahitian|
ug|uighur|uyghur
uk|ukrainian|українська,ukrainska
ur|urdu|
uz|uzbek|
ve|venda|
vi|vietnamese|
vo|volapuk|
wa|walloon|
wo|wolof|
xh|xhosa|
yi|yiddish|
yo|yoruba|
za|zhuang|
zh|chinese|中文,zhongwen
zu|zulu|
"""

# ISO 639-2/3 codes that are not also common words or abbreviations in URLs ("may", "per",
# "cat", "fin", "mar", "mon" are left out on purpose).
# fmt: off
_THREE_LETTER_CODES = {
    "afr": "af", "amh": "am", "ara": "ar", "aze": "az", "bel": "be", "ben": "bn", "bre": "br",
    "bul": "bg", "ces": "cs", "cym": "cy", "cze": "cs", "deu": "de", "dut": "nl", "ell": "el",
    "eng": "en", "epo": "eo", "eus": "eu", "fao": "fo", "fas": "fa", "fra": "fr", "fre": "fr",
    "ger": "de", "gla": "gd", "gle": "ga", "glg": "gl", "guj": "gu", "hau": "ha", "heb": "he",
    "hin": "hi", "hrv": "hr", "hun": "hu", "hye": "hy", "ibo": "ig", "isl": "is", "ita": "it",
    "jpn": "ja", "kat": "ka", "kaz": "kk", "khm": "km", "kor": "ko", "lav": "lv", "ltz": "lb",
    "mkd": "mk", "mlt": "mt", "msa": "ms", "mya": "my", "nep": "ne", "nld": "nl", "nno": "nn",
    "nob": "nb", "oci": "oc", "pol": "pl", "por": "pt", "ron": "ro", "rum": "ro", "rus": "ru",
    "slk": "sk", "slv": "sl", "som": "so", "spa": "es", "sqi": "sq", "srp": "sr", "swa": "sw",
    "swe": "sv", "tam": "ta", "tel": "te", "tgl": "tl", "tha": "th", "tur": "tr", "ukr": "uk",
    "urd": "ur", "vie": "vi", "xho": "xh", "yor": "yo", "zho": "zh", "zul": "zu",
}
# fmt: on

# Two-letter codes that are also frequent English words or abbreviations: trusted only where a
# whole token stands for a language (segment, dot part, host label, query value).
_WORD_LIKE_CODES = frozenset(
    "am an as be ca co cs eu ga ha he hi hr id ie io is it la li ml mr ms my no or os pa pi ps so st to ts".split()
)

# Query parameters that select the page's language (besides any whose name contains "lang"); the
# value may be a code or a site's own number (``choixlang=2``), so the parameter goes whatever it is.
_LANGUAGE_PARAMETERS = frozenset({"locale", "hl", "lng", "lc", "l", "ln", "idioma", "langue", "sprache"})

# File extensions after which one more dot part is a language (Apache MultiViews: index.html.fr).
_WEB_EXTENSIONS = frozenset({"html", "htm", "xhtml", "shtml", "php", "asp", "aspx", "jsp", "cgi", "txt", "pdf"})

# Script subtags of language tags (zh-Hans, sr-Latn); regions are any two letters or three digits.
_SCRIPTS = frozenset({"hans", "hant", "latn", "cyrl", "arab"})

_DELIMITED = re.compile(r"([._-])")


def _build_markers() -> dict[str, str]:
    markers: dict[str, str] = {}
    for row in _LANGUAGE_TABLE.strip().splitlines():
        code, name, others = row.split("|")
        for token in (code, name, *filter(None, others.split(","))):
            markers[token] = code
    markers.update(_THREE_LETTER_CODES)
    return markers


_MARKERS = _build_markers()


@dataclass(frozen=True)
class Document:
    """A crawled document as far as document alignment needs it; ``language`` is its identified language.

    URL matching reads only the first three fields. ``paragraphs`` are the ``(type, text)`` of the
    title and main-content paragraphs in page order (boilerplate left out) and ``images`` the file
    names of the page's images: the content and structure methods of :mod:`bitextflow.align.combined`.
    """

    doc_id: str
    url: str
    language: str
    paragraphs: tuple[tuple[str, str], ...] = ()
    images: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocumentPair:
    """Two documents believed to be translations of each other, and how that was decided."""

    doc_id_a: str
    doc_id_b: str
    url_a: str
    url_b: str
    method: str
    score: float


def normalise_language(tag: str) -> str:
    """ISO 639-1 code for a language tag or name (``spa``, ``es-ES``, ``Spanish`` -> ``es``).

    Tags that are not in the table are returned lower-cased, so unknown languages still compare.
    """
    lowered = tag.strip().lower()
    if lowered in _MARKERS:
        return _MARKERS[lowered]
    primary = re.split(r"[-_]", lowered, maxsplit=1)[0]
    return _MARKERS.get(primary, lowered)


#: ISO 639-2 bibliographic codes; Debian package names use the terminological ones (deu, not ger).
_BIBLIOGRAPHIC_CODES = frozenset({"cze", "dut", "fre", "ger", "rum"})


def three_letter_code(language: str) -> str | None:
    """ISO 639-2/T code of a language tag (``es`` -> ``spa``, ``de-AT`` -> ``deu``), None if unknown.

    Debian names bilingual data packages with these codes (``apertium-eng-spa``).
    """
    code = normalise_language(language)
    return next(
        (three for three, two in _THREE_LETTER_CODES.items() if two == code and three not in _BIBLIOGRAPHIC_CODES),
        None,
    )


def _is_region(token: str) -> bool:
    if not token.isascii():
        return False
    return (len(token) == 2 and token.isalpha()) or (len(token) == 3 and token.isdigit()) or token.lower() in _SCRIPTS


def _compound_language(language: str, region: str) -> str | None:
    """Language of a ``xx-YY`` / ``xx_YY`` tag, or None if the two tokens are not one.

    A word-like code only counts when its region is written in capitals (``it-IT``) or repeats it
    (``it-it``), so that ``to-do`` stays a word.
    """
    code = language.lower()
    if len(code) not in (2, 3) or code not in _MARKERS or not _is_region(region):
        return None
    if code in _WORD_LIKE_CODES and not (region.isupper() or region.lower() == code):
        return None
    return _MARKERS[code]


def _value_language(value: str) -> str | None:
    """Language named by a whole query value (``es``, ``spa``, ``es_ES``), or None."""
    lowered = value.lower()
    if lowered in _MARKERS:
        return _MARKERS[lowered]
    parts = re.split(r"[-_]", value)
    return _compound_language(parts[0], parts[1]) if len(parts) == 2 else None


def _strip_token_markers(text: str, *, protect_extension: bool) -> tuple[str, list[str]]:
    """Remove language markers from one path segment or host label.

    Returns the text without them and the languages removed. With ``protect_extension`` the last
    dot part of a file name is taken for an extension (``.ps``, ``.pl``), not a language, unless it
    follows a web extension (``index.html.fr``).
    """
    parts = _DELIMITED.split(text)
    words, delimiters = parts[0::2], ["", *parts[1::2]]  # delimiters[k] precedes words[k]
    last = len(words) - 1
    removed = [False] * len(words)
    languages: list[str] = []

    def bounded_by_dots(first: int, final: int) -> bool:
        return (first == 0 or delimiters[first] == ".") and (final == last or delimiters[final + 1] == ".")

    k = 0
    while k <= last:
        if k < last and delimiters[k + 1] in "-_":
            compound = _compound_language(words[k], words[k + 1])
            if compound is not None:
                removed[k] = removed[k + 1] = True
                languages.append(compound)
                k += 2
                continue
        word = words[k].lower()
        is_extension = protect_extension and k == last and k > 0 and delimiters[k] == "."
        if is_extension and words[k - 1].lower() not in _WEB_EXTENSIONS:
            k += 1
            continue
        trusted = bounded_by_dots(k, k)
        if word in _MARKERS and (trusted or word not in _WORD_LIKE_CODES):
            removed[k] = True
            languages.append(_MARKERS[word])
        k += 1

    kept = [(delimiters[k], words[k]) for k in range(len(words)) if not removed[k]]
    if kept and removed[0]:
        kept[0] = ("", kept[0][1])
    return "".join(delimiter + word for delimiter, word in kept), languages


def _host(netloc: str) -> tuple[str, list[str]]:
    """Lower-cased host with ``www`` and language labels removed (the last two labels are kept:
    a country-code TLD such as ``.es`` names a site, not a version of one)."""
    host = netloc.lower().rsplit("@", 1)[-1]
    labels = host.split(".")
    head, tail = labels[:-2], labels[-2:]
    languages: list[str] = []
    kept: list[str] = []
    for label in head:
        if label == "www":
            continue
        stripped, found = _strip_token_markers(label, protect_extension=False)
        languages += found
        if stripped:
            kept.append(stripped)
    return ".".join(kept + tail), languages


def url_key(url: str) -> tuple[str, list[str]]:
    """Language-neutral key of a URL and the languages whose markers were removed from it.

    The key is host + path + sorted query, with the scheme, a ``www`` label, the fragment, empty
    path segments and every language marker removed; the path keeps its case (servers are case
    sensitive) but markers are recognised in any case.
    """
    parts = urlsplit(url.strip())
    host, languages = _host(parts.netloc)
    segments: list[str] = []
    raw_segments = [s for s in unquote(parts.path).split("/") if s]
    for position, segment in enumerate(raw_segments):
        is_file = position == len(raw_segments) - 1
        stripped, found = _strip_token_markers(segment, protect_extension=is_file)
        languages += found
        if stripped:
            segments.append(stripped)
    query: list[tuple[str, str]] = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name.lower() in _LANGUAGE_PARAMETERS or "lang" in name.lower():
            value_language = _value_language(value)
            if value_language is not None:
                languages.append(value_language)
        else:
            stripped, found = _strip_token_markers(value, protect_extension=False)
            languages += found
            query.append((name, stripped))
    key = host + "/" + "/".join(segments)
    if query:
        key += "?" + urlencode(sorted(query))
    return key, languages


def site_key(url: str) -> str:
    """The web site of a URL with language labels removed (``es.example.com`` -> ``example.com``).

    Content and structure methods compare documents only within one site: the versions of a page are
    published by the same site, and blocking by site keeps candidate generation far from all-pairs.
    """
    return _host(urlsplit(url.strip()).netloc)[0]


def url_depth(url: str) -> int:
    """Number of non-empty path segments: ILSP-FC's depth, which differs by at most one within a pair."""
    return sum(1 for segment in urlsplit(url.strip()).path.split("/") if segment)


def _canonical(url: str) -> str:
    """The URL without scheme, ``www``, fragment, empty segments or query order: two documents
    with the same canonical URL are one resource served in two languages, not two pages."""
    parts = urlsplit(url.strip())
    host = parts.netloc.lower().rsplit("@", 1)[-1].removeprefix("www.")
    path = "/".join(s for s in unquote(parts.path).split("/") if s)
    return f"{host}/{path}?{urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))}"


@dataclass(frozen=True)
class _Candidate:
    document: Document
    marked_languages: tuple[str, ...]


def _resolve(candidates: list[_Candidate], language: str, reasons: dict[str, str]) -> Document | None:
    """The one document of a language behind a key, or None when the key is ambiguous.

    Several documents of one language share a key when a site serves a page under both a marked and
    an unmarked URL (``/page`` and ``/en/page``); the one whose marker names its own language is
    the deliberate version. If that does not single one out, none is chosen and all are counted.
    """
    if len(candidates) == 1:
        return candidates[0].document
    own = [c for c in candidates if language in c.marked_languages]
    if len(own) == 1:
        reasons.update((c.document.doc_id, "duplicate_key") for c in candidates if c is not own[0])
        return own[0].document
    reasons.update((c.document.doc_id, "ambiguous_key") for c in candidates)
    return None


def align_by_url(documents: Iterable[Document], lang_a: str, lang_b: str) -> tuple[list[DocumentPair], Counter[str]]:
    """Pair documents of ``lang_a`` and ``lang_b`` whose URLs are equal once language markers go.

    Matching is one-to-one per key (the key includes the neutralised host, so it is per site).
    Every document is either in a pair or counted once under a reason:

    - ``other_language``: in neither language of the pair;
    - ``no_counterpart_a`` / ``no_counterpart_b``: its key has no document in the other language;
    - ``duplicate_key``: another document of its language with the same key was preferred;
    - ``ambiguous_key``: its key has several equally good documents on one side (this document's
      side or its counterpart's), so nothing is paired rather than guessing;
    - ``same_url``: both languages came from one URL (content negotiation or a language switch in
      a cookie); the URL alone proves nothing, so content-based methods must decide.

    Pairs come sorted by key, so the output is the same for the same input in any order.
    """
    pairs, reasons = url_matches(documents, lang_a, lang_b)
    return pairs, Counter(reasons.values())


def url_matches(documents: Iterable[Document], lang_a: str, lang_b: str) -> tuple[list[DocumentPair], dict[str, str]]:
    """:func:`align_by_url` with the reason of each unpaired document, by ``doc_id``."""
    code_a, code_b = normalise_language(lang_a), normalise_language(lang_b)
    if code_a == code_b:
        raise ValueError(f"align_by_url needs two different languages, got {lang_a!r} and {lang_b!r}")
    sides: dict[str, defaultdict[str, list[_Candidate]]] = {code_a: defaultdict(list), code_b: defaultdict(list)}
    reasons: dict[str, str] = {}
    for document in documents:
        side = sides.get(normalise_language(document.language))
        if side is None:
            reasons[document.doc_id] = "other_language"
            continue
        key, languages = url_key(document.url)
        side[key].append(_Candidate(document, tuple(languages)))

    pairs: list[DocumentPair] = []
    for key in sorted(sides[code_a].keys() | sides[code_b].keys()):
        candidates_a, candidates_b = sides[code_a].get(key, []), sides[code_b].get(key, [])
        doc_a = _resolve(candidates_a, code_a, reasons) if candidates_a else None
        doc_b = _resolve(candidates_b, code_b, reasons) if candidates_b else None
        if doc_a is None or doc_b is None:
            if doc_a is not None:
                reasons[doc_a.doc_id] = "ambiguous_key" if candidates_b else "no_counterpart_a"
            if doc_b is not None:
                reasons[doc_b.doc_id] = "ambiguous_key" if candidates_a else "no_counterpart_b"
        elif _canonical(doc_a.url) == _canonical(doc_b.url):
            reasons[doc_a.doc_id] = reasons[doc_b.doc_id] = "same_url"
        else:
            pairs.append(DocumentPair(doc_a.doc_id, doc_b.doc_id, doc_a.url, doc_b.url, METHOD, 1.0))
    return pairs, reasons
