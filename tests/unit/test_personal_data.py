"""Personal data detection (tables of positives and hard negatives in English, Spanish, French and German), the
typed placeholders, the takedown list, and the guards' counts as a release shows them."""

from __future__ import annotations

import pandas as pd
import pytest

from bitextflow.config import load_pair_config
from bitextflow.counts import StageCounts
from bitextflow.errors import ConfigError
from bitextflow.redaction import PersonalDataDetector, Screen, TakedownEntry, TakedownList, screen_for
from bitextflow.redaction.personal_data import is_card_number, phone_regions, redact
from bitextflow.release.guards import guard_counts, guards_section
from bitextflow.text.comparison import pair_hash
from tests.support import ROOT, cpu_clock

REGIONS = phone_regions(("en", "es", "fr", "de"))
DETECTOR = PersonalDataDetector(regions=REGIONS)

# (text, type, value as written)
POSITIVES = [
    ("Write to jane.doe@example.com for details.", "email", "jane.doe@example.com"),
    ("Escriba a soporte@empresa.es antes del lunes.", "email", "soporte@empresa.es"),
    ("Écrivez à françois.dupont@exemple.fr pour nous joindre.", "email", "françois.dupont@exemple.fr"),
    ("Schreiben Sie an info@müller-gmbh.de oder rufen Sie an.", "email", "info@müller-gmbh.de"),
    ("Call us on (415) 555-2671 any weekday.", "phone", "(415) 555-2671"),
    ("Llame al 912 34 56 78 de nueve a cinco.", "phone", "912 34 56 78"),
    ("Appelez le 01 42 68 53 00 pour un rendez-vous.", "phone", "01 42 68 53 00"),
    ("Rufen Sie 030 12345678 an, wenn Sie Fragen haben.", "phone", "030 12345678"),
    ("Our London desk: +44 20 7946 0958.", "phone", "+44 20 7946 0958"),
    ("El servidor 192.168.10.25 no responde.", "ip", "192.168.10.25"),
    ("Le serveur 2001:db8:85a3::8a2e:370:7334 est en panne.", "ip", "2001:db8:85a3::8a2e:370:7334"),
    ("Der Zugriff kam von 81.169.145.105 gestern.", "ip", "81.169.145.105"),
    ("Transfer to GB82 WEST 1234 5698 7654 32 today.", "iban", "GB82 WEST 1234 5698 7654 32"),
    ("IBAN: ES91 2100 0418 4502 0005 1332 (BIC CAIXESBBXXX).", "iban", "ES91 2100 0418 4502 0005 1332"),
    ("Virement sur FR1420041010050500013M02606 accepté.", "iban", "FR1420041010050500013M02606"),
    ("Überweisung an DE89 3704 0044 0532 0130 00 bitte.", "iban", "DE89 3704 0044 0532 0130 00"),
    ("Pay with card 4111 1111 1111 1111 now.", "card", "4111 1111 1111 1111"),
    ("Pague con la tarjeta 5555-5555-5555-4444.", "card", "5555-5555-5555-4444"),
    ("Carte American Express 378282246310005 refusée.", "card", "378282246310005"),
    ("Kartennummer 6011 1111 1111 1117 gültig.", "card", "6011 1111 1111 1117"),
    ("Sie ist jetzt 20 6011-1111-1111-1117 schuldig.", "card", "6011-1111-1111-1117"),
]

# texts holding nothing personal, each like one of the types
HARD_NEGATIVES = [
    "Version 2.14.3 was released on 2021-03-04.",
    "Upgrade to version 1.2.3.4 before Friday.",
    "La versión 10.0.1 salió el 04/03/2021 a las 12:30:45.",
    "ISBN 978-3-16-148410-0 is the second edition.",
    "El precio es de 1.234.567 euros.",
    "Le prix est de 12 345 678,90 €.",
    "Der Umsatz stieg von 1990 bis 2010 um 12345678 Euro.",
    "Product code 4006381333931 is out of stock.",
    "See icon@2x.png and logo@3x.jpg in the theme.",
    "Card 4111 1111 1111 1112 fails its Luhn check.",
    "IBAN DE89 3704 0044 0532 0130 01 has a wrong check.",
    "The address 999.168.1.1 is not valid.",
    "Meet at 10:30:00 in room 12.",
    "The loopback 127.0.0.1 and ::1 answer locally.",
    "Order number 1234-5678-9012 ships today.",
    "The std::vector type holds 12 items.",
    "Le festival du 13.10.2011 a réuni 12 345 personnes.",
    "El piso cuesta 613.249.396 € según el anuncio.",
    "Von 1994-2020 lebte sie in Berlin.",
    "Die Karte 4951 7242 9509 6829 ist ungültig.",
]


