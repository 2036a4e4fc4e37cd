"""Personal data in released text: email addresses, phone numbers, IP addresses, IBANs and payment card numbers.

Each detector finds candidates with a permissive pattern and keeps only those that the type's standard accepts,
checked by a maintained library where one exists:

- ``email``: an addr-spec (RFC 5322 section 3.4.1, internationalised local parts and domains per RFC 6531 and
  IDNA 2008) whose syntax ``email-validator`` accepts (no DNS look-up) and whose domain ends in a public suffix
  (Mozilla's Public Suffix List, through ``tld``), so that ``logo@2x.png`` is not an address.
- ``phone``: Google's libphonenumber (PyPI ``phonenumbers``): :class:`phonenumbers.PhoneNumberMatcher` at leniency
  ``VALID`` (the number is valid for its region's numbering plan, ITU-T E.164), once per region: numbers written
  in international format (``+34 ...``, ``0049 ...``) are found whatever the region, national formats in the
  regions given (by default the likely region of each of the pair's languages in CLDR, e.g. en: US, es: ES, fr:
  FR, de: DE; ``personal_data.phone_regions`` adds others). Prices (a currency sign beside the number), dates,
  ranges of years and runs of more than 15 digits, which numbering plans can accept, are left alone.
- ``ip``: IPv4 dotted quads (RFC 791) and IPv6 text forms (RFC 4291 section 2.2, RFC 5952) that Python's
  ``ipaddress`` parses; loopback, unspecified, link-local, multicast and reserved addresses identify nobody and are
  left alone, and a dotted quad that follows a version word (``version 1.2.3.4``) is taken for a version.
- ``iban``: ISO 13616: country code, two check digits and the country's BBAN (its length and format), with the
  ISO 7064 MOD 97-10 check, by ``python-stdnum`` (``stdnum.iban``); the print format's groups of four may be spaced.
- ``card``: payment card numbers (ISO/IEC 7812-1): 13 to 19 digits, optionally grouped by spaces or dashes,
  passing the Luhn check (ISO/IEC 7812-1 annex B, ``stdnum.luhn``) and in an issuer identification number range of
  a major scheme with that scheme's lengths (:data:`CARD_RANGES`).

Where spans overlap, the type earlier in :data:`PERSONAL_DATA_TYPES` wins (an IBAN's digits are not also a card or a
phone number). Person names are not detected: that needs a named-entity model, and none is installed offline here;
a detector for them is one more entry of :data:`DETECTORS` (a function from text and regions to findings).

:func:`redact` replaces what was found by typed placeholders (``[EMAIL_1]``, ``[PHONE_2]``) numbered over a group
of texts, the two sides of a sentence pair, so that the same value gets the same placeholder on both sides.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import phonenumbers
from email_validator import EmailNotValidError, validate_email
from stdnum import iban, luhn
from tld import is_tld

from bitextflow.errors import ConfigError

#: Every type, in priority order: where two findings overlap, the earlier type wins.
PERSONAL_DATA_TYPES: tuple[str, ...] = ("email", "iban", "card", "ip", "phone")


@dataclass(frozen=True)
class Finding:
    """One value found in a text: its type, its span, and ``value``, what makes two findings the same value (the
    address case-folded, the phone's national number, the IBAN or card digits, the canonical IP)."""

    kind: str
    start: int
    end: int
    value: str


# -- email ----------------------------------------------------------------------------------------------------------
_LOCAL = r"\w.!#$%&'*+/=?^`{|}~-"
# the local part starts where its token does and is at most 64 characters (RFC 5321 4.5.3.1.1), each label of the
# domain at most 63: ``[...]+@`` tried every start inside a long token, each time back to its ``@`` (quadratic: an
# 80,000-character token before an ``@`` took 9.4 s); now each start costs at most the limits
_EMAIL = re.compile(rf"(?<![{_LOCAL}])[{_LOCAL}]{{1,64}}@[\w-]{{1,63}}(?:\.[\w-]{{1,63}})+")


def find_emails(text: str, regions: Sequence[str] = ()) -> Iterator[Finding]:
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        candidate = match.group().lstrip(".")  # dots before an address end the sentence before it
        try:
            checked = validate_email(candidate, check_deliverability=False)
        except EmailNotValidError:
            continue
        if is_tld(checked.ascii_domain.rsplit(".", 1)[-1]):
            yield Finding("email", match.end() - len(candidate), match.end(), checked.normalized.casefold())


# -- phone ----------------------------------------------------------------------------------------------------------
# libphonenumber's matcher is the cost of this module: it runs only where seven digits stand close together
_SEVEN_DIGITS = re.compile(r"\d(?:\D{0,4}\d){6}")


# What libphonenumber's VALID leniency lets through that is no phone number: digit groups beside a currency sign (a
# price: 613.249.396 €), a date (13.10.2011, 2011-10-13), a range of years, more digits than E.164 allows (15, the
# country code included) without an international prefix (a card number with a wrong check digit).
_DATE = re.compile(r"\d{1,2}([./-])\d{1,2}\1(?:1[89]|20)\d\d|(?:1[89]|20)\d\d([./-])\d{1,2}\2\d{1,2}")
_YEARS = re.compile(r"\b(?:1[89]|20)\d\d ?[-–] ?(?:1[89]|20)\d\d\b")


def _not_a_phone(text: str, start: int, end: int) -> bool:
    written = text[start:end]
    around = text[max(0, start - 2) : start] + text[end : end + 2]
    return (
        any(unicodedata.category(ch) == "Sc" for ch in around)
        or _DATE.fullmatch(written) is not None
        or _YEARS.search(written) is not None
        or (sum(ch.isdigit() for ch in written) > 15 and not written.startswith(("+", "00")))
    )


#: separators people put between digit groups that libphonenumber does not know: read as a dash (same length)
_PHONE_SEPARATOR = re.compile(r"(?<=\d)[·•‧∙_](?=\d)")


def find_phones(text: str, regions: Sequence[str] = ()) -> Iterator[Finding]:
    if not _SEVEN_DIGITS.search(text):
        return
    text = _PHONE_SEPARATOR.sub("-", text)
    for region in regions:
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            if not _not_a_phone(text, match.start, match.end):
                yield Finding("phone", match.start, match.end, str(match.number.national_number))


@functools.cache
def likely_region(language: str) -> str | None:
    """The region CLDR's likely subtags give ``language`` (en: US, es: ES), when libphonenumber knows it."""
    import babel.core

    region = str(babel.core.get_global("likely_subtags").get(language, "")).rsplit("_", 1)[-1]
    return region if region in phonenumbers.SUPPORTED_REGIONS else None


def phone_regions(languages: Sequence[str], extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The regions whose national formats count as phone numbers: each language's likely region, then ``extra``."""
    unknown = [region for region in extra if region not in phonenumbers.SUPPORTED_REGIONS]
    if unknown:
        raise ConfigError(
            f"personal_data.phone_regions: unknown region(s) {', '.join(unknown)}; use ISO 3166-1 alpha-2 codes, e.g. GB, MX"
        )
    likely = [likely_region(language) for language in languages]
    # "ZZ" (no region): libphonenumber then finds numbers in international format only
    return tuple(dict.fromkeys(region for region in (*likely, *extra) if region)) or ("ZZ",)


# -- IP addresses ---------------------------------------------------------------------------------------------------
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)(?!\w)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{1,4}|:)?(?::[0-9A-Fa-f]{0,4}){2,7}(?:(?<=:)(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])")
_VERSION_WORD = re.compile(r"(?:\b(?:v|version|versi[oó]n|versão|versione|release|build)\.?\s*)$", re.IGNORECASE)


