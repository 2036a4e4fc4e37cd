"""The release gate: the files of a release version, judged after they are built and before they are published.

The sentence-pair gate judged the data; this one judges what users download, so that a fault in
serialisation (a lost line, a broken TMX, a distribution that no longer adds up) never reaches a
published version:

- release files: every file a release must hold is there, and each countable file holds the release's
  number of sentence pairs: ``<tu>`` in the TMX (also valid against the TMX 1.4 DTD), lines of the TSV
  and JSONL, ``stats.json``, the document pairs' yields; each ``mono.<lang>.txt`` holds the lines its
  statistics announce. A mismatch names the file and both numbers;
- release pairs (the JSONL, every column, read back in chunks of :data:`PAIRS_PER_CHECK` lines, one suite each:
  ``release_pairs``, then ``release_pairs.00001`` and on): the columns of the classified sentence pairs (optional
  scores aside); URLs, texts, languages and ``pair_hash`` present; texts not blank; each side in its language;
  no ``pair_hash`` seen earlier in the file (helper column ``repeated_pair_hash``); scores in [0, 1]; each
  non-empty domain distribution a JSON object of probabilities in [0, 1] adding up to 1;
- release documents (each ``documents.<lang>.jsonl.gz``, read back a chunk at a time: ``release_documents.<lang>``,
  then ``release_documents.<lang>.00001`` and on): every line valid against the published JSON schema
  (:func:`bitextflow.release.documents.document_schema`), in the file's language, no document twice, none from a
  page an opt-out reserves, and no personal data the release screens for left in its text.

:func:`release_file_counts` is also what ``bench/release_check.py`` uses on a published release.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from jsonschema import Draft202012Validator

from bitextflow.errors import StageError
from bitextflow.hashing import SeenHashes
from bitextflow.quality.engine import Check
from bitextflow.quality.sentence_pairs import OPTIONAL_SCORE_COLUMNS, REPEATED_HASH_COLUMN, SENTENCE_PAIR_COLUMNS
from bitextflow.redaction import PersonalDataDetector
from bitextflow.release.documents import document_schema, documents_file
from bitextflow.release.formats import validate_tmx
from bitextflow.release.profile import identity

#: The suites every release passes; each documents file adds ``release_documents.<lang>`` (and chunks after it).
RELEASE_FILES_SUITE, RELEASE_PAIRS_SUITE = RELEASE_SUITES = ("release_files", "release_pairs")
RELEASE_DOCUMENTS_SUITE = "release_documents"
#: What can be wrong with a released document, one helper column each (None: nothing).
DOCUMENT_PROBLEM_COLUMNS = ("schema_problem", "repeated_id", "optout_problem", "personal_data")
PROBLEM_COLUMN = "problem"
DOMAIN_PROBLEM_COLUMNS = {"domain_probs_a": "domain_probs_a_problem", "domain_probs_b": "domain_probs_b_problem"}
#: JSONL lines per release-pairs suite: the gate holds one chunk of the release at a time.
PAIRS_PER_CHECK = 50_000
# A distribution written with full float precision adds up to 1 within rounding; more is a broken one.
_PROBABILITY_TOLERANCE = 1e-3


def required_release_files(pair: str) -> list[str]:
    """The files every release holds, whatever extras its run had."""
    return [f"{pair}.tsv", f"{pair}.tmx", f"{pair}.jsonl", "stats.json", "gate.json"]


def _line_count(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def _gzip_line_count(path: Path) -> int:
    with gzip.open(path, "rb") as handle:
        return sum(1 for _ in handle)


def _document_pair_yield(path: Path) -> int:
    with path.open(encoding="utf-8") as lines:
        return sum(int(json.loads(line)["sentence_pairs"]) for line in lines)


def release_file_counts(directory: Path, pair: str, sentence_pairs: int) -> pd.DataFrame:
    """One row per file in ``directory``: ``file``, ``records`` and ``expected`` where the file is
    countable, and ``problem``: why the file disagrees with the release (None when it agrees)."""
    stats_path = directory / "stats.json"
    stats = json.loads(stats_path.read_text(encoding="utf-8")) if stats_path.is_file() else {}
    mono_expected = stats.get("monolingual_sentences", {})
    counters: dict[str, tuple[Any, int]] = {
        f"{pair}.tsv": (_line_count, sentence_pairs),
        f"{pair}.jsonl": (_line_count, sentence_pairs),
        f"{pair}.tmx": (validate_tmx, sentence_pairs),
        "stats.json": (lambda _path: int(stats.get("sentence_pairs", -1)), sentence_pairs),
        "document_pairs.jsonl": (_document_pair_yield, sentence_pairs),
        **{f"mono.{language}.txt": (_line_count, int(expected)) for language, expected in mono_expected.items()},
        **{
            documents_file(language): (_gzip_line_count, int(figures["documents"]))
            for language, figures in stats.get("documents", {}).items()
        },
    }
    rows = []
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        records = expected = problem = None
        if path.name in counters:
            count, expected = counters[path.name]
            try:
                records = count(path)
            except (StageError, ValueError, KeyError) as exc:
                message = " ".join(str(exc).split())
                # the build folder is temporary: name the file as the release does
                problem = message.replace(str(path), path.name) if str(path) in message else f"{path.name}: {message}"
            else:
                if records != expected:
                    problem = f"{path.name} holds {records} records, expected {expected}"
        rows.append({"file": path.name, "records": records, "expected": expected, PROBLEM_COLUMN: problem})
    announced = {f"mono.{language}.txt": int(n) for language, n in mono_expected.items()} | {
        documents_file(language): int(figures["documents"]) for language, figures in stats.get("documents", {}).items()
    }
    rows += [
        {"file": name, "records": None, "expected": expected, PROBLEM_COLUMN: f"{name} missing"}
        for name, expected in announced.items()
        if not (directory / name).is_file()
    ]
    # object columns keep None as None (a float column would turn it into NaN) for the gate and its readers
    return pd.DataFrame(rows, columns=["file", "records", "expected", PROBLEM_COLUMN], dtype=object)


def distribution_problem(value: object) -> str | None:
    """Why a cell of ``domain_probs_*`` is not a probability distribution; None for one, or for "" (no classifier)."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    try:
        probabilities = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        return f"not JSON: {str(value)[:40]!r}"
    if not isinstance(probabilities, dict) or not probabilities:
        return f"not a {{label: probability}} object: {str(value)[:40]!r}"
    numbers = list(probabilities.values())
    if not all(isinstance(p, (int, float)) and 0.0 <= p <= 1.0 for p in numbers):
        return f"probability outside [0, 1]: {str(value)[:40]!r}"
    if abs(sum(numbers) - 1.0) > _PROBABILITY_TOLERANCE:
        return f"adds up to {sum(numbers):.4f}"
    return None


