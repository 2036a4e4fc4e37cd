"""Precision and recall of the personal-data detector (:mod:`bitextflow.redaction.personal_data`), and its speed.

The labelled set is built here, reproducibly (``--seed``), from real sentences: the first ``--sentences`` lines of
each language of the Tatoeba sets in ``--data`` (English, Spanish, French, German). Each language's sentences are
split three ways:

- positives: a generated value inserted at a random word boundary, an equal number per type: email addresses
  (ASCII and accented local parts and domains, some with a ``+tag``, some in capitals), phone numbers valid in libphonenumber's metadata (random national
  numbers of US, ES, FR and DE, written in national, international or E.164 format, plus GB numbers in international
  format; half of them regrouped as people write them: groups of two to four digits with spaces, dots or dashes,
  the leading ``+`` kept), IPv4 and IPv6 addresses (global ranges), IBANs of six countries with valid check digits (printed in
  groups of four or compact), card numbers of six schemes with a valid Luhn digit (grouped by spaces, dashes, or not);
- variant spellings: a share (``--variants``, 0.3) of the positives respelt as pages write them: IBANs in lower or mixed
  case or grouped by ``-`` or ``.``, cards grouped by ``.`` or in full-width digits, email addresses with a zero-width
  space or a soft hyphen inside or a full-width ``＠``, phone numbers grouped by ``·`` or ``_`` (IP addresses stay as
  they are); their recall is also given apart (``variant_recall``);
- hard negatives: a look-alike inserted the same way: version numbers, dates and times, valid ISBN-13 and EAN-13
  codes, prices, order numbers, file names with ``@``, IBANs and card numbers with a wrong checksum, invalid IPs;
- the rest untouched (anything found there is a false positive).

Each language is read by the detector the pair config would give it, paired with English (en-es, en-fr, en-de;
English sentences with en-es's). A finding is a true positive when its type is the inserted value's and its span
overlaps the value's; every other finding is a false positive of its type. Speed: sentences per wall second of
``find`` over the whole labelled set (after a warm-up), and over the untouched sentences only (what most of a
corpus costs); ``seconds_per_million_sentences`` for both.

Usage, from the project root::

    .venv/bin/python bench/pii.py [--data TATOEBA_FOLDER] [--sentences 1000] [--seed 0] [--variants 0.3] [--json]

With ``--json`` the last line of output is one JSON object: ``{"types": {TYPE: {"precision", "recall", ...}},
"sentences_per_s": ..., ...}``.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import string
import sys
import time
from collections import Counter
from pathlib import Path

import phonenumbers
from stdnum import ean, iban, isbn, luhn

from bitextflow.redaction.personal_data import PERSONAL_DATA_TYPES, PersonalDataDetector, phone_regions

LANGUAGES = {"en": ("spa", "eng"), "es": ("spa", "spa"), "fr": ("fra", "fra"), "de": ("deu", "deu")}
POSITIVE_SHARE, NEGATIVE_SHARE = 0.4, 0.2

_NAMES = ["ana", "john.smith", "marie-claire", "jürgen.müller", "françois", "l.garcia", "support", "info", "k.weber42"]
_DOMAINS = ["example.com", "correo.es", "exemple.fr", "beispiel.de", "müller-gmbh.de", "uni-example.ac.uk", "mail.example.org"]
_IBAN_FORMATS = {"DE": "n18", "ES": "n20", "GB": "a4n14", "NL": "a4n10", "IT": "a1n10c12", "FR": "n10c11n2"}
_CARD_PREFIXES = [("4", 16), ("51", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16), ("3530", 16), ("62", 16)]


def _bban(rng: random.Random, spec: str) -> str:
    pools = {"n": string.digits, "a": string.ascii_uppercase, "c": string.digits + string.ascii_uppercase}
    out, i = [], 0
    while i < len(spec):
        kind, j = spec[i], i + 1
        while j < len(spec) and spec[j].isdigit():
            j += 1
        out.extend(rng.choice(pools[kind]) for _ in range(int(spec[i + 1 : j])))
        i = j
    return "".join(out)


def _grouped(rng: random.Random, compact: str, separators: str) -> str:
    separator = rng.choice(separators)
    return separator.join(compact[i : i + 4] for i in range(0, len(compact), 4))


def make_iban(rng: random.Random, valid: bool = True) -> str:
    while True:  # national checks (Spain's CCC, France's RIB key, Italy's CIN) accept one random BBAN in some
        country = rng.choice(list(_IBAN_FORMATS))
        bban = _bban(rng, _IBAN_FORMATS[country])
        number = country + iban.calc_check_digits(f"{country}00{bban}") + bban
        if iban.is_valid(number):
            break
    if not valid:
        number = number[:2] + f"{(int(number[2:4]) + 1) % 97 + 2:02d}" + number[4:]
    return _grouped(rng, number, " ") if rng.random() < 0.7 else number


def make_card(rng: random.Random, valid: bool = True) -> str:
    prefix, length = rng.choice(_CARD_PREFIXES)
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    check = luhn.calc_check_digit(body)
    digits = body + (check if valid else str((int(check) + rng.randint(1, 9)) % 10))
    return _grouped(rng, digits, " -") if rng.random() < 0.7 else digits


def make_phone(rng: random.Random, regions: tuple[str, ...]) -> str:
    region = rng.choice([*regions, "GB"])
    example = phonenumbers.example_number_for_type(
        region, rng.choice([phonenumbers.PhoneNumberType.FIXED_LINE, phonenumbers.PhoneNumberType.MOBILE])
    )
    while True:
        national = str(example.national_number)
        digits = national[:3] + "".join(rng.choice(string.digits) for _ in national[3:])
        number = phonenumbers.parse("+" + str(example.country_code) + digits)
        if phonenumbers.is_valid_number(number):
            break
    if rng.random() < 0.5:  # as people write it: the national digits regrouped in twos to fours, with spaces, dots or dashes
        international = region not in regions or rng.random() < 0.5
        national = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
        digits = str(number.national_number) if international else "".join(ch for ch in national if ch.isdigit())
        groups, separator = [], rng.choice([" ", ".", "-"])
        while digits:
            size = rng.randint(2, 4)
            groups.append(digits[:size])
            digits = digits[size:]
        return (f"+{number.country_code} " if international else "") + separator.join(groups)
    formats = [phonenumbers.PhoneNumberFormat.INTERNATIONAL, phonenumbers.PhoneNumberFormat.E164]
    if region in regions:
        formats.append(phonenumbers.PhoneNumberFormat.NATIONAL)
    written = phonenumbers.format_number(number, rng.choice(formats))
    return written


def make_ip(rng: random.Random) -> str:
    if rng.random() < 0.7:
        first = rng.choice([n for n in range(1, 224) if n not in (10, 127, 169, 172, 192, 100)])
        return ".".join(str(n) for n in (first, rng.randint(0, 255), rng.randint(0, 255), rng.randint(1, 254)))
    groups = [f"{rng.randint(0x2001, 0x2A0F):x}", *(f"{rng.randint(0, 0xFFFF):x}" for _ in range(7))]
    return ":".join(groups) if rng.random() < 0.5 else ":".join(groups[:3]) + "::" + groups[-1]


def make_email(rng: random.Random) -> str:
    local = rng.choice(_NAMES) + (f"+{rng.choice(['news', 'shop'])}" if rng.random() < 0.2 else "")
    address = f"{local}@{rng.choice(_DOMAINS)}"
    return address.upper() if rng.random() < 0.1 else address


_INVISIBLE = ["\u200b", "\u00ad"]  # a zero-width space, a soft hyphen
_FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def respelt(rng: random.Random, kind: str, value: str) -> str:
    """``value`` as pages also write it (the module docstring's variant spellings); an IP address as it is."""
    compact = value.replace(" ", "").replace("-", "")
    if kind == "iban":
        spelt = rng.choice([compact.lower(), "".join(rng.choice((ch.lower(), ch)) for ch in compact), compact])
        return _grouped(rng, spelt, "-.") if rng.random() < 0.7 else spelt
    if kind == "card":
        return _grouped(rng, compact, ".") if rng.random() < 0.5 else value.translate(_FULL_WIDTH)
    if kind == "email":
        local, domain = value.split("@", 1)
        if rng.random() < 0.34:
            return f"{local}＠{domain}"
        at = rng.randint(1, len(local) - 1) if len(local) > 1 else 1
        invisible = rng.choice(_INVISIBLE)
        return f"{local[:at]}{invisible}{local[at:]}@{domain}"
    if kind == "phone":
        separator = rng.choice(["·", "_"])
        return "".join(separator if ch in " .-" and prev.isdigit() else ch for prev, ch in zip(" " + value, value, strict=False))
    return value


def look_alike(rng: random.Random) -> str:
    year, month, day = rng.randint(1950, 2030), rng.randint(1, 12), rng.randint(1, 28)
    isbn13 = "978" + "".join(rng.choice(string.digits) for _ in range(9))
    ean13 = rng.choice(["40", "84", "30", "50"]) + "".join(rng.choice(string.digits) for _ in range(10))
    choices = [
        f"version {rng.randint(1, 12)}.{rng.randint(0, 20)}.{rng.randint(0, 40)}",
        f"v{rng.randint(1, 9)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(0, 99)}",
        f"{year}-{month:02d}-{day:02d}",
        f"{day:02d}/{month:02d}/{year}",
        f"{day}.{month}.{year}",
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        isbn.format(isbn13 + ean.calc_check_digit(isbn13)),  # an ISBN-13 is an EAN-13
        ean13 + ean.calc_check_digit(ean13),
        f"{rng.randint(1, 999)}.{rng.randint(0, 999):03d}.{rng.randint(0, 999):03d} €",
        f"${rng.randint(1, 99)},{rng.randint(0, 999):03d},{rng.randint(0, 999):03d}.{rng.randint(0, 99):02d}",
        f"{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}",
        f"icon@{rng.randint(2, 3)}x.png",
        make_iban(rng, valid=False),
        make_card(rng, valid=False),
        f"{rng.randint(256, 999)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}",
        f"{rng.randint(1990, 2010)}-{rng.randint(2011, 2030)}",
    ]
    return rng.choice(choices)


def insert(rng: random.Random, sentence: str, value: str) -> tuple[str, int]:
    """``sentence`` with ``value`` at a random word boundary (before its final punctuation), and where it starts."""
    words = sentence.rstrip(".!?。").split(" ")
    at = rng.randint(1, len(words))
    before = " ".join(words[:at]) + " "
    return before + value + (" " + " ".join(words[at:]) if words[at:] else "") + sentence[len(sentence.rstrip(".!?。")) :], len(
        before
    )


Row = tuple[str, str, str | None, tuple[int, int] | None, bool]


def labelled_set(data: Path, sentences: int, rng: random.Random, variants: float = 0.3) -> list[Row]:
    """(language, text, inserted type or None, its span, whether the value is a variant spelling) for every sentence
    of the set."""
    rows = []
    for language, (pair, suffix) in LANGUAGES.items():
        path = data / f"tatoeba.{pair}-eng.{suffix}"
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:sentences]
        regions = phone_regions(("en", "es" if language == "en" else language))
        positives, negatives = int(len(lines) * POSITIVE_SHARE), int(len(lines) * NEGATIVE_SHARE)
        makers = {
            "email": make_email,
            "phone": functools.partial(make_phone, regions=regions),
            "ip": make_ip,
            "iban": make_iban,
            "card": make_card,
        }
        for index, line in enumerate(lines):
            if index < positives:
                kind = PERSONAL_DATA_TYPES[index % len(PERSONAL_DATA_TYPES)]
                value = makers[kind](rng)
                variant = kind != "ip" and rng.random() < variants
                value = respelt(rng, kind, value) if variant else value
                text, start = insert(rng, line, value)
                rows.append((language, text, kind, (start, start + len(value)), variant))
            elif index < positives + negatives:
                rows.append((language, insert(rng, line, look_alike(rng))[0], None, None, False))
            else:
                rows.append((language, line, None, None, False))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "tatoeba")
    parser.add_argument("--sentences", type=int, default=1000, help="sentences per language (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", type=float, default=0.3, help="share of positives in a variant spelling (default 0.3)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"bench/pii.py: {args.data} is not a folder; pass --data with the Tatoeba files", file=sys.stderr)
        return 2
    rows = labelled_set(args.data, args.sentences, random.Random(args.seed), args.variants)
    detectors = {lang: PersonalDataDetector(regions=phone_regions(("en", "es" if lang == "en" else lang))) for lang in LANGUAGES}
    for language, text, *_ in rows[:50]:  # warm-up: libphonenumber loads its region metadata on first use
        detectors[language].find(text)

    tp, fp, inserted = Counter(), Counter(), Counter()
    variant_tp, variant_inserted = Counter(), Counter()
    misses: list[str] = []
    false_alarms: list[str] = []
    started = time.perf_counter()
    found = [detectors[language].find(text) for language, text, *_ in rows]
    elapsed = time.perf_counter() - started
    for (_, text, kind, span, variant), findings in zip(rows, found, strict=True):
        if kind is not None:
            inserted[kind] += 1
            variant_inserted[kind] += variant
        hit = False
        for finding in findings:
            if kind == finding.kind and span is not None and finding.start < span[1] and finding.end > span[0] and not hit:
                tp[finding.kind] += 1
                variant_tp[finding.kind] += variant
                hit = True
            else:
                fp[finding.kind] += 1
                false_alarms.append(f"{finding.kind}: {text[finding.start : finding.end]!r} in {text!r}")
        if kind is not None and not hit:
            misses.append(f"{kind}: {text[span[0] : span[1]]!r} in {text!r}")
    untouched = [
        (language, text) for language, text, kind, *_ in rows if kind is None and not any(c.isdigit() or c == "@" for c in text)
    ]
    started = time.perf_counter()
    for language, text in untouched:
        detectors[language].find(text)
    clean_elapsed = time.perf_counter() - started

    types = {
        kind: {
            "precision": round(tp[kind] / (tp[kind] + fp[kind]), 4) if tp[kind] + fp[kind] else None,
            "recall": round(tp[kind] / inserted[kind], 4) if inserted[kind] else None,
            "inserted": inserted[kind],
            "false_positives": fp[kind],
            "variant_recall": round(variant_tp[kind] / variant_inserted[kind], 4) if variant_inserted[kind] else None,
            "variants_inserted": variant_inserted[kind],
        }
        for kind in PERSONAL_DATA_TYPES
    }
    speed, clean_speed = len(rows) / elapsed, len(untouched) / clean_elapsed
    result = {
        "types": types,
        "sentences": len(rows),
        "sentences_per_s": round(speed, 1),
        "seconds_per_million_sentences": round(1e6 / speed, 1),
        "plain_sentences": len(untouched),
        "plain_sentences_per_s": round(clean_speed, 1),
        "plain_seconds_per_million_sentences": round(1e6 / clean_speed, 1),
    }
    print(f"labelled set: {len(rows)} sentences ({sum(inserted.values())} with a value, from {args.data})")
    print(f"{'type':<6} {'precision':>9} {'recall':>7} {'inserted':>8} {'false+':>6} {'variant recall':>14} {'variants':>8}")
    for kind, f in types.items():
        print(f"{kind:<6} {f['precision']!s:>9} {f['recall']!s:>7} {f['inserted']:>8} {f['false_positives']:>6} "
              f"{f['variant_recall']!s:>14} {f['variants_inserted']:>8}")  # fmt: skip
    print(f"speed: {speed:,.0f} sentences/s on the set ({1e6 / speed:,.0f} s per million), "
          f"{clean_speed:,.0f}/s on sentences without digits or @ ({1e6 / clean_speed:,.0f} s per million)")  # fmt: skip
    for label, lines in (("missed", misses), ("false positive", false_alarms)):
        for line in lines[:10]:
            print(f"  {label}: {line}")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