@pytest.mark.parametrize(("text", "kind", "written"), POSITIVES, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(POSITIVES)])
def test_each_type_is_found_where_it_is_written(text: str, kind: str, written: str) -> None:
    findings = DETECTOR.find(text)
    assert [(f.kind, text[f.start : f.end]) for f in findings] == [(kind, written)]


@pytest.mark.parametrize("text", HARD_NEGATIVES)
def test_look_alikes_are_not_personal_data(text: str) -> None:
    assert DETECTOR.find(text) == []


def test_the_same_value_gets_the_same_placeholder_on_both_sides() -> None:
    pair = (
        "Mail Ana.Lopez@Example.com or bob@example.org, or call +34 912 345 678.",
        "Escriba a bob@example.org o a ana.lopez@example.com, o llame al 912 34 56 78.",
    )
    (english, spanish), kinds = redact(pair, DETECTOR)
    assert english == "Mail [EMAIL_1] or [EMAIL_2], or call [PHONE_1]."
    assert spanish == "Escriba a [EMAIL_2] o a [EMAIL_1], o llame al [PHONE_1]."
    assert kinds == {"email": 2, "phone": 1}


def test_an_iban_is_not_also_a_card_or_a_phone_number() -> None:
    findings = DETECTOR.find("Pay to NL91 ABNA 0417 1643 00 or call +31 20 123 4567.")
    assert [f.kind for f in findings] == ["iban", "phone"]


def test_card_ranges_and_lengths() -> None:
    assert is_card_number("4111111111111111") and is_card_number("378282246310005")
    assert not is_card_number("4222222222222")  # a valid 13-digit Visa: retired, and EAN-13 codes look like it
    assert not is_card_number("9111111111111111")  # no scheme issues 9


def test_unknown_phone_regions_are_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match="unknown region.*XX"):
        phone_regions(("en",), ["XX"])
    assert phone_regions(("en", "es"), ["GB"]) == ("US", "ES", "GB")


def pairs_frame(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["url_a", "url_b", "text_a", "text_b"])
    return frame.assign(pair_hash=[pair_hash(a, b) for a, b in zip(frame.text_a, frame.text_b, strict=True)], other=1)


TAKEDOWNS = TakedownList(
    [
        TakedownEntry(url="https://Example.com:443/en/a.html#x", who="owner", when="2026-11-30", why="copyright"),
        TakedownEntry(prefix="http://example.com/es/private/", who="owner", when="2026-11-30", why="privacy"),
        TakedownEntry(host="blocked.example", who="ISP", when="2026-11-30", why="legal"),
        TakedownEntry(text="Remove THIS sentence, please!", who="author", when="2026-12-01", why="privacy"),
    ]
)


def test_takedowns_match_pages_prefixes_hosts_and_normalised_texts() -> None:
    frame = pairs_frame(
        [
            ("http://example.com/en/a.html", "http://example.com/es/a.html", "Listed page.", "Página listada."),
            ("http://example.com/en/p.html", "http://example.com/es/private/p.html", "Under a prefix.", "Bajo un prefijo."),
            ("http://www.blocked.example/en", "http://www.blocked.example/es", "Listed host.", "Servidor listado."),
            ("http://example.com/en/b.html", "http://example.com/es/b.html", "remove this sentence please", "Quite esta frase."),
            ("http://example.com/en/c.html", "http://notblocked.example/es", "Kept.", "Conservada."),
        ]
    )
    counts = StageCounts("gate")
    kept = Screen(TAKEDOWNS).sentence_pairs(frame, counts)
    assert kept["text_a"].tolist() == ["Kept."]
    assert dict(counts.dropped) == {"takedown_url": 1, "takedown_prefix": 1, "takedown_host": 1, "takedown_text": 1}