def release_files_check(directory: Path, pair: str, sentence_pairs: int, required: list[str]) -> Check:
    """The suite over the built files of one release version."""
    frame = release_file_counts(directory, pair, sentence_pairs)

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectColumnDistinctValuesToContainSet(column="file", value_set=required),
            gxe.ExpectColumnValuesToBeNull(column=PROBLEM_COLUMN),
        ]

    return Check(RELEASE_FILES_SUITE, frame, expectations)


def release_pairs_checks(jsonl: Path, lang_a: str, lang_b: str) -> Iterator[Check]:
    """The suites over the release's JSONL, read back as users read it, a chunk at a time."""
    if not (jsonl.is_file() and jsonl.stat().st_size > 0):  # a missing file is the files suite's finding
        yield _release_pairs_check(pd.DataFrame(), lang_a, lang_b, RELEASE_PAIRS_SUITE)
        return
    seen = SeenHashes()
    chunks = pd.read_json(jsonl, lines=True, dtype=False, convert_dates=False, chunksize=PAIRS_PER_CHECK)
    for index, frame in enumerate(chunks):
        if "pair_hash" in frame.columns:
            first = seen.add(identity(str(value)) for value in frame["pair_hash"])
            frame[REPEATED_HASH_COLUMN] = frame["pair_hash"].where(~first, None)
        else:
            frame[REPEATED_HASH_COLUMN] = None
        suite = RELEASE_PAIRS_SUITE if index == 0 else f"{RELEASE_PAIRS_SUITE}.{index:05d}"
        yield _release_pairs_check(frame, lang_a, lang_b, suite)