def _personal_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not (
        address.is_loopback or address.is_unspecified or address.is_link_local or address.is_multicast or address.is_reserved
    )


def find_ip_addresses(text: str, regions: Sequence[str] = ()) -> Iterator[Finding]:
    if "." in text:
        for match in _IPV4.finditer(text):
            try:
                address = ipaddress.IPv4Address(match.group())
            except ValueError:
                continue
            if _personal_address(address) and not _VERSION_WORD.search(text, max(0, match.start() - 12), match.start()):
                yield Finding("ip", match.start(), match.end(), address.compressed)
    if "::" in text or text.count(":") >= 7:
        for match in _IPV6.finditer(text):
            try:
                address6 = ipaddress.IPv6Address(match.group())
            except ValueError:
                continue
            if _personal_address(address6):
                yield Finding("ip", match.start(), match.end(), address6.compressed)


# -- IBAN -----------------------------------------------------------------------------------------------------------
# ISO 13616 IBANs are 15 to 34 characters; the longest candidate is cut back to the longest valid one, so an IBAN
# followed by a BIC or other capitals is still found.
_IBAN = re.compile(r"\b[A-Za-z]{2}\d{2}(?:[ .-]?[A-Za-z0-9]){11,30}")


def _longest_valid(text: str, match: re.Match[str], is_valid: Callable[[str], bool], shortest: int) -> tuple[int, str] | None:
    """The end and compact value of the longest prefix of ``match`` (at least ``shortest`` letters and digits long)
    that is valid and not followed by a letter or digit (a cut through a longer number is no finding)."""
    candidate = match.group()
    ends = [i + 1 for i, ch in enumerate(candidate) if ch.isalnum()]
    for count in range(len(ends), shortest - 1, -1):
        end = match.start() + ends[count - 1]
        compact = "".join(ch for ch in candidate[: ends[count - 1]] if ch.isalnum())
        if not text[end : end + 1].isalnum() and is_valid(compact):
            return end, compact
    return None


