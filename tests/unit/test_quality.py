"""The gates: pass clean data, and each kind of bad data fails the expectation meant for it, in a partition's suite
or in the run's.

The tests of this module that need no service; those against the S3 server, the local site or Airflow are
tests/integration/test_quality.py's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from bitextflow import records
from bitextflow.config import GateConfig
from bitextflow.errors import GateFailed
from bitextflow.quality import (
    Check,
    GateReport,
    PairsSummary,
    document_pairs_check,
    documents_check,
    enforce,
    length_ratio,
    run_documents_check,
    run_sentence_pairs_check,
    sentence_pairs_check,
    sentences_check,
    validate,
    volume_bounds,
    with_helper_columns,
)

GATE = GateConfig(min_sentence_pairs=20, max_length_ratio=3.0, max_duplicate_share=0.05)


def clean_pairs(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "url_a": [f"https://site.example/en/page{i // 5}.html" for i in range(n)],
            "url_b": [f"https://site.example/es/page{i // 5}.html" for i in range(n)],
            "lang_a": "en",
            "lang_b": "es",
            "text_a": [f"The court issued ruling number {i} today." for i in range(n)],
            "text_b": [f"El tribunal dictó hoy la sentencia número {i}." for i in range(n)],
            "alignment_score": [0.5 + (i % 50) / 100 for i in range(n)],
            "rule_tags": "length_ok;lang_ok",
            "domain_relevance": [(i % 10) / 10 for i in range(n)],
            "domain_terms": "court;tribunal",
            "pair_hash": [f"{i:016x}" for i in range(n)],
        }
    )


def run(check: Check, data_docs_dir: Path | None = None) -> GateReport:
    return validate([check], data_docs_dir=data_docs_dir, run_name="manual__1")[0]


def check_sentence_pairs(df: pd.DataFrame, gate: GateConfig, lang_a: str, lang_b: str, **options: int) -> list[GateReport]:
    """The gate over ``df`` as the run's only partition: the partition's suite, then the run's."""
    checked = with_helper_columns(df)
    summary = PairsSummary()
    summary.add(checked)
    return validate(
        [
            sentence_pairs_check(checked, gate, lang_a, lang_b, suite="sentence_pairs.part-00000"),
            run_sentence_pairs_check(
                summary, gate, document_pairs=options.get("document_pairs", 8), previous_count=options.get("previous_count")
            ),
        ],
        run_name="manual__1",
    )


def passed(reports: list[GateReport]) -> bool:
    return all(report.success for report in reports)


def failed(report: GateReport | list[GateReport]) -> list[str]:
    """The failing expectations, as ``type(column)`` (the part before the colon)."""
    reports = report if isinstance(report, list) else [report]
    return sorted(f.split(":")[0] for r in reports for f in r.failures)


def failures(reports: list[GateReport]) -> str:
    return " ".join(f for report in reports for f in report.failures)


def test_clean_frame_passes_and_report_is_json() -> None:
    partition, run_level = check_sentence_pairs(clean_pairs(), GATE, "en", "es")
    assert partition.success and run_level.success, partition.failures + run_level.failures
    assert (partition.evaluated, run_level.evaluated) == (15, 5)
    data = json.loads(json.dumps(run_level.to_dict(), allow_nan=False))
    assert data["success"] is True
    assert data["result"]["suite_name"] == "sentence_pairs"
    enforce(partition)  # passes silently