def _release_pairs_check(frame: pd.DataFrame, lang_a: str, lang_b: str, suite: str) -> Check:
    for column, helper in DOMAIN_PROBLEM_COLUMNS.items():
        frame[helper] = frame[column].map(distribution_problem) if column in frame.columns else None
    score_columns = ["alignment_score", "domain_relevance", *(c for c in OPTIONAL_SCORE_COLUMNS if c in frame.columns)]

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectTableColumnsToMatchSet(column_set=[*SENTENCE_PAIR_COLUMNS, *DOMAIN_PROBLEM_COLUMNS], exact_match=False),
            *(
                gxe.ExpectColumnValuesToNotBeNull(column=column)
                for column in ("url_a", "url_b", "lang_a", "lang_b", "text_a", "text_b", "pair_hash")
            ),
            *(gxe.ExpectColumnValuesToMatchRegex(column=column, regex=r"\S") for column in ("text_a", "text_b")),
            gxe.ExpectColumnValuesToBeInSet(column="lang_a", value_set=[lang_a]),
            gxe.ExpectColumnValuesToBeInSet(column="lang_b", value_set=[lang_b]),
            gxe.ExpectColumnValuesToBeNull(column=REPEATED_HASH_COLUMN),
            *(gxe.ExpectColumnValuesToBeBetween(column=column, min_value=0.0, max_value=1.0) for column in score_columns),
            *(gxe.ExpectColumnValuesToBeNull(column=helper) for helper in DOMAIN_PROBLEM_COLUMNS.values()),
        ]

    return Check(suite, frame, expectations)


def _every_text(line: dict[str, Any]) -> str:
    """What a user reads in a documents line: its title and every paragraph, boilerplate ones included (``text`` holds
    only the main paragraphs)."""
    paragraphs = line.get("paragraphs") or []
    return "\n".join([str(line.get("title") or ""), *(str(p.get("text") or "") for p in paragraphs if isinstance(p, dict))])


def release_documents_checks(path: Path, language: str, detector: PersonalDataDetector | None) -> Iterator[Check]:
    """The suites over one language's released documents, read back as users read them, a chunk at a time; each row
    is a line with helper columns saying what is wrong with it (None: nothing)."""
    validator = Draft202012Validator(document_schema())
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    chunk = 0

    def check() -> Check:
        suite = f"{RELEASE_DOCUMENTS_SUITE}.{language}" + (f".{chunk:05d}" if chunk else "")
        frame = pd.DataFrame(rows, columns=["id", "language", *DOCUMENT_PROBLEM_COLUMNS], dtype=object)
        return Check(suite, frame, lambda gxe: [
            gxe.ExpectColumnValuesToBeInSet(column="language", value_set=[language]),
            *(gxe.ExpectColumnValuesToBeNull(column=column) for column in DOCUMENT_PROBLEM_COLUMNS),
        ])  # fmt: skip

    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for number, text in enumerate(lines, 1):
            line = json.loads(text)
            errors = sorted(validator.iter_errors(line), key=lambda error: list(error.path))
            identifier = str(line.get("id", ""))
            optouts = line.get("optouts") or {}
            found = [f.kind for f in detector.find(_every_text(line))] if detector is not None else []
            rows.append({
                "id": identifier,
                "language": line.get("language"),
                "schema_problem": f"line {number}: {errors[0].message} at /{'/'.join(map(str, errors[0].path))}" if errors else None,
                "repeated_id": identifier if identifier in seen else None,
                "optout_problem": ", ".join(f"{k}={v}" for k, v in optouts.items() if k != "robots_agents" and v not in ("allowed", "not_checked")) or None,
                "personal_data": ", ".join(sorted(set(found))) or None,
            })  # fmt: skip
            seen.add(identifier)
            if len(rows) == PAIRS_PER_CHECK:
                yield check()
                rows, chunk = [], chunk + 1
    if rows or not chunk:
        yield check()


def release_checks(
    directory: Path,
    pair: str,
    sentence_pairs: int,
    required: list[str] | None = None,
    detector: PersonalDataDetector | None = None,
) -> Iterator[Check]:
    """The release suites over the files built into ``directory``: the files, the pairs chunk by chunk, then each
    language's documents (``detector``: the personal data the release screens for)."""
    lang_a, lang_b = pair.split("-", 1)
    yield release_files_check(directory, pair, sentence_pairs, required or required_release_files(pair))
    yield from release_pairs_checks(directory / f"{pair}.jsonl", lang_a, lang_b)
    for language in (lang_a, lang_b):
        if (path := directory / documents_file(language)).is_file():
            yield from release_documents_checks(path, language, detector)
