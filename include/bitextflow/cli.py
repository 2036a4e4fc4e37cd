"""``bitextflow``: run any stage, or the whole pipeline, without Airflow; list releases and pairs' status.

One subcommand per stage of the registry (:mod:`bitextflow.stages.registry`). Storage settings come
from the environment (see :mod:`bitextflow.storage`); when none are set and the local services run,
their generated settings in ``.local/services.env`` are used (:func:`bitextflow.settings.load_services_env`),
so the commands work right after ``make demo``.
"""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

from bitextflow.catalog.evaluations import (
    find_release,
    labels_jsonl,
    labels_tsv,
    parse_labels,
    release_evaluation,
    release_sample,
)
from bitextflow.catalog.models import record_bicleaner_model
from bitextflow.catalog.redaction import redact_release
from bitextflow.catalog.registry import registry_for
from bitextflow.catalog.releases import list_releases, next_version
from bitextflow.catalog.status import format_status, pair_status
from bitextflow.catalog.takedowns import TAKEDOWNS_KEY, add_takedowns, read_takedowns
from bitextflow.config import PairConfig, discover_pair_configs, load_pair_config
from bitextflow.errors import BitextflowError, ConfigError
from bitextflow.redaction import TakedownEntry
from bitextflow.release.build import build_release
from bitextflow.release.evaluation import calibration, estimate, format_evaluation
from bitextflow.release.evaluation_sample import DEFAULT_SAMPLE_SIZE, DEFAULT_SEED
from bitextflow.settings import load_services_env, pairs_dir
from bitextflow.stages.base import RunContext
from bitextflow.stages.registry import (
    REGISTRY,
    StageRegistry,
    as_inputs,
    run_context,
    run_pipeline,
    run_stage,
    stored_inputs,
    task_inputs,
)
from bitextflow.stages.release import release_inputs
from bitextflow.storage import ObjectStore, StorageSettings


def pair_config(args: argparse.Namespace) -> PairConfig:
    """The pair's YAML, with the run's ``--overrides`` (restricted as a DAG run's are), then the operator's ``--set``."""
    config = load_pair_config(pairs_dir(args.pairs_dir) / f"{args.pair}.yaml")
    return config.with_run_overrides(run_overrides(args)).with_overrides(set_overrides(args))


def run_overrides(args: argparse.Namespace) -> dict[str, object]:
    """``--overrides``: a JSON object, as the DAG's ``overrides`` param (a GPU pod gets the run's param here)."""
    if not getattr(args, "overrides", None):
        return {}
    try:
        loaded = json.loads(args.overrides)
    except ValueError:
        loaded = None
    if not isinstance(loaded, dict):
        raise ConfigError(f"--overrides {args.overrides!r:.80}: expected a JSON object, e.g. '{{\"crawl.max_pages\": 100}}'")
    return loaded


def set_overrides(args: argparse.Namespace) -> dict[str, object]:
    """Each ``--set section.field=value``: the operator's own changes, any option."""
    overrides: dict[str, object] = {}
    for item in args.set or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected section.field=value, e.g. crawl.max_pages=100")
        try:
            overrides[name] = json.loads(value)
        except ValueError:  # a bare word is a string: --set domain.name=legal
            overrides[name] = value
    return overrides


def _context(args: argparse.Namespace, run_id: str | None = None) -> RunContext:
    config = pair_config(args)
    # the names of the operator's --set options only: a value may be a registry URL with a token
    provenance = {"via": "cli", "user": _user(), "overrides": run_overrides(args), "set": sorted(set_overrides(args))}
    return run_context(config, ObjectStore.from_env(config.storage.bucket), run_id or args.run_id, provenance=provenance)


