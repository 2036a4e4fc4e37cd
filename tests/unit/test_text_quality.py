"""Text quality in the MaCoCu scheme (bitextflow.extract.text_quality): running text is kept, menus, keyword lists
and number tables are not, another language is WLN, documents weigh their paragraphs; on the MaCoCu
corpus-evaluation annotations (when present beside the repository) the shipped weights keep their figure."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from bitextflow.extract.text_quality import (
    KEEP_LABELS,
    QUALITY_LABELS,
    TERMS,
    WEIGHTS,
    TextQuality,
    document_quality,
    expected_language,
    paragraph_quality,
    terms,
)

GOLD = Path(__file__).parents[2].parent / "shared" / "eval" / "macocu_text_quality"
GOLD_LANGUAGES = ("bg", "hr", "is", "mk", "mt")
# Measured: 0.721 (the shipped weights on all five languages, annotator 1; leave-one-language-out: 0.689).
GOLD_FLOOR = 0.70

RUNNING = {
    "en": "The committee met on Tuesday to discuss the new budget. After a long debate, the members agreed to fund the "
    "public library for another year.",
    "es": "El ayuntamiento aprobó ayer el nuevo presupuesto. Tras un largo debate, los concejales acordaron financiar la "
    "biblioteca un año más.",
    "bg": "Комисията обсъди новия бюджет във вторник. След дълъг дебат членовете решиха да финансират библиотеката още "
    "една година.",
    "zh": "委员会星期二开会讨论了新的预算。经过长时间的辩论，成员们同意再为图书馆提供一年的资金。",
    # scripts whose vowel signs are combining marks, which are letters too
    "hi": "समिति ने मंगलवार को नए बजट पर चर्चा की। लंबी बहस के बाद सदस्यों ने पुस्तकालय को एक और साल के लिए धन देने पर सहमति जताई।",
    "ta": "குழு செவ்வாய்க்கிழமை புதிய வரவு செலவுத் திட்டம் குறித்து விவாதித்தது. நீண்ட விவாதத்திற்குப் பிறகு, நூலகத்திற்கு "
    "மேலும் ஒரு ஆண்டு நிதி வழங்க உறுப்பினர்கள் ஒப்புக்கொண்டனர்.",
    "th": "คณะกรรมการประชุมเมื่อวันอังคารเพื่อหารือเรื่องงบประมาณใหม่ หลังจากการอภิปรายอันยาวนาน สมาชิกตกลงที่จะให้ทุนแก่ห้องสมุดอีกหนึ่งปี",
}
NOT_RUNNING = [
    "Home | About us | Products | Services | Contact | Login",
    "cheap shoes, buy shoes online, shoes sale, best shoes, shoes discount, running shoes, shoes",
    "2019 12.5 13.1 14.2 15.0 2020 16.3 17.8 18.1 19.4",
    "Price: 12.50 EUR | Weight: 2 kg | Size: 40 x 30 cm | SKU 44821",
]


@pytest.mark.parametrize("language", sorted(RUNNING))
def test_a_paragraph_of_running_text_is_kept(language: str) -> None:
    verdict = paragraph_quality(RUNNING[language], language)
    assert verdict.label in KEEP_LABELS and verdict.score >= 0.5, verdict


@pytest.mark.parametrize("text", NOT_RUNNING)
def test_menus_keyword_lists_and_tables_are_not_running_text(text: str) -> None:
    verdict = paragraph_quality(text, "en")
    assert verdict.label == "NRT" and verdict.score < 0.5, verdict


def test_another_language_than_expected_is_wln_and_never_kept() -> None:
    verdict = paragraph_quality(RUNNING["es"], "en")
    assert verdict.label == "WLN" and verdict.score < 0.5
    # what language identification already said is taken as it is (and spelt as the identifier spells it)
    assert paragraph_quality(RUNNING["en"], "en", detected_language="de").label == "WLN"
    assert paragraph_quality(RUNNING["en"], "eng", detected_language="en").label in KEEP_LABELS
    assert paragraph_quality(RUNNING["es"], "es-ES").label in KEEP_LABELS


def test_a_language_the_identifier_does_not_know_is_judged_on_its_form_alone() -> None:
    northern_sami = (  # the first article of the Universal Declaration of Human Rights
        "Buot olbmot leat riegádan friddjan ja olmmošárvvu ja olmmošvuoigatvuođaid dáfus dássálagaid. Sii leat jierbmalaš "
        "olbmot geain lea oamedovdu ja sii galget leat dego vieljačagat."
    )
    found = terms(northern_sami, "se")
    assert found["other"] == found["unknown"] == found["unsure"] == 0.0
    assert paragraph_quality(northern_sami, "se").label in KEEP_LABELS


MONTENEGRIN = (
    "Komisija je u utorak raspravljala o novom budžetu. Nakon duge rasprave članovi su odlučili da finansiraju biblioteku."
)


@pytest.mark.parametrize("language", ["cnr", "bos", "bs", "sr", "hr", "sh"])
def test_bosnian_croatian_montenegrin_and_serbian_are_judged_as_one_group(language: str) -> None:
    """Montenegrin is Serbian, as in a pair (CLDR's alias), and so is the retired Serbo-Croatian code ``sh``, which
    fastText still answers; an ISO 639-3 code is its ISO 639-1 one; CLD2 naming another language of the group is not
    unsure of the language, and English is another language for every one."""
    found = terms(MONTENEGRIN, language)
    assert found["other"] == found["unknown"] == found["unsure"] == 0.0, found
    assert paragraph_quality(RUNNING["en"], language).label == "WLN"


@pytest.mark.parametrize(
    ("code", "language"), [("sh", "sr"), ("mo", "ro"), ("in", "id"), ("ji", "yi"), ("bh", "bh"), ("hrv", "hr")]
)
def test_a_retired_code_is_read_as_cldr_aliases_it_unless_the_identifier_knows_only_the_code(code: str, language: str) -> None:
    """``bh`` (Bihari) is CLDR's ``bho`` (Bhojpuri), which no identifier names, where CLD2 and fastText answer ``bh``."""
    assert expected_language(code) == language


def test_every_verdict_is_a_label_and_a_score_between_0_and_1() -> None:
    texts = [*RUNNING.values(), *NOT_RUNNING, "", "   ", "a", "ta 'din huwa l-pass ta 'innovazzjoni", "…", "| | |"]
    for text in texts:
        verdict = paragraph_quality(text, "mt")
        assert verdict.label in QUALITY_LABELS and 0.0 <= verdict.score <= 1.0, (text, verdict)
        assert (verdict.label in KEEP_LABELS) == (verdict.score >= 0.5), (text, verdict)
        assert set(terms(text, "mt")) == set(TERMS) and all(0.0 <= v <= 1.0 for v in terms(text, "mt").values())
    assert paragraph_quality("", "en") == TextQuality("NRT", 0.0)
    assert set(WEIGHTS) == set(TERMS) - {"other"}


def test_detached_apostrophes_of_machine_translation_are_not_kept() -> None:
    clean = "Il-kumitat iltaqa' nhar it-Tlieta biex jiddiskuti l-baġit il-ġdid ta' din is-sena."
    translated = "Il-kumitat ta 'l-baġit iltaqa ma 'l-membri ta 'din is-sena biex ta 'jiddiskuti."
    assert terms(clean, "mt")["apostrophe"] == 0.0
    assert paragraph_quality(translated, "mt").score < paragraph_quality(clean, "mt").score
    # "ta 'ħidma ma'" reads like a quoted phrase, but what closes it is a detached "ma'", with either quote mark
    assert terms("Il-programm ta 'ħidma ma' l-membri ġie ppreżentat lill-kumitat.", "mt")["apostrophe"] > 0
    assert terms("Il-programm ta ‘ħidma ma’ l-membri ġie ppreżentat lill-kumitat.", "mt")["apostrophe"] > 0


def test_combining_accents_on_latin_letters_are_not_another_script() -> None:
    yoruba = "Ẹ kú àárọ̀, ṣé dáadáa ni? Mo fẹ́ lọ sí ọjà lónìí láti ra oúnjẹ."  # tones as combining marks, even in NFC
    assert terms(yoruba, "yo")["mix"] == 0.0 and terms(yoruba, "yo")["nonletter"] == 0.0


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("nl", "Kies in het venster ‘Instellingen’ de optie 'Automatisch' en klik daarna op de knop om de wijziging op te slaan."),
        ("hr", "Odaberite karticu 'Mreža' i upišite adresu poslužitelja, a zatim pritisnite gumb 'Spoji' kako biste se povezali."),
        # Latin words in a script without case are names and keys, not a title's capitals
        ("ko", "창을 바꾸려면 Alt 키와 Tab 키를 함께 누르세요. 위원회는 화요일에 새 예산을 논의했고, 긴 토론 끝에 도서관에 일 년 더 "
         "지원하기로 했습니다."),
    ],
    ids=["nl-quotes", "hr-quotes", "ko-latin-keys"],
)  # fmt: skip
def test_quoted_words_and_latin_names_in_another_script_are_running_text(language: str, text: str) -> None:
    found = terms(text, language)
    assert found["apostrophe"] == 0.0 and found["caps"] < 0.25, found
    assert paragraph_quality(text, language).label in KEEP_LABELS