def find_ibans(text: str, regions: Sequence[str] = ()) -> Iterator[Finding]:
    for match in _IBAN.finditer(text):
        found = _longest_valid(text, match, lambda compact: iban.is_valid(compact.upper()), 15)
        if found:
            yield Finding("iban", match.start(), found[0], found[1].upper())


# -- payment cards --------------------------------------------------------------------------------------------------
#: Issuer identification number ranges of the major schemes, as (first prefix, last prefix, lengths). Visa's
#: 13-digit numbers are retired and left out: EAN-13 product codes starting with 4 (Germany) would pass one in ten.
CARD_RANGES: tuple[tuple[int, int, frozenset[int]], ...] = (
    (4, 4, frozenset({16, 19})),  # Visa
    (51, 55, frozenset({16})),  # Mastercard
    (2221, 2720, frozenset({16})),  # Mastercard (2-series)
    (34, 34, frozenset({15})),  # American Express
    (37, 37, frozenset({15})),  # American Express
    (6011, 6011, frozenset(range(16, 20))),  # Discover
    (644, 649, frozenset(range(16, 20))),  # Discover
    (65, 65, frozenset(range(16, 20))),  # Discover
    (3528, 3589, frozenset(range(16, 20))),  # JCB
    (36, 36, frozenset(range(14, 20))),  # Diners Club International
    (300, 305, frozenset(range(16, 20))),  # Diners Club International
    (38, 39, frozenset(range(16, 20))),  # Diners Club International
    (62, 62, frozenset(range(16, 20))),  # UnionPay
    (5018, 5018, frozenset(range(13, 20))),  # Maestro
    (5020, 5020, frozenset(range(13, 20))),  # Maestro
    (5038, 5038, frozenset(range(13, 20))),  # Maestro
    (5893, 5893, frozenset(range(13, 20))),  # Maestro
    (6304, 6304, frozenset(range(13, 20))),  # Maestro
    (6759, 6759, frozenset(range(13, 20))),  # Maestro
    (6761, 6763, frozenset(range(13, 20))),  # Maestro
)
_CARD = re.compile(r"(?<![\d.,-])\d(?:[ .-]?\d){12,18}")
_GROUP_START = re.compile(r"(?<=[ .-])\d")


def is_card_number(digits: str) -> bool:
    """A payment card number: an issuer range of a scheme, that scheme's length, and the Luhn check."""
    in_range = any(low <= int(digits[: len(str(low))]) <= high and len(digits) in lengths for low, high, lengths in CARD_RANGES)
    return in_range and luhn.is_valid(digits)


