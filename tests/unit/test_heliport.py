"""heliport as the first language identifier: the real command line in its own environment, and the guards around the
child process (a stand-in script plays a heliport that hangs or dies, which the real one cannot be made to do)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.lid import detect_language
from bitextflow.errors import StageError
from bitextflow.extract import DocumentBuilder, heliport
from bitextflow.extract.heliport import Heliport
from bitextflow.extract.language import first_opinion, foreign_letters, identify
from bitextflow.settings import heliport_executable
from tests.support.texts import page_response

REAL = heliport_executable()
# Ido, which heliport knows and CLD2 does not: CLD2 calls these lines Esperanto or Interlingue
IDO = (
    "Ido esas linguo internaciona kreita en la yaro 1907 per grupo de linguisti.",
    "Ol esas plu simpla kam Esperanto, e sua gramatiko esas tote regulala.",
    "Multa homi lernas ol por skribar letri a amiki qui vivas en altra landi.",
)
needs_heliport = pytest.mark.skipif(
    not REAL.is_file(), reason=f"no heliport at {REAL}: `bitextflow-local prepare include/pairs/en-es.yaml` builds it"
)


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A script in heliport's place; the process-wide identifier is forgotten before and after."""
    script = tmp_path / "heliport"
    monkeypatch.setenv("BITEXTFLOW_HELIPORT", str(script))
    first_opinion.cache_clear()
    yield script
    first_opinion.cache_clear()


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@needs_heliport
def test_heliport_answers_first_in_the_projects_spelling() -> None:
    first = first_opinion("heliport")
    assert identify("Esto es una frase en español bastante normal.", frozenset({"en", "es", "pt"}), first) == ("es", True)
    # ISO 639-3 answers come in the project's spelling, as CLD2's and the pair configs' do (heb and CLD2's iw: he)
    assert identify("זהו משפט בעברית על מערכת ההפעלה", frozenset({"he", "en"}), first) == ("he", True)
    # hbs (Bosnian, Croatian, Serbian) narrows the set to its members; CLD2 or fastText chooses among them
    language, _sure = identify("Dobar dan, kako ste danas? Ovo je rečenica.", frozenset({"hr", "sr", "bs", "sl", "en"}), first)
    assert language in {"hr", "sr", "bs"}
    assert first.identify("   ") == "un"


# Paragraphs of GNOME's help in Croatian and in Serbian written in Latin script. heliport names them by its cluster
# (hbs); CLD2 cannot name them or calls them Slovak; lid.176 spreads them over hr, sr, bs and sh. 7.6% of 2,086
# Croatian and 9.0% of 1,468 Serbian Latin paragraphs of the guide were nobody's, or Slovak, when only the pair's
# member of the cluster counted.
@needs_heliport
@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("hr", "Kliknite na Pristupačnost za otvaranje panela."),
        ("sr_Latn", "Lične datoteke (dokumenta, muzika, fotografije i video zapisi)"),
    ],
)
def test_heliports_cluster_is_the_one_member_the_set_has(language: str, text: str) -> None:
    assert identify(text, frozenset({"en", language}), first_opinion("heliport")) == (language, True)


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("hr", "Kliknite na Pristupačnost za otvaranje panela."),  # CLD2: Slovak; hr 0.30, bs 0.16, sr 0.12, sh 0.09
        ("sr_Latn", "Podesite Zastoj da izmenite koliko dugo morate da držite mirnim pokazivač miša pre klika."),
        ("sr_Latn", "Otvorite pregled Aktivnosti i počnite da kucate Nalozi na mreži."),  # sl 0.35, the cluster 0.54
    ],
)
def test_fasttexts_shares_of_a_cluster_count_for_the_sets_member(language: str, text: str) -> None:
    assert identify(text, frozenset({"en", language})) == (language, False)


@pytest.mark.parametrize(
    ("language", "text", "foreign"),
    [
        ("en", "不要建立 “/etc/apt/preferences” 。", True),  # Han letters in an English text
        ("en", "The character 中 means middle", False),  # one quoted letter is not enough
        ("zh", "对于使用 stable 套件的 Debian 系统而言", False),  # Latin never counts
        ("zh", "パッケージ管理システム", True),  # kana: Japanese, not Chinese
        ("ja", "パッケージ管理システム apt", False),
        ("zh", "ＡＢＣ中文", False),  # full-width Latin is Latin
        ("bn", "আমি বাংলায় গান গাই", False),  # CLDR calls the script Bangla, Unicode Bengali
        ("en", "Это первое предложение apt-get", True),
    ],
)
def test_an_answer_must_fit_the_scripts_of_the_texts_letters(language: str, text: str, foreign: bool) -> None:
    assert foreign_letters(language, text) is foreign


@needs_heliport
def test_the_languages_heliport_is_known_for_are_those_of_its_installed_model() -> None:
    from bitextflow.text.languages import HELIPORT_CODES

    thresholds = next(REAL.resolve().parents[1].glob("lib/python*/site-packages/heliport/confidenceThresholds"))
    installed = {line.split()[0] for line in thresholds.read_text(encoding="utf-8").splitlines() if line.strip()}
    assert installed == HELIPORT_CODES, "heliport's model changed: update HELIPORT_CODES in bitextflow.text.languages"