def _user() -> str | None:
    """Who runs the command (None where the user id has no name, as in some containers)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _new_run_id() -> str:
    return "cli__" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S")


def _progress(keys: Sequence[str], stage: str) -> Sequence[str]:
    return tqdm(keys, desc=stage, unit="shard", file=sys.stderr)


def cmd_stage(args: argparse.Namespace) -> int:
    """Every task of the stage one after the other, or (``--inputs``) one task on the inputs given, as a DAG's
    mapped task gets them."""
    ctx = _context(args, args.run_id or _new_run_id())
    stage = REGISTRY.get(args.stage)
    given = getattr(args, "inputs", None)  # a model step has no input shards
    inputs = given or as_inputs(task_inputs(ctx, stage, stored_inputs(ctx, stage)))
    print(json.dumps(run_stage(ctx, stage, inputs, _progress, vars(args)), indent=2))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Every stage of a run in order, each on the outputs of the stage it reads."""
    ctx = _context(args, args.run_id or _new_run_id())
    outputs = run_pipeline(ctx, progress=_progress)
    print(json.dumps(list(outputs.values())[-1], indent=2))
    return 0


def cmd_releases_list(args: argparse.Namespace) -> int:
    config = pair_config(args)
    releases = [info.to_dict() for info in list_releases(ObjectStore.from_env(config.storage.bucket), config.pair)]
    if args.json:
        print(json.dumps(releases, indent=2))
    else:
        for info in releases:
            print(f"v{info['version']:<4} {info['created']}  {info['sentence_pairs']:>8} pairs  {info['uri']}")
    return 0


def cmd_releases_build(args: argparse.Namespace) -> int:
    """Rebuild a run's release files locally from its stage outputs (what `dvc repro` runs)."""
    ctx = _context(args)
    version, _ = next_version(ctx.store, ctx.config.pair, ctx.run_id)
    inputs = release_inputs(ctx, stored_inputs(ctx, REGISTRY.get("release")))
    paths = build_release(Path(args.out), ctx.config.pair, version, *inputs)
    print(json.dumps({"version": version, "files": [str(p) for p in paths]}, indent=2))
    return 0


def cmd_releases_record(args: argparse.Namespace) -> int:
    """Record a published release in the DVC registry (a retry, or a release published without it)."""
    config = pair_config(args)
    store = ObjectStore.from_env(config.storage.bucket)
    releases = {info.version: info for info in list_releases(store, config.pair)}
    if not releases:
        raise BitextflowError(f"{config.pair} has no release yet; run its DAG (or `bitextflow run --pair {config.pair}`) first")
    version = args.version or max(releases)
    if version not in releases:
        raise BitextflowError(f"{config.pair} has no release v{version}; see `bitextflow releases list --pair {config.pair}`")
    entry = registry_for(config, store.settings).record(store, releases[version])
    print(json.dumps({**entry.to_dict(), "get": entry.get_command}, indent=2))
    return 0


def cmd_releases_redact(args: argparse.Namespace) -> int:
    """Publish a release again without what the takedown list names (and personal data screened again), as the pair's
    next version, recorded in the DVC registry as any release."""
    config = pair_config(args)
    store = ObjectStore.from_env(config.storage.bucket)
    info = redact_release(store, config, args.version, read_takedowns(store))
    result = info.to_dict()
    if config.release.record_in_registry:
        result["registry"] = registry_for(config, store.settings).record(store, info).to_dict()
    print(json.dumps(result, indent=2))
    return 0


def cmd_releases_evaluation(args: argparse.Namespace) -> int:
    """What the labels given to a release's sample measure (the figures the Airflow evaluation page shows)."""
    config = pair_config(args)
    store = ObjectStore.from_env(config.storage.bucket)
    release = find_release(store, config.pair, args.version)
    _, labels, evaluation = release_evaluation(store, release, args.size, args.seed)
    if args.export:
        print(labels_tsv(labels) if args.export == "tsv" else labels_jsonl(labels), end="")
    elif args.json:
        print(json.dumps(evaluation.to_dict(), indent=2))
    else:
        print(format_evaluation(evaluation))
    return 0


def cmd_releases_calibrate(args: argparse.Namespace) -> int:
    """The lowest threshold whose estimated precision reaches ``--precision``, and the pairs it keeps."""
    config = pair_config(args)
    store = ObjectStore.from_env(config.storage.bucket)
    release = find_release(store, config.pair, args.version)
    if args.labels:
        try:
            text = Path(args.labels).read_text(encoding="utf-8")
        except OSError as exc:
            raise BitextflowError(
                f"--labels {args.labels}: {exc.strerror}; export them with `bitextflow releases evaluation --export jsonl`"
            ) from exc
        sample = release_sample(store, release, args.size, args.seed)
        evaluation = estimate(sample, parse_labels(text), release.pair, release.version)
    else:
        _, _, evaluation = release_evaluation(store, release, args.size, args.seed)
    print(json.dumps(calibration(evaluation, args.precision), indent=2))
    return 0