def find_card_numbers(text: str, regions: Sequence[str] = ()) -> Iterator[Finding]:
    for match in _CARD.finditer(text):
        # a number written just before the card joins its candidate ("aged 20 4111 1111 ..."): start at each group too
        for start in (match.start(), *(group.start() for group in _GROUP_START.finditer(text, match.start(), match.end()))):
            candidate = _CARD.match(text, start, match.end())
            found = _longest_valid(text, candidate, is_card_number, 13) if candidate else None
            if found:
                yield Finding("card", start, found[0], found[1])
                break


#: One detector per type: a function of a text and the phone regions that yields what it finds.
DETECTORS: dict[str, Callable[[str, Sequence[str]], Iterator[Finding]]] = {
    "email": find_emails,
    "iban": find_ibans,
    "card": find_card_numbers,
    "ip": find_ip_addresses,
    "phone": find_phones,
}


# -- spellings ------------------------------------------------------------------------------------------------------
@functools.cache
def _format_characters() -> re.Pattern[str]:
    """Format characters (Unicode category Cf: zero-width space and joiners, soft hyphen, bidi marks, BOM): invisible,
    they split a value for a pattern and not for a reader. Listed once per process (0.2 s), when first needed."""
    ranges: list[list[int]] = []
    for code in range(0x110000):
        if unicodedata.category(chr(code)) == "Cf":
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return re.compile("[" + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges) + "]")  # ranges: fast


def detection_text(text: str) -> tuple[str, list[int] | None]:
    """``text`` as the detectors read it, NFKC-normalised (full-width digits and ``＠``, ligatures) without format
    characters, and where each of its characters came from in ``text`` (None: the same text)."""
    if text.isascii() or (unicodedata.is_normalized("NFKC", text) and not _format_characters().search(text)):
        return text, None
    format_character = _format_characters().match
    out: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if format_character(char):
            continue
        normal = unicodedata.normalize("NFKC", char) if not char.isascii() else char
        out.append(normal)
        origin.extend([index] * len(normal))
    return "".join(out), origin


@dataclass(frozen=True)
class PersonalDataDetector:
    """The detectors of ``types`` (a subset of :data:`PERSONAL_DATA_TYPES`), with the regions of phone numbers."""

    types: tuple[str, ...] = PERSONAL_DATA_TYPES
    regions: tuple[str, ...] = ()

    def find(self, text: str) -> list[Finding]:
        """What ``text`` holds, in text order, without overlaps (the earlier type of :data:`PERSONAL_DATA_TYPES` wins),
        read in its :func:`detection_text` spelling: a value is found however it is written (full-width, with a
        zero-width space or soft hyphen inside), its span the characters it covers in ``text``."""
        read, origin = detection_text(text)
        kept: list[Finding] = []
        for kind in PERSONAL_DATA_TYPES:
            if kind in self.types:
                for finding in DETECTORS[kind](read, self.regions):
                    if all(finding.end <= other.start or finding.start >= other.end for other in kept):
                        kept.append(finding)
        if origin is not None:  # spans back in ``text``: from the first character's origin to past the last one's
            kept = [Finding(f.kind, origin[f.start], origin[f.end - 1] + 1, f.value) for f in kept]
        return sorted(kept, key=lambda finding: finding.start)


def placeholder(kind: str, number: int) -> str:
    return f"[{kind.upper()}_{number}]"


def redact(texts: Sequence[str], detector: PersonalDataDetector) -> tuple[list[str], dict[str, int]]:
    """``texts`` (the sides of one pair, one sentence, or the paragraphs of a document) with every finding replaced by
    ``[TYPE_n]``, n counted per type over the group in order of appearance, the same value getting the same n on every
    side; and the types found, each with how many distinct values of it were replaced."""
    numbers: dict[tuple[str, str], int] = {}
    per_kind: dict[str, int] = {}
    redacted = []
    for text in texts:
        pieces, last = [], 0
        for finding in detector.find(text):
            key = (finding.kind, finding.value)
            if key not in numbers:
                per_kind[finding.kind] = numbers[key] = per_kind.get(finding.kind, 0) + 1
            pieces.extend([text[last : finding.start], placeholder(finding.kind, numbers[key])])
            last = finding.end
        redacted.append("".join(pieces) + text[last:])
    return redacted, per_kind
