"""The text layer: language codes and names from CLDR, CLD2, language-neutral URL keys, URL words, domain
terms, and the rule that the layer imports nothing above it."""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bitextflow.text.languages import (
    UNKNOWN,
    cld2,
    cld2_languages,
    cld2_top,
    from_iso639_3,
    heliport_languages,
    language_markers,
    normalise_language,
    three_letter_code,
)
from bitextflow.text.sentences import split_sentences
from bitextflow.text.urls import resource_key, site_key, url_depth, url_key, url_text, url_tokens
from tests.support import ROOT

TEXT_PACKAGE = ROOT / "include" / "bitextflow" / "text"


# -- languages -------------------------------------------------------------------------------------


def test_markers_are_the_reviewed_table() -> None:
    """The markers come from babel's CLDR data: a babel upgrade that changes them changes every URL key.

    When this fails, compare the table with the previous one and either accept the change (new digest)
    or keep the old tokens with the exception lists of :mod:`bitextflow.text.languages`.
    """
    markers = language_markers()
    digest = hashlib.sha256(json.dumps(sorted(markers.items()), ensure_ascii=False).encode()).hexdigest()
    assert (len(markers), digest) == (543, "314ae4eb91b0260cc82677c6b7c58aac3315f806670d246a52c431024f069c54")


def test_markers_are_single_lower_case_tokens_of_iso_codes() -> None:
    markers = language_markers()
    codes = set(markers.values())
    assert all(len(code) == 2 and markers[code] == code for code in codes)
    assert len(codes) == 184  # every ISO 639-1 language
    for token in markers:
        assert token == token.lower() and token.strip() == token
        assert not any(delimiter in token for delimiter in "/._- ")


@pytest.mark.parametrize(
    ("tag", "code"),
    [
        ("es", "es"),
        ("spa", "es"),
        ("es-ES", "es"),
        ("es_MX", "es"),
        ("Spanish", "es"),  # English name from CLDR
        ("español", "es"),  # native name from CLDR
        ("espanol", "es"),  # and its ASCII spelling
        ("castellano", "es"),  # a spelling CLDR lacks
        ("Deutsch", "de"),
        ("ger", "de"),  # a bibliographic code
        ("maori", "mi"),  # CLDR's English name Māori, folded to ASCII
        ("bengali", "bn"),  # the older English name, kept instead of CLDR's Bangla
        ("bangla", "bn"),
        ("nihongo", "ja"),  # a romanisation
        ("日本語", "ja"),
        ("gàidhlig", "gd"),
        ("tgl", "tl"),  # CLDR would say Filipino
        ("yi", "yi"),  # a code is its own language though Sichuan Yi is also called "yi"
        ("bh", "bh"),  # an ISO 639-1 code CLDR no longer names
        ("bihari", "bh"),
    ],
)
def test_normalise_language(tag: str, code: str) -> None:
    assert normalise_language(tag) == code


@pytest.mark.parametrize(
    "tag",
    ["sh", "fula", "tongan", "gaidhlig", "may", "per", "cat", "fin", "indonesia", "xx-unknown"],
)
def test_tokens_that_name_no_language_stay_as_they_are(tag: str) -> None:
    """Deprecated codes, CLDR names the table does not use, and ISO 639-2 codes that are words are not markers."""
    assert normalise_language(tag) == tag


@pytest.mark.parametrize(
    ("language", "code"),
    [("es", "spa"), ("de-AT", "deu"), ("nl", "nld"), ("French", "fra"), ("cs", "ces"), ("ro", "ron"), ("tl", "tgl")],
)
def test_three_letter_code_is_terminological(language: str, code: str) -> None:
    assert three_letter_code(language) == code


@pytest.mark.parametrize("language", ["ca", "fi", "xx"])
def test_three_letter_code_is_none_where_the_code_is_a_word_or_unknown(language: str) -> None:
    assert three_letter_code(language) is None


@pytest.mark.parametrize(
    ("code", "expected"),
    [("spa", "es"), ("cmn", "zh"), ("pes", "fa"), ("zsm", "ms"), ("ekk", "et"), ("nob", "no"), ("ast", "ast"), ("yue", "yue")],
)
def test_iso639_3_codes_are_spelled_as_the_project_spells_languages(code: str, expected: str) -> None:
    assert from_iso639_3(code) == expected