def test_screened_pairs_get_placeholders_a_new_hash_and_counts_per_type() -> None:
    frame = pairs_frame(
        [
            ("u1", "v1", "Mail a@example.com today.", "Escriba a a@example.com hoy."),
            ("u2", "v2", "Nothing personal here.", "Nada personal aquí."),
            ("u3", "v3", "Card 4111 1111 1111 1111 from 203.0.113.9.", "Tarjeta 4111 1111 1111 1111 desde 203.0.113.9."),
        ]
    )
    counts = StageCounts("gate")
    kept = Screen(detector=DETECTOR).sentence_pairs(frame, counts)
    assert kept["text_b"].tolist() == ["Escriba a [EMAIL_1] hoy.", "Nada personal aquí.", "Tarjeta [CARD_1] desde [IP_1]."]
    assert kept.loc[0, "pair_hash"] == pair_hash("Mail [EMAIL_1] today.", "Escriba a [EMAIL_1] hoy.")
    assert kept.loc[1, "pair_hash"] == frame.loc[1, "pair_hash"] and kept["other"].tolist() == [1, 1, 1]
    assert dict(counts.repaired) == {"personal_data_email": 1, "personal_data_card": 1, "personal_data_ip": 1}

    dropping = StageCounts("gate")
    left = Screen(detector=DETECTOR, action="drop").sentence_pairs(frame, dropping)
    assert left["text_a"].tolist() == ["Nothing personal here."]
    assert dict(dropping.dropped) == {"personal_data_email": 1, "personal_data_card": 1}  # the first type a pair held


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"url": "http://a/", "host": "a", "who": "x", "when": "2026-01-01", "why": "y"}', "exactly one of"),
        ('{"url": "http://a/", "when": "2026-01-01", "why": "y"}', "who"),
        ('{"text": "...", "who": "x", "when": "2026-01-01", "why": "y"}', "no letter or digit"),
        ('{"host": "a", "who": "x", "when": "yesterday", "why": "y"}', "when"),
        ("not json", "not JSON"),
    ],
)
def test_a_bad_takedown_line_is_a_one_line_error_naming_it(line: str, problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        TakedownList.parse(
            f'{{"host": "ok.example", "who": "x", "when": "2026-01-01", "why": "y"}}\n\n{line}\n', "s3://b/takedowns/list.jsonl"
        )
    message = str(error.value)
    assert message.startswith("s3://b/takedowns/list.jsonl:3: ") and problem in message and "\n" not in message


def test_the_list_round_trips_and_its_digest_ignores_derived_texts() -> None:
    again = TakedownList.parse(TAKEDOWNS.to_jsonl(), "list")
    assert again.to_jsonl() == TAKEDOWNS.to_jsonl() and again.sha256 == TAKEDOWNS.sha256
    covering = TAKEDOWNS.covering_texts([("A sentence of the listed page.", TAKEDOWNS.entries[0])])
    assert covering.sha256 == TAKEDOWNS.sha256
    assert covering.match([], ["a sentence of the listed page"]) is TAKEDOWNS.entries[0]
    assert TAKEDOWNS.reasons_by_why() == {"copyright": 1, "legal": 1, "privacy": 2}


def test_the_datasheet_lists_every_guard_with_its_counts() -> None:
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    gate = StageCounts("gate", 10, 6)
    gate.drop("takedown_host", 3)
    gate.drop("personal_data_email", 1)
    gate.repair("personal_data_phone", 2)
    crawl = StageCounts("crawl", 5, 4)
    crawl.drop("optout_robots", 1)
    stats = {"stage_counts": [crawl.to_dict(), gate.to_dict()]}
    stats["guards"] = guard_counts(stats["stage_counts"])
    assert stats["guards"]["opt_outs"]["optout_tdmrep"] == {"total": 0, "by_stage": {}}
    text = "\n".join(guards_section(stats, config))
    assert (
        "| opt-out | `optout_robots`: robots.txt disallows one of the honoured agents (AI-training agents included) | 1 | crawl 1 |"
        in text
    )
    assert "| opt-out | `machine_translated`: the page's markup says it was machine translated | 0 | - |" in text
    assert "| takedown | `takedown_host`: its page is on a listed host | 3 | gate 3 |" in text
    assert "| phone | 2 | gate 2 | 0 | - |" in text and "| email | 0 | - | 1 | gate 1 |" in text
    assert "national formats of US, ES" in text and "Person names are not looked for" in text


def test_a_pair_with_no_personal_data_types_looks_for_nothing() -> None:
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides({"personal_data.types": []})
    assert screen_for(config, TakedownList()).detector is None
    with pytest.raises(ConfigError, match="only the pair's YAML"):
        config.with_run_overrides({"personal_data.action": "replace"})


def test_a_long_token_before_an_at_sign_is_read_in_linear_time() -> None:
    # the email pattern tried every start inside the token, each time back to its "@": 80K characters took 9.4 s
    sentence = "one two three four five six seven eight " + "x" * 80_000 + "@ nine"
    with cpu_clock() as seconds:
        assert DETECTOR.find(sentence) == []
        assert [f.value for f in DETECTOR.find("y" * 50_000 + " ana@example.com")] == ["ana@example.com"]
    assert seconds() < 2, f"{seconds():.1f} s of CPU"


# (text, type, value as written, value found): the spellings people and pages use besides the print formats
VARIANTS = [
    ("Transfer to gb82 west 1234 5698 7654 32 today.", "iban", "gb82 west 1234 5698 7654 32", "GB82WEST12345698765432"),
    ("Transfer to Gb82West12345698765432 today.", "iban", "Gb82West12345698765432", "GB82WEST12345698765432"),
    ("IBAN DE89-3704-0044-0532-0130-00 bitte.", "iban", "DE89-3704-0044-0532-0130-00", "DE89370400440532013000"),
    ("IBAN DE89.3704.0044.0532.0130.00 bitte.", "iban", "DE89.3704.0044.0532.0130.00", "DE89370400440532013000"),
    ("Pay with card 4111.1111.1111.1111 now.", "card", "4111.1111.1111.1111", "4111111111111111"),
    ("Pay with card ４１１１ １１１１ １１１１ １１１１ now.", "card", "４１１１ １１１１ １１１１ １１１１", "4111111111111111"),
    ("Write to jane\u200b.doe@example.com today.", "email", "jane\u200b.doe@example.com", "jane.doe@example.com"),
    ("Write to jane.do\u00ade@example.com today.", "email", "jane.do\u00ade@example.com", "jane.doe@example.com"),
    ("Write to jane.doe＠example.com today.", "email", "jane.doe＠example.com", "jane.doe@example.com"),
    ("Rufen Sie 030·12345678 an.", "phone", "030·12345678", "3012345678"),
    ("Our London desk: +44_20_7946_0958.", "phone", "+44_20_7946_0958", "2079460958"),
]


@pytest.mark.parametrize(("text", "kind", "written", "value"), VARIANTS, ids=[f"{v[1]}-{i}" for i, v in enumerate(VARIANTS)])
def test_variant_spellings_are_found_and_replaced_where_written(text: str, kind: str, written: str, value: str) -> None:
    assert [(f.kind, text[f.start : f.end], f.value) for f in DETECTOR.find(text)] == [(kind, written, value)]
    (redacted,), _kinds = redact([text], DETECTOR)
    assert redacted == text.replace(written, f"[{kind.upper()}_1]")


# (entry, a URL the release holds as the crawler spelt it): entries were only lower-cased, so none of these matched
SPELLINGS = [
    ({"url": "https://example.com/search?b=2&a=1"}, "https://example.com/search?a=1&b=2"),
    ({"url": "https://example.com/caf%c3%a9"}, "https://example.com/caf%C3%A9"),
    ({"url": "https://example.com/café"}, "https://example.com/caf%C3%A9"),
    ({"url": "https://example.com/caf%C3%A9"}, "https://example.com/caf%c3%a9"),
    ({"url": "https://example.com/a?x=1&utm_source=mail"}, "https://example.com/a?x=1"),
    ({"url": "https://example.com"}, "https://example.com/"),
    ({"url": "https://example.com/a/./b"}, "https://example.com/a/b"),
    ({"url": "https://example.com/%7Eana/"}, "https://example.com/~ana/"),
    ({"url": "https://example.com/~ana/"}, "https://example.com/%7Eana/"),
    ({"url": "https://xn--mller-kva.example/a"}, "https://müller.example/a"),
    ({"url": "example.com/a.html"}, "https://example.com/a.html"),
    ({"prefix": "https://xn--mller-kva.example/docs/./"}, "https://müller.example/docs/x"),
    ({"host": "xn--mller-kva.example"}, "https://www.müller.example/a"),
    ({"host": "Müller.Example."}, "https://xn--mller-kva.example/a"),
]


@pytest.mark.parametrize(("entry", "released"), SPELLINGS, ids=[f"{i}" for i in range(len(SPELLINGS))])
def test_a_takedown_matches_the_url_the_release_holds_however_it_is_spelt(entry: dict, released: str) -> None:
    listed = TakedownList([TakedownEntry(**entry, who="owner", when="2026-12-01", why="copyright")])
    assert listed.match_url(released) is not None
    assert listed.match_url("https://example.com/other") is None


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('"host": "https://example.com/"', "write the host alone"),
        ('"host": "example.com/docs"', "write the host alone"),
        ('"url": "ftp://example.com/a"', "no http(s) URL"),
        ('"prefix": "mailto:ana@example.com"', "no http(s) URL"),
    ],
)
def test_a_takedown_entry_that_cannot_match_is_refused_naming_the_fix(entry: str, problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        TakedownList.parse(f'{{{entry}, "who": "x", "when": "2026-01-01", "why": "y"}}\n', "list.jsonl")
    assert problem in str(error.value) and "\n" not in str(error.value)