def _wrong_language(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[3, "lang_b"] = "pt"
    return df


def _score_out_of_range(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[5, "alignment_score"] = 1.7
    return df


def _huge_length_ratio(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[7, "text_b"] = "Sí."  # 39 characters against 3
    return df


def _too_many_duplicates(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[0:4, "pair_hash"] = "feedfacecafebeef"  # 4 repeats in 40 rows = 10% > 5%
    return df


def _too_few_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df.head(12).copy()


def _english_on_the_spanish_side(df: pd.DataFrame) -> pd.DataFrame:
    df.loc[0:9, "text_b"] = df.loc[0:9, "text_a"]  # 25% of the rows, allowed 10%
    return df


@pytest.mark.parametrize(
    ("spoil", "expectation", "offending"),
    [
        (_wrong_language, "expect_column_values_to_be_in_set(lang_b)", "'pt'"),
        (_score_out_of_range, "expect_column_values_to_be_between(alignment_score)", "1.7"),
        (_huge_length_ratio, "expect_column_values_to_be_between(length_ratio)", "13.0"),
        (_too_many_duplicates, "expect_column_values_to_be_between(duplicate_share)", "0.1"),
        (_too_few_rows, "expect_column_values_to_be_between(sentence_pairs)", "12"),
        (_english_on_the_spanish_side, "expect_column_values_to_be_between(other_language_share_b)", "0.25"),
    ],
    ids=["wrong-language", "score-out-of-range", "length-ratio", "duplicates", "too-few-rows", "text-in-other-language"],
)
def test_each_defect_fails_its_own_expectation(
    spoil: Callable[[pd.DataFrame], pd.DataFrame], expectation: str, offending: str
) -> None:
    reports = check_sentence_pairs(spoil(clean_pairs()), GATE, "en", "es")
    assert not passed(reports)
    assert failed(reports) == [expectation]
    assert offending in failures(reports)
    with pytest.raises(GateFailed) as caught:
        for report in reports:
            enforce(report)
    message = str(caught.value)
    assert expectation in message and "\n" not in message


def test_a_language_of_the_sides_group_is_not_another_language() -> None:
    """CLD2 names Croatian sentences Bosnian or Serbian (no identifier tells the three apart): an en-hr release of them
    passes, and the same sentences on the Spanish side of an en-es one do not."""
    croatian = clean_pairs().assign(lang_b="hr", text_b=[f"Sud je danas donio presudu broj {i}." for i in range(40)])
    croatian.loc[0:9, "text_b"] = "Kada je baterija skoro prazna, računar će vas upozoriti i preći u stanje mirovanja."
    assert passed(check_sentence_pairs(croatian, GATE, "en", "hr"))
    assert failed(check_sentence_pairs(croatian.assign(lang_b="es"), GATE, "en", "es")) == [
        "expect_column_values_to_be_between(other_language_share_b)"
    ]


def test_duplicates_within_allowed_share_pass() -> None:
    df = clean_pairs()
    df.loc[0:2, "pair_hash"] = "feedfacecafebeef"  # 2 repeats in 40 rows = 5%: at the limit
    assert passed(check_sentence_pairs(df, GATE, "en", "es"))


def test_nulls_blank_text_and_missing_columns_are_reported() -> None:
    df = clean_pairs()
    df.loc[1, "url_a"] = None
    df.loc[2, "text_a"] = " " * 40  # as long as its partner, so only the blank-text check fires
    df = df.drop(columns=["domain_terms"])
    reports = check_sentence_pairs(df, GATE, "en", "es")
    assert failed(reports) == [
        "expect_column_values_to_match_regex(text_a)",
        "expect_column_values_to_not_be_null(url_a)",
        "expect_table_columns_to_match_set",
    ]
    assert "missing columns domain_terms" in failures(reports)


def test_empty_frame_passes_when_no_rows_are_required() -> None:
    reports = check_sentence_pairs(clean_pairs().head(0), GATE.model_copy(update={"min_sentence_pairs": 0}), "en", "es")
    assert passed(reports), failures(reports)


def test_infinite_score_keeps_report_valid_json() -> None:
    df = clean_pairs()
    df.loc[0, "domain_relevance"] = float("inf")
    reports = check_sentence_pairs(df, GATE, "en", "es")
    assert failed(reports) == ["expect_column_values_to_be_between(domain_relevance)"]
    for report in reports:
        json.dumps(report.to_dict(), allow_nan=False)


def test_length_ratio_is_finite_for_empty_sides() -> None:
    ratios = length_ratio(pd.Series(["abcd", "", "ab", None]), pd.Series(["ab", "abc", "ab", "x"]))
    assert ratios.tolist() == [2.0, 3.0, 1.0, 1.0]


def test_length_ratio_counts_in_the_score_rules_unit_fair_across_scripts() -> None:
    english = "An information system can have a varying level of importance depending on the environment."
    japanese = "情報システムはその環境に依存してさまざまな重要度を持ちます。"  # 30 characters against 90
    (ratio,) = length_ratio(pd.Series([english]), pd.Series([japanese])).tolist()
    assert ratio < 1.5


def test_importing_the_gate_does_not_import_great_expectations() -> None:
    code = "import sys, bitextflow.quality; print('great_expectations' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- volume against the previous release --------------------------------------------------------------
def test_volume_drop_and_growth_against_previous_release_fail() -> None:
    gate = GATE.model_copy(update={"max_volume_drop": 0.5, "max_volume_growth": 1.0})
    assert volume_bounds(gate, None) == (20, None)
    assert volume_bounds(gate, 100) == (50, 200)
    assert passed(check_sentence_pairs(clean_pairs(40), gate, "en", "es", previous_count=60))
    dropped = check_sentence_pairs(clean_pairs(40), gate, "en", "es", previous_count=100)
    assert failed(dropped) == ["expect_column_values_to_be_between(sentence_pairs)"]
    assert "40" in failures(dropped) and "min_value=50" in failures(dropped)
    spiked = check_sentence_pairs(clean_pairs(40), gate, "en", "es", previous_count=15)
    assert "max_value=30" in failures(spiked)


def test_a_run_without_document_pairs_fails_and_says_so() -> None:
    reports = check_sentence_pairs(clean_pairs(), GATE, "en", "es", document_pairs=0)
    assert failed(reports) == ["expect_column_values_to_be_between(document_pairs)"]


def test_optional_score_column_is_range_checked_when_present() -> None:
    df = clean_pairs()
    df["bicleaner_score"] = 0.9
    df.loc[4, "bicleaner_score"] = -0.2
    assert failed(check_sentence_pairs(df, GATE, "en", "es")) == ["expect_column_values_to_be_between(bicleaner_score)"]


# -- the other stage boundaries ----------------------------------------------------------------------
def documents(n: int = 6) -> pd.DataFrame:
    frame = pd.DataFrame({name: [None] * n for name in records.DOCUMENTS.names})
    frame["doc_id"] = [f"d{i}" for i in range(n)]
    frame["url"] = [f"http://site.example/{'en' if i % 2 else 'es'}/{i // 2}.html" for i in range(n)]
    frame["warc_key"] = "en-es/run/crawl/crawl-00000.warc.gz"
    frame["language"] = ["en" if i % 2 else "es" for i in range(n)]
    frame["content_hash"] = [f"h{i}" for i in range(n)]
    frame["relevance"] = 1.5
    frame["sentences"] = 3
    return frame


def test_documents_gate_names_duplicate_ids_and_a_missing_language() -> None:
    gate = GATE.model_copy(update={"min_documents": 4})
    assert run(documents_check(documents(), gate)).success
    spoiled = documents()
    spoiled.loc[2, "doc_id"] = "d0"
    report = run(documents_check(spoiled, gate))
    assert failed(report) == ["expect_column_values_to_be_unique(doc_id)"]
    assert "'d0'" in " ".join(report.failures)
    with pytest.raises(GateFailed, match=r"^documents quality gate failed 1 of"):
        enforce(report)
    summaries = [{"partition": 3, "documents": {"en": 2}}, {"partition": 5, "documents": {"en": 1}}]
    report = run(run_documents_check(summaries, gate, ("en", "es")))
    assert failed(report) == [
        "expect_column_distinct_values_to_contain_set(language)",
        "expect_column_sum_to_be_between(documents)",
    ], "the run has no Spanish document and 3 documents in all, fewer than 4"
    summaries.append({"partition": 7, "documents": {"es": 1}})
    assert run(run_documents_check(summaries, gate, ("en", "es"))).success


def test_sentences_gate_rejects_other_languages_and_blank_text() -> None:
    frame = pd.DataFrame(
        {"doc_id": ["d1", "d2", "d3"], "url": "u", "language": ["en", "es", "fr"], "paragraph_index": 0,
         "paragraph_type": "text", "sentence_index": [0, 1, 2], "text": ["One.", "  ", "Trois."], "duplicate": False,
         "partition": 0}
    )  # fmt: skip
    report = run(sentences_check(frame, ("en", "es")))
    assert failed(report) == ["expect_column_values_to_be_in_set(language)", "expect_column_values_to_match_regex(text)"]
    assert "'fr'" in " ".join(report.failures)


def test_document_pairs_gate_requires_one_to_one_and_distinct_urls() -> None:
    pairs = pd.DataFrame(
        {"doc_id_a": ["a1", "a2", "a2"], "doc_id_b": ["b1", "b2", "b3"], "url_a": ["u1", "u2", "u3"],
         "url_b": ["v1", "u2", "v3"], "method": "url", "score": [1.0, 0.5, 0.7], "partition": 2}
    )  # fmt: skip
    report = run(document_pairs_check(pairs))
    assert failed(report) == ["expect_column_values_to_be_null(same_url)", "expect_column_values_to_be_unique(doc_id_a)"]
    assert run(document_pairs_check(pairs.iloc[[0]])).success


def test_data_docs_render_the_suite_and_its_result(tmp_path: Path) -> None:
    reports = validate(
        [
            sentence_pairs_check(with_helper_columns(clean_pairs().head(3)), GATE, "en", "fr", suite="sentence_pairs"),
            document_pairs_check(pd.DataFrame()),
        ],
        data_docs_dir=tmp_path,
        run_name="manual__1",
    )
    assert [r.suite for r in reports] == ["sentence_pairs", "document_pairs"]
    assert not any(r.success for r in reports)
    pages = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.html"))
    assert {"index.html", "expectations/sentence_pairs.html", "expectations/document_pairs.html"} <= set(pages)
    assert "document_pairs" in (tmp_path / "index.html").read_text() and "sentence_pairs" in (tmp_path / "index.html").read_text()
    validation_page = next(p for p in pages if p.startswith("validations/sentence_pairs/manual__1/"))
    text = (tmp_path / validation_page).read_text()
    assert "Expectation Suite:" in text and "Unsuccessful Expectations" in text


def test_rerun_renders_the_same_bytes(tmp_path: Path) -> None:
    def render(folder: Path) -> tuple[dict[str, bytes], str]:
        checked = with_helper_columns(clean_pairs())
        (report,) = validate(
            [sentence_pairs_check(checked, GATE, "en", "es", suite="sentence_pairs")], data_docs_dir=folder, run_name="g"
        )
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        return files, json.dumps(report.to_dict(), sort_keys=True)

    first, second = render(tmp_path / "a"), render(tmp_path / "b")
    assert first == second
    pages = [text.decode() for name, text in first[0].items() if name.endswith(".html")]
    assert pages and not any("logo-long.png?d=" in page for page in pages)


def release_frame(n: int = 40) -> pd.DataFrame:
    return clean_pairs(n).assign(domain_probs_a='{"legal": 0.75, "other": 0.25}', domain_probs_b="")


def build(directory: Path, df: pd.DataFrame) -> Path:
    from bitextflow.release.build import build_release

    build_release(directory, "en-es", 1, df, [], "manual__1", {"success": True})
    return directory


def release_report(directory: Path, rows: int = 40) -> dict[str, GateReport]:
    from bitextflow.quality import release_checks

    return {report.suite: report for report in validate(release_checks(directory, "en-es", rows), run_name="release")}


def test_release_gate_passes_a_built_release(tmp_path: Path) -> None:
    reports = release_report(build(tmp_path, release_frame()))
    assert all(report.success for report in reports.values()), {s: r.failures for s, r in reports.items()}
    assert set(reports) == {"release_files", "release_pairs"}


def _drop_tsv_line(directory: Path) -> None:
    path = directory / "en-es.tsv"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[1:]))


def _break_tmx(directory: Path) -> None:
    path = directory / "en-es.tmx"
    path.write_bytes(path.read_bytes().replace(b"</body>", b"<tu></body>"))


def _lose_stats(directory: Path) -> None:
    (directory / "stats.json").unlink()


def _repeat_a_pair(directory: Path) -> None:
    path = directory / "en-es.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:-1], lines[0]]))


@pytest.mark.parametrize(
    ("spoil", "suite", "expected"),
    [
        (_drop_tsv_line, "release_files", "en-es.tsv holds 39 records, expected 40"),
        (_break_tmx, "release_files", "en-es.tmx: not well-formed XML"),
        (_lose_stats, "release_files", "expect_column_distinct_values_to_contain_set(file)"),
        (_repeat_a_pair, "release_pairs", "expect_column_values_to_be_null(repeated_pair_hash)"),
    ],
    ids=["tsv-line-lost", "tmx-invalid", "stats-missing", "pair-repeated"],
)
def test_release_gate_names_what_is_wrong_with_the_files(
    tmp_path: Path, spoil: Callable[[Path], None], suite: str, expected: str
) -> None:
    directory = build(tmp_path, release_frame())
    spoil(directory)
    reports = release_report(directory)
    assert not reports[suite].success
    assert expected in " ".join(reports[suite].failures), reports[suite].failures


def test_release_gate_checks_each_domain_distribution() -> None:
    from bitextflow.quality.release import distribution_problem

    assert distribution_problem("") is None and distribution_problem('{"legal": 0.6, "other": 0.4}') is None
    assert distribution_problem('{"legal": 0.6}') == "adds up to 0.6000"
    assert distribution_problem('{"legal": 1.5, "other": -0.5}').startswith("probability outside [0, 1]")
    assert distribution_problem("legal").startswith("not JSON")
    assert distribution_problem("[0.5, 0.5]").startswith("not a {label: probability} object")