def test_a_middle_dot_or_slash_inside_running_text_separates_nothing() -> None:
    catalan = "La col·lecció del museu és il·lustrada amb pel·lícules i/o fotografies d'època, a 20 km/h."
    greek = "Η επιτροπή συνεδρίασε την Τρίτη· μετά από συζήτηση, τα μέλη ενέκριναν τον προϋπολογισμό."
    assert terms(catalan, "ca")["separators"] == terms(greek, "el")["separators"] == 0.0
    # the same marks between the items of a menu still count
    assert terms("Inici · Notícies · Agenda · Contacte", "ca")["separators"] > 0
    assert terms("Inici / Notícies / Agenda", "ca")["separators"] > 0


def test_a_document_weighs_its_paragraphs_by_length() -> None:
    running, menu = RUNNING["en"], NOT_RUNNING[0]
    good, bad = paragraph_quality(running, "en"), paragraph_quality(menu, "en")
    mostly_running = document_quality([(running, good), (running, good), (menu, bad)])
    assert mostly_running.label in KEEP_LABELS
    assert bad.score < mostly_running.score < good.score
    # a short good paragraph does not lift a long bad document
    long_menu = " | ".join(["Home", "About us", "Products", "Services", "Contact", "Login"] * 6)
    assert document_quality([("Welcome.", good), (long_menu, bad)]).label not in KEEP_LABELS
    # paragraphs in another language weighing more than half: the document is WLN
    spanish = paragraph_quality(RUNNING["es"], "en")
    assert document_quality([(RUNNING["es"], spanish), (RUNNING["es"], spanish), (running, good)]).label == "WLN"
    assert document_quality([]) == TextQuality("NRT", 0.0)
    alone = document_quality([(running, good)])
    assert alone.label == good.label and alone.score == pytest.approx(good.score)


def _binary_macro_f1(gold: list[bool], predicted: list[bool]) -> float:
    scores = []
    for positive in (True, False):
        tp = sum(g == p == positive for g, p in zip(gold, predicted, strict=True))
        wrong = sum(g != p for g, p in zip(gold, predicted, strict=True))
        scores.append(2 * tp / (2 * tp + wrong) if tp else 0.0)
    return sum(scores) / 2


def test_the_shipped_weights_keep_their_figure_on_the_macocu_annotations() -> None:
    if not all((GOLD / f"annotator1.{lang}.tsv").exists() for lang in GOLD_LANGUAGES):
        pytest.skip(f"the MaCoCu corpus-evaluation annotations are not at {GOLD} (shared/eval sits beside the repository)")
    figures = {}
    for lang in GOLD_LANGUAGES:
        with (GOLD / f"annotator1.{lang}.tsv").open(encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
        gold = [row["Evaluation"].strip() in KEEP_LABELS for row in rows]
        predicted = [paragraph_quality(row["Source"], lang).label in KEEP_LABELS for row in rows]
        figures[lang] = _binary_macro_f1(gold, predicted)
    macro = sum(figures.values()) / len(figures)
    assert macro >= GOLD_FLOOR, figures