def cmd_takedowns_add(args: argparse.Namespace) -> int:
    config = pair_config(args)
    store = ObjectStore.from_env(config.storage.bucket)
    target = {kind: getattr(args, kind) for kind in ("url", "prefix", "host", "text") if getattr(args, kind)}
    when = args.when or datetime.now(UTC).date().isoformat()
    try:
        entry = TakedownEntry.model_validate({**target, "who": args.who, "when": when, "why": args.why})
    except ValueError as exc:
        raise ConfigError(f"takedowns add: {' '.join(str(exc).split())[:300]}") from None
    listed = add_takedowns(store, [entry])
    print(f"{store.uri(TAKEDOWNS_KEY)}: {len(listed)} entries; the next gate of every pair applies them, "
          "`bitextflow releases redact` removes them from a published release")  # fmt: skip
    return 0


def cmd_takedowns_list(args: argparse.Namespace) -> int:
    config = pair_config(args)
    listed = read_takedowns(ObjectStore.from_env(config.storage.bucket))
    sys.stdout.write(listed.to_jsonl().decode("utf-8"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    statuses = []
    for path in discover_pair_configs(pairs_dir(args.pairs_dir)):
        config = load_pair_config(path)
        store = ObjectStore.from_env(config.storage.bucket)
        tags = registry_for(config, store.settings).tags() if config.release.record_in_registry else None
        statuses.append(pair_status(store, config, REGISTRY.names(), tags))
    print(json.dumps(statuses, indent=2) if args.json else format_status(statuses))
    return 0


def cmd_models_record_bicleaner(args: argparse.Namespace) -> int:
    config = pair_config(args)
    entry = record_bicleaner_model(config, StorageSettings.from_env())
    print(f"{config.pair}: {'recorded' if entry.recorded else 'already recorded'}; fetch with `{entry.get_command}`")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    for path in args.paths:
        config = load_pair_config(path)
        print(f"{path}: ok ({config.dag_id})")
    return 0


def build_parser(registry: StageRegistry = REGISTRY) -> argparse.ArgumentParser:
    """The command line: one command per stage of ``registry``, then releases, models, status and validate."""
    parser = argparse.ArgumentParser(
        prog="bitextflow",
        description="Build domain-specific parallel corpora from the web. Stages, in order: " + " -> ".join(registry.names()),
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors (no progress)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def pair_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--pair", required=True, help="language pair, e.g. en-es (include/pairs/<pair>.yaml)")
        p.add_argument("--pairs-dir", help="folder of pair configs (default: include/pairs)")
        p.add_argument("--set", action="append", metavar="SECTION.FIELD=VALUE", help="override a config option")
        p.add_argument(
            "--overrides", metavar="JSON", help='override options with a JSON object {"section.field": value} (--set wins)'
        )

    for stage in registry:
        p = sub.add_parser(stage.name.replace("_", "-"), help=stage.help or f"run the {stage.name} stage of one run")
        pair_options(p)
        if stage.partitioning == "model":
            p.add_argument("--run-id", help="recorded in the model's metadata (default: cli__<UTC timestamp>)")
        else:
            p.add_argument("--run-id", required=True, help="run whose earlier stage outputs to read")
            p.add_argument(
                "--inputs", nargs="+", metavar="KEY",
                help="run one task on these keys, as the DAG's task gets them (default: every task of the stage)",
            )  # fmt: skip
        stage.add_arguments(p)
        p.set_defaults(func=cmd_stage, stage=stage.name)

    p = sub.add_parser("run", help="run every stage in order, without Airflow")
    pair_options(p)
    p.add_argument("--run-id", help="default: cli__<UTC timestamp>")
    p.set_defaults(func=cmd_run)

    releases = sub.add_parser("releases", help="published corpus versions").add_subparsers(dest="action", required=True)
    p = releases.add_parser("list", help="list the releases of a pair")
    pair_options(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_releases_list)
    p = releases.add_parser("build", help="rebuild a run's release files locally from its stage outputs (dvc repro)")
    pair_options(p)
    p.add_argument("--run-id", required=True, help="run whose gate output to build the release from")
    p.add_argument("--out", required=True, help="folder to write the files into")
    p.set_defaults(func=cmd_releases_build)
    p = releases.add_parser("record", help="record a published release in the DVC registry (tag <pair>-v<N>)")
    pair_options(p)
    p.add_argument("--version", type=int, help="release version (default: the latest)")
    p.set_defaults(func=cmd_releases_record)
    p = releases.add_parser(
        "redact", help="publish a release again as a new version without what the takedown list names (docs/publishing.md)"
    )
    pair_options(p)
    p.add_argument("--version", type=int, required=True, help="the release version to redact")
    p.set_defaults(func=cmd_releases_redact)

    def sample_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--version", type=int, help="release version (default: the latest)")
        p.add_argument(
            "--size", type=int, default=DEFAULT_SAMPLE_SIZE, help=f"pairs in the sample (default: {DEFAULT_SAMPLE_SIZE})"
        )
        p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the sample's seed (default: {DEFAULT_SEED})")

    p = releases.add_parser(
        "evaluation", help="precision of a release as the labels of its sample measure it (docs/evaluation.md)"
    )
    pair_options(p)
    sample_options(p)
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the figures as JSON, threshold curve included")
    output.add_argument("--export", choices=("tsv", "jsonl"), help="print every label instead")
    p.set_defaults(func=cmd_releases_evaluation)
    p = releases.add_parser(
        "calibrate", help="the score threshold the labels imply for a precision, and the pairs it keeps (docs/evaluation.md)"
    )
    pair_options(p)
    sample_options(p)
    p.add_argument("--precision", type=float, required=True, help="the share of good pairs wanted, e.g. 0.98")
    p.add_argument("--labels", help="a TSV or JSONL export of labels (default: the labels stored with the release)")
    p.set_defaults(func=cmd_releases_calibrate)

    takedowns = sub.add_parser("takedowns", help=f"the deployment's takedown list ({TAKEDOWNS_KEY} in the bucket)")
    actions = takedowns.add_subparsers(dest="action", required=True)
    p = actions.add_parser("add", help="add a request: one page, URL prefix, host or sentence")
    pair_options(p)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="one page")
    target.add_argument("--prefix", help="every page whose URL starts with this")
    target.add_argument("--host", help="every page of this host and its subdomains")
    target.add_argument("--text", help="every sentence equal to this (case, punctuation and spaces aside)")
    p.add_argument("--who", required=True, help="who asked")
    p.add_argument("--why", required=True, help="on what grounds, e.g. copyright, privacy")
    p.add_argument("--when", help="date of the request, YYYY-MM-DD (default: today, UTC)")
    p.set_defaults(func=cmd_takedowns_add)
    p = actions.add_parser("list", help="print the list (JSON Lines)")
    pair_options(p)
    p.set_defaults(func=cmd_takedowns_list)

    p = sub.add_parser("status", help="state of every pair: last release, last run, counts, failing gates")
    p.add_argument("--pairs-dir", help="folder of pair configs (default: include/pairs)")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per pair")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("validate", help="validate pair config files")
    p.add_argument("paths", nargs="+", type=Path)
    p.set_defaults(func=cmd_validate)

    models = sub.add_parser("models", help="models the stages use").add_subparsers(dest="action", required=True)
    p = models.add_parser(
        "record-bicleaner", help="record a pair's bicleaner-ai model in its DVC registry (model-bicleaner-<pair>-v<N>)"
    )
    pair_options(p)
    p.set_defaults(func=cmd_models_record_bicleaner)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("bitextflow").setLevel(logging.WARNING if args.quiet else logging.INFO)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    load_services_env()
    try:
        return args.func(args)
    except BitextflowError as exc:
        print(f"bitextflow: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