@needs_heliport
def test_a_chinese_sentence_quoting_a_file_name_stays_chinese() -> None:
    # heliport alone is sure it is English
    text = "不要建立 “/etc/apt/preferences” 。"
    assert first_opinion("heliport").identify(text) == "en"
    assert identify(text, frozenset({"zh", "en"}), first_opinion("heliport"))[0] == "zh"


@pytest.mark.parametrize("identifier", ["heliport", "cld2"])
def test_a_japanese_sentence_around_a_url_stays_japanese(identifier: str) -> None:
    # the Debian FAQ's; CLD2 is sure it is English (its Latin letters are most of the text), heliport unsure
    text = "debian-policy パッケージまたは https://www.debian.org/doc/devel-manuals#policy から得られます。"
    first = first_opinion(identifier) if identifier == "heliport" and REAL.is_file() else None
    assert identify(text, frozenset({"en", "ja"}), first)[0] == "ja"
    # a few letters of another script in an English sentence leave it English
    assert identify("Use the apt-get command to install 软件包 and more.", frozenset({"en", "zh"}), first)[0] == "en"


def test_a_sentence_in_another_script_than_the_pairs_is_not_the_pairs_language() -> None:
    # a Cyrillic sentence on a page of Serbian in Latin script, or of Croatian (written in Latin only)
    cyrillic = "Ово је реченица на српском језику и још мало текста."
    assert identify(cyrillic, frozenset({"en", "sr_Latn"}))[0] == "sr"
    assert identify(cyrillic, frozenset({"en", "hr"}))[0] == "sr"


def test_an_answer_may_be_in_any_script_its_language_is_written_in() -> None:
    # Uzbek is written in Latin (its usual script), Cyrillic and Arabic; Serbian in Latin script in Latin only
    assert not foreign_letters("uz", "Мен ўзбек тилида гапираман.")
    assert foreign_letters("sr_Latn", "Ово је реченица на српском језику.")
    assert foreign_letters("en", "Мен ўзбек тилида гапираман.")


@needs_heliport
def test_extraction_asks_heliport_once_per_process_and_cld2_alone_when_configured() -> None:
    assert first_opinion("heliport") is first_opinion("heliport")
    assert first_opinion("cld2") is None
    assert DocumentBuilder(ExtractConfig(language_identifier="cld2")).first_opinion is None


def test_a_missing_heliport_is_one_error_naming_the_fix(stand_in: Path) -> None:
    with pytest.raises(StageError, match=r"bitextflow-local prepare .*extract.language_identifier: cld2"):
        DocumentBuilder(ExtractConfig())


def test_a_heliport_that_does_not_answer_is_stopped_at_its_deadline(stand_in: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(stand_in, "exec sleep 600")
    monkeypatch.setattr(heliport, "FIRST_ANSWER_SECONDS", 0.5)
    first = Heliport(stand_in)
    started = time.monotonic()
    with pytest.raises(StageError, match="no answer within"):
        first.identify("Some text")
    assert time.monotonic() - started < 10
    assert first._process is None, "the silent process is stopped"


def test_a_heliport_that_dies_is_started_again_once(stand_in: Path, tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    # the first process dies at once; the second answers every line
    _script(stand_in, f'echo x >> {starts}; [ "$(wc -l < {starts})" -gt 1 ] || exit 1; while read line; do echo "spa\t1.0"; done')
    assert Heliport(stand_in).identify("Hola") == "es"
    assert len(starts.read_text().split()) == 2
    starts.unlink()
    _script(stand_in, f"echo x >> {starts}; exit 1")
    with pytest.raises(StageError, match="stopped twice"):
        Heliport(stand_in).identify("Hola")


def test_a_page_does_not_hide_a_broken_identifier(stand_in: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One bad page is counted and skipped; an identifier that stopped answering would fail every page: it fails the task."""
    _script(stand_in, "exec sleep 600")
    monkeypatch.setattr(heliport, "FIRST_ANSWER_SECONDS", 0.5)
    response = page_response(["Este es un párrafo en español con bastantes palabras para identificarlo.", "Short"])
    with pytest.raises(StageError, match="no answer within"):
        DocumentBuilder(ExtractConfig()).build(response, StageCounts("extract"))


@needs_heliport
def test_a_page_in_a_language_only_heliport_knows_is_named_by_it_where_the_pair_has_it() -> None:
    response = page_response(IDO)
    page = DocumentBuilder(ExtractConfig(), languages=("en", "io")).build(response, StageCounts("extract"))
    assert page is not None and page.language == "io" and page.language_set[0][0] == "io"
    assert {paragraph.language for paragraph in page.paragraphs if paragraph.type != "title"} == {"io"}
    # CLD2 alone names it after a neighbour, and so does a pair without Ido
    assert DocumentBuilder(ExtractConfig()).build(response, StageCounts("extract")).language != "io"
    # the crawler, whose scouting drops a host where no page is in the target language, asks heliport too
    assert detect_language(" ".join(IDO), frozenset({"io"})) == ("io", True)
    assert detect_language(" ".join(IDO))[0] != "io"
