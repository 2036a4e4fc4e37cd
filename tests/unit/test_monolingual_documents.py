"""The monolingual corpus as documents: a document's release line (every annotation, valid against the published
schema, personal data replaced), the ``mono.*`` thresholds that keep one out (counted by reason), the gzip files
(same documents, same bytes) and the schema published in docs/release.md. The stage and the release on the real S3
server: tests/integration/test_optout_release.py."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from jsonschema import Draft202012Validator

from bitextflow.classify.inference import spread
from bitextflow.config import MonolingualConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.records import Document, Paragraph
from bitextflow.redaction import PersonalDataDetector, Screen, TakedownList
from bitextflow.redaction.takedowns import TakedownEntry
from bitextflow.release.documents import (
    DocumentContext,
    DocumentsCorpus,
    annotate,
    annotated_row,
    document_schema,
    documents_file,
    held_back_by,
    mean_distribution,
    screened_line,
)
from bitextflow.stages.base import RunContext
from tests.support import ROOT

RUNNING = (
    "The package manager installs the software you choose together with every library it needs. "
    "It keeps a list of the files each package holds, so that removing a package later leaves nothing behind."
)
OPTOUTS = {"robots": "allowed", "tdmrep": "allowed", "noai": "allowed", "robots_agents": ["*", "bitextflow"]}


def document(url: str = "http://example.org/en/guide.html", text: str = RUNNING, **fields) -> Document:
    paragraphs = (
        Paragraph("title", "Installing packages", "en", False, False),
        Paragraph("heading", "Installing packages", "en", False, False, ("package",)),
        Paragraph("text", text, "en", False, False, ("package", "install")),
        Paragraph("listitem", "Home | News | Contact", "en", True, False),
    )
    values = {
        "language": "en", "language_set": ({"language": "en", "share": 0.97}, {"language": "fr", "share": 0.03}),
        "title": "Installing packages", "paragraphs": paragraphs, "relevance": 0.42, "warc_key": "crawl/a.warc.gz",
        "warc_offset": 1234, "warc_record_id": "<urn:uuid:1>", "warc_date": "2026-12-01T10:00:00Z",
    } | fields  # fmt: skip
    return Document(re.sub(r"\W", "", url)[-16:], url, **values)


def line_of(doc: Document, context: DocumentContext | None = None, detector=None, replace: bool = True) -> dict:
    return annotate(doc, context or DocumentContext(), source="crawl", optouts=OPTOUTS, detector=detector, replace=replace)


def row_of(line: dict, duplicate_of: str = "") -> dict:
    return annotated_row(line) | {"duplicate_of": duplicate_of}


def test_a_line_holds_the_text_its_structure_and_every_annotation_valid_against_the_schema() -> None:
    context = DocumentContext(
        copies=2, document_pairs=[("d1", "d2")],
        domain_distributions=['{"computing": 0.9, "legal": 0.1}', '{"computing": 0.7, "legal": 0.3}'],
    )  # fmt: skip
    line = line_of(document(), context)
    Draft202012Validator(document_schema()).validate(line)
    assert line["text"] == f"Installing packages\n{RUNNING}", "the main content: no title, no boilerplate"
    assert [p["type"] for p in line["paragraphs"]] == ["title", "heading", "text", "listitem"]
    assert line["paragraphs"][3]["boilerplate"] is True
    assert line["quality"]["label"] in ("PT", "RTE"), line["quality"]
    assert line["language_score"] == 0.97 and line["source"]["offset"] == 1234
    assert line["domain"] == {
        "relevance": 0.42, "terms": ["install", "package"], "classifier": {"computing": 0.8, "legal": 0.2},
        "classifier_from": "sentence_pairs", "classifier_sentences": 2,
    }  # fmt: skip
    assert line["duplicates"] == {"cluster_size": 3, "duplicate_of": None}
    assert line["document_pairs"] == [["d1", "d2"]] and line["words"] == 35


def test_personal_data_is_replaced_in_every_paragraph_and_counted_by_type() -> None:
    text = RUNNING + " Write to ana.lopez@example.com or bob@example.org, or call +34 912 34 56 78."
    line = line_of(document(text=text), detector=PersonalDataDetector(regions=("ES",)))
    assert "example.com" not in json.dumps(line) and "[EMAIL_1]" in line["text"] and "[PHONE_1]" in line["text"]
    assert line["personal_data"] == {"email": 2, "phone": 1}


def test_the_release_screen_replaces_what_a_stricter_detector_finds_and_drops_where_the_guard_drops() -> None:
    text = RUNNING + " Write to ana.lopez@example.com, or call +34 912 34 56 78."
    line = line_of(document(text=text), detector=PersonalDataDetector(("email",)))
    assert line["personal_data"] == {"email": 1} and "912 34 56 78" in line["text"]
    counts = StageCounts("release_documents")
    stricter = screened_line(line, Screen(detector=PersonalDataDetector(regions=("ES",))), counts)
    assert stricter is not None and "[PHONE_1]" in stricter["text"] and "[EMAIL_1]" in stricter["text"]
    assert stricter["personal_data"] == {"email": 1, "phone": 1} and counts.repaired == {"personal_data_phone": 1}
    unredacted = line_of(document(text=text), detector=PersonalDataDetector(), replace=False)
    assert unredacted["personal_data"] == {"email": 1} and "ana.lopez@example.com" in unredacted["text"]
    dropping = Screen(detector=PersonalDataDetector(), action="drop")
    assert screened_line(unredacted, dropping, counts) is None and counts.dropped == {"personal_data_email": 1}
    untouched = line_of(document())
    assert screened_line(untouched, Screen(detector=PersonalDataDetector()), counts) is untouched


def test_a_common_crawl_document_names_its_record_there() -> None:
    record = {"warc_filename": "crawl-data/CC-MAIN-2099-01/segments/1/warc/CC-MAIN-00000.warc.gz", "offset": 7, "length": 540}
    validator = Draft202012Validator(document_schema())
    located = annotate(document(), DocumentContext(index_record=record), source="commoncrawl", optouts=OPTOUTS, detector=None)
    crawled = line_of(document())
    assert located["source"]["commoncrawl"] == record and "commoncrawl" not in crawled["source"]
    assert not list(validator.iter_errors(located)) and not list(validator.iter_errors(crawled))
    located["source"]["commoncrawl"]["length"] = 0
    assert list(validator.iter_errors(located)), "a record of no bytes is no Common Crawl record"


def test_mean_distribution_is_none_without_a_classified_sentence() -> None:
    assert mean_distribution([]) is None and mean_distribution(["", ""]) is None


@pytest.mark.parametrize(
    ("count", "limit", "expected"),
    [(5, 16, [0, 1, 2, 3, 4]), (10, 4, [0, 3, 6, 9]), (17, 16, [*range(8), *range(9, 17)]), (100, 1, [0]), (3, 0, [])],
)
def test_a_documents_sentences_are_sampled_evenly_from_its_first_to_its_last(count: int, limit: int, expected: list) -> None:
    assert spread(list(range(count)), limit) == expected


def test_a_distribution_says_what_it_is_the_mean_of_and_none_says_nothing() -> None:
    validator = Draft202012Validator(document_schema())
    sampled = line_of(document(), DocumentContext(domain_distributions=['{"computing": 1.0}'], classifier_from="text"))
    unclassified = line_of(document(), DocumentContext(classifier_from="text"))
    assert sampled["domain"]["classifier_from"] == "text" and sampled["domain"]["classifier_sentences"] == 1
    assert unclassified["domain"] | {"terms": []} == {
        "relevance": 0.42, "terms": [], "classifier": None, "classifier_from": None, "classifier_sentences": 0,
    }  # fmt: skip
    assert not list(validator.iter_errors(sampled)) and not list(validator.iter_errors(unclassified))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"duplicate_of": "kept-one"}, "duplicate"),
        ({"words": 3}, "too_few_words"),
        ({"language_score": 0.2}, "below_language_score"),
        ({"quality_label": "NRT"}, "quality_NRT"),
        ({"relevance": -1.0}, "below_relevance"),
    ],
)
def test_each_threshold_holds_a_document_back_under_its_own_reason(change: dict, reason: str) -> None:
    row = row_of(line_of(document())) | change
    assert held_back_by(row_of(line_of(document())), MonolingualConfig()) is None
    assert held_back_by(row, MonolingualConfig()) == reason


def test_keeping_copies_releases_another_urls_copy_but_a_same_url_copy_once() -> None:
    """A copy of the same URL found in another shard has the kept document's id; releasing it too would put that id in
    the file twice, which the release gate refuses."""
    keep = MonolingualConfig(duplicates="keep")
    line = line_of(document())
    assert held_back_by(row_of(line, duplicate_of="another-url"), keep) is None
    assert held_back_by(row_of(line, duplicate_of=line["id"]), keep) == "duplicate"


def test_the_corpus_counts_every_document_and_writes_the_same_bytes_twice(tmp_path: Path) -> None:
    lines = [line_of(document(f"http://example.org/en/{n}.html")) for n in range(3)]
    rows = [row_of(line) for line in lines] + [row_of(lines[0], duplicate_of=lines[1]["id"])]
    rows.append(row_of(line_of(document("http://example.org/es/1.html", language="es"))) | {"language": "fr"})
    entry = TakedownEntry(url="http://example.org/en/2.html", who="the site owner", when="2026-11-30", why="asked")
    takedowns = TakedownList([entry])
    written = []
    for attempt in ("a", "b"):
        folder = tmp_path / attempt
        folder.mkdir()
        corpus = DocumentsCorpus(folder, ["en", "es"], MonolingualConfig(), Screen(takedowns))
        corpus.add(rows)
        corpus.close()
        written.append((folder / documents_file("en")).read_bytes())
    assert written[0] == written[1], "gzip without a timestamp: the same documents give the same bytes"
    assert corpus.counts.to_dict() == {
        "stage": "release_documents", "in": 5, "kept": 2,
        "dropped": {"duplicate": 1, "other_language": 1, "takedown_url": 1},
    }  # fmt: skip
    released = [json.loads(line) for line in gzip.decompress(written[0]).splitlines()]
    assert [line["url"] for line in released] == ["http://example.org/en/0.html", "http://example.org/en/1.html"]
    assert gzip.decompress((tmp_path / "b" / documents_file("es")).read_bytes()) == b"", "a language with none: empty"
    assert corpus.statistics()["en"]["documents"] == 2 and corpus.statistics()["en"]["words"] == 2 * lines[0]["words"]


def test_docs_release_md_publishes_the_schema_the_release_checks() -> None:
    docs = (ROOT / "docs" / "release.md").read_text(encoding="utf-8")
    published = re.search(r"<!-- documents schema -->\n```json\n(.*?)\n```", docs, re.DOTALL)
    assert published, "docs/release.md: the documents schema block (after <!-- documents schema -->) is missing"
    assert json.loads(published.group(1)) == document_schema(), "docs/release.md's schema differs from the package's"


def test_counts_that_lose_an_item_are_refused_with_the_stage_and_shard_named() -> None:
    counts = StageCounts("example")
    counts.seen(3)
    counts.keep(1)
    counts.drop("too_short")
    ctx = RunContext(config=None, store=None, run_id="manual__counts")  # type: ignore[arg-type]: refused before use
    with pytest.raises(StageError, match=r"stage example, shard part-00001: .*in=3 but kept=1 \+ dropped=1 \(lost 1"):
        ctx.write_counts("example", "part-00001", counts)


def test_a_release_with_documents_describes_them_and_its_gate_catches_a_bad_line(tmp_path: Path) -> None:
    """The release's files, statistics, report and datasheet with the documents; then one line the guards would not
    have let through (another language, personal data, an opt-out) written into the built file, which its suite fails."""
    from bitextflow.config import load_pair_config
    from bitextflow.quality import validate
    from bitextflow.quality.release import release_documents_checks
    from bitextflow.release.build import ReleaseExtras, build_release
    from tests.unit.test_release import pairs

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    lines = [line_of(document(f"http://example.org/en/{n}.html")) for n in range(2)]
    extras = ReleaseExtras(crawl_log=[{"url": "http://example.org/en/0.html", "outcome": "fetched"}], config=config)
    extras = ReleaseExtras(**{**extras.__dict__, "documents": [pd.DataFrame([row_of(line) for line in lines])]})
    build_release(tmp_path, "en-es", 1, pairs(), [], "run-documents", None, extras)
    stats = json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))
    assert stats["documents"]["en"]["documents"] == 2 and stats["documents"]["es"]["documents"] == 0
    assert sum(stats["documents"]["en"]["quality_scores"]) == 2
    assert "Monolingual documents" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "2 monolingual en documents" in (tmp_path / "datasheet.md").read_text(encoding="utf-8")
    detector = PersonalDataDetector()
    (good,) = validate(release_documents_checks(tmp_path / documents_file("en"), "en", detector))
    assert good.success, good.failures
    bad = line_of(document("http://example.org/en/9.html", text=RUNNING + " Mail ana.lopez@example.com."))
    bad["language"], bad["optouts"]["tdmrep"] = "es", "reserved"
    with gzip.open(tmp_path / documents_file("en"), "ab") as out:
        out.write((json.dumps(lines[0]) + "\n" + json.dumps(bad) + "\n").encode())
    (report,) = validate(release_documents_checks(tmp_path / documents_file("en"), "en", detector))
    failed = " ".join(report.failures)
    for column in ("language", "repeated_id", "optout_problem", "personal_data", "schema_problem"):
        assert column in failed, f"{column} not caught: {report.failures}"


def test_the_documents_gate_screens_the_title_and_every_paragraph_for_personal_data(tmp_path: Path) -> None:
    """``text`` holds only the main paragraphs: an address in the title or in a boilerplate paragraph (a footer) is
    released too, so the gate reads them."""
    from bitextflow.quality import validate
    from bitextflow.quality.release import release_documents_checks

    detector = PersonalDataDetector()
    in_title = line_of(document("http://example.org/en/1.html"))
    in_title["title"] = "Write to ana.lopez@example.com"
    in_footer = line_of(document("http://example.org/en/2.html"))
    in_footer["paragraphs"][-1]["text"] = "Home | Contact: ana.lopez@example.com"
    path = tmp_path / documents_file("en")
    for lines, caught in (([line_of(document())], False), ([in_title], True), ([in_footer], True)):
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
        (report,) = validate(release_documents_checks(path, "en", detector))
        assert (not report.success and "personal_data" in " ".join(report.failures)) == caught, (lines, report.failures)