def test_importing_languages_leaves_babel_until_the_table_is_needed() -> None:
    """Extraction imports the module for CLD2 only; it must not pay for reading the CLDR locales."""
    code = (
        "import sys; import bitextflow.text.languages as l; assert 'babel' not in sys.modules; "
        "l.normalise_language('es'); assert 'babel' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_identifier_answers_a_language_in_one_spelling() -> None:
    assert cld2("זהו משפט ארוך למדי בעברית על התקנת חבילות במערכת ההפעלה של המחשב.")[0] == "he"  # CLD2 says iw
    assert [from_iso639_3(code) for code in ("heb", "nob", "tgl", "pbt")] == ["he", "no", "tl", "ps"]  # heliport's
    assert [normalise_language(tag) for tag in ("iw", "jw", "nb", "fil")] == ["he", "jv", "no", "tl"]


def test_the_identifiers_languages_are_those_they_answer() -> None:
    assert {"en", "he", "jv", "zh"} <= cld2_languages()
    assert not {"ee", "os", "tw", "xx", "iw"} & cld2_languages(), "codes CLD2 has but never answers"
    assert {"ce", "ckb", "io", "bs", "hr", "sr", "he"} <= heliport_languages()
    assert "hbs" not in heliport_languages(), "a cluster is its members"


def test_cld2_gives_language_reliability_and_shares() -> None:
    top, reliable, shares = cld2("This is a perfectly ordinary English sentence about installing packages on a computer.")
    assert (top, reliable) == ("en", True)
    assert shares[0][0] == "en" and 0.9 < shares[0][1] <= 1.0
    assert cld2_top("Esta es una frase completamente normal en español sobre la instalación de paquetes.") == ("es", True)
    assert cld2("") == (UNKNOWN, False, [])


# -- URLs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key", "languages"),
    [
        ("http://www.example.com/en/guide.html", "example.com/guide.html", ["en"]),
        ("http://example.com/docs/ch01.es.html", "example.com/docs/ch01.html", ["es"]),
        ("http://fr.example.com/a?lang=fr&id=3", "example.com/a?id=3", ["fr", "fr"]),
        ("http://example.com/deutsch/index.html.de", "example.com/index.html", ["de", "de"]),
        ("http://example.com/zh-Hant/page", "example.com/page", ["zh_Hant"]),
        ("http://example.com/zh-tw/page", "example.com/page", ["zh_Hant"]),
        ("http://example.com/zh_CN/page", "example.com/page", ["zh"]),
        ("http://example.com/how-to-install/", "example.com/how-to-install", []),
    ],
)
def test_url_key(url: str, key: str, languages: list[str]) -> None:
    assert url_key(url) == (key, languages)


def test_site_depth_and_resource_keys() -> None:
    assert site_key("http://es.www.example.com/x") == "example.com"
    assert site_key("http://example.es/page") == "example.es"
    assert url_depth("http://example.org/a/b/c.html") == 3
    assert url_depth("http://example.org/") == 0
    # one resource: scheme, www, fragment, empty segments and query order do not matter
    assert resource_key("https://www.Example.com/a//b/?z=1&a=2#frag") == resource_key("http://example.com/a/b?a=2&z=1")
    assert resource_key("http://example.com/en/a") != resource_key("http://example.com/es/a")


def test_url_text_and_tokens() -> None:
    url = "https://es.Example.org:8080/Docs/ch01.es.html?lang=es#top"
    assert url_text(url) == "es example org Docs ch01 es html lang es"
    assert url_tokens(url) == frozenset({"es", "example", "org", "docs", "ch01", "html", "lang"})


# -- sentences -------------------------------------------------------------------------------------

# Three Thai sentences, no punctuation: a space ends each of the first two; "Debian" stands inside the third
THAI = "ภาษาไทยไม่มีเครื่องหมายจบประโยค ผู้อ่านแยกประโยคจากช่องว่าง ระบบ Debian เป็นระบบปฏิบัติการที่ฟรี"


def test_thai_is_split_where_a_sentence_ends_and_nothing_is_lost() -> None:
    sentences = split_sentences("th", THAI)
    assert len(sentences) >= 2
    assert "".join(sentences).replace(" ", "") == THAI.replace(" ", "")
    assert not any(sentence.endswith("ระบบ") for sentence in sentences)  # a space around a Latin word ends nothing


@pytest.mark.parametrize(
    ("language", "text", "count"),
    [
        ("ja", "これは最初の文です。これは二番目の文です！本当ですか？", 3),
        ("zh", "这是第一句。这是第二句！真的吗？", 3),
        ("ru", "Это первое предложение. Это второе! А это третье?", 3),
        ("ar", "هذه هي الجملة الأولى. هذه هي الجملة الثانية؟", 2),
        ("hi", "यह पहला वाक्य है। यह दूसरा वाक्य है।", 2),
        ("en", "Run apt update, e.g. as root. Then install it.", 2),
        # a sentence beginning with a number or a Latin name after a full-width stop (GNOME's help, Debian's manuals)
        ("zh", "实际色域以 3D 壳体来表示。3D 形状的投影有时会产生误导。sRGB 是标准的最小公分母。", 3),
        ("ja", "パッケージをビルドします。Debian のポリシーに従います。", 2),
        ("ja", "（詳しくは付録を参照。）Debian はフリーです。", 2),  # the closing bracket stays with its sentence
    ],
)
def test_other_scripts_split_at_their_own_punctuation(language: str, text: str, count: int) -> None:
    assert len(split_sentences(language, text)) == count


# -- layering --------------------------------------------------------------------------------------

_ALLOWED = ("bitextflow.text", "bitextflow.errors", "bitextflow.settings", "bitextflow.counts")


@pytest.mark.parametrize("path", sorted(TEXT_PACKAGE.glob("*.py")), ids=lambda path: path.name)
def test_text_imports_nothing_above_it(path: Path) -> None:
    imported: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "bitextflow":
            imported += [f"bitextflow.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.append(node.module)
        elif isinstance(node, ast.ImportFrom):
            imported.append("bitextflow.text")  # a relative import stays in the package
        elif isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
    ours = [name for name in imported if name == "bitextflow" or name.startswith("bitextflow.")]
    assert all(any(name == allowed or name.startswith(allowed + ".") for allowed in _ALLOWED) for name in ours), ours
