"""``bitextflow-local``: the local services, the local site and the demo, from one command.

- ``bitextflow-local services up|down|status``: the local stack (SeaweedFS, the local site, Airflow) of
  the project home, in the background (:mod:`bitextflow_local.services.stack`); ``up --executor celery
  [--workers N]`` is its distributed profile (:mod:`bitextflow_local.services.celery_profile`);
- ``bitextflow-local site build|serve|stats``: the local multilingual site
  (:mod:`bitextflow_local.localsite`, also ``python -m bitextflow_local.localsite``);
- ``bitextflow-local site multi --sites N --out DIR [--serve]``: a web of N small sites carved out of it, each on
  its own loopback address (:mod:`bitextflow_local.localsite.multisite_command`);
- ``bitextflow-local site ccindex [--sites N]``: a generated Common Crawl (WARC files and a columnar index with its
  schema) in the local S3, for a run from an index (:mod:`bitextflow_local.localsite.ccindex_command`);
- ``bitextflow-local demo [PAIR_CONFIG] [--run-id ID] [--set SECTION.FIELD=VALUE ...]``: run the en-es DAG (or the
  config's) on the running stack and report
  the release (:mod:`bitextflow_local.services.demo`);
- ``bitextflow-local prepare [PAIR_CONFIG ...] [--all] [--list]``: build the dictionaries, models and
  environments that pair configs use (:mod:`bitextflow_local.prepare`; `make demo`, `make models`);
- ``bitextflow-local report [--pair P] [--version N]``: a release's HTML report, saved for a browser
  (:mod:`bitextflow_local.services.report`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bitextflow.settings import project_home


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def cmd_services(args: argparse.Namespace) -> int:
    from bitextflow_local.services import stack

    if args.action != "up" and (args.executor or args.workers):
        raise SystemExit("bitextflow-local: error: --executor and --workers go with `services up` only")
    if args.workers and args.executor != "celery":
        raise SystemExit("bitextflow-local: error: --workers needs --executor celery (LocalExecutor runs tasks in the scheduler)")
    return stack.main(args.action, project_home(), args.executor or "local", args.workers or 2)


def cmd_site(args: argparse.Namespace) -> int:
    from bitextflow_local.localsite.__main__ import run

    return run(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from bitextflow.cli import set_overrides
    from bitextflow_local.services import demo

    return demo.main(args.config, args.run_id, set_overrides(args))


def cmd_report(args: argparse.Namespace) -> int:
    from bitextflow_local.services import report

    return report.main(args.pair, args.version)


def cmd_prepare(args: argparse.Namespace) -> int:
    from bitextflow_local import prepare

    return prepare.main(args.configs, args.all, args.list)


def build_parser() -> argparse.ArgumentParser:
    from bitextflow_local.localsite import ccindex_command, multisite_command
    from bitextflow_local.localsite.__main__ import add_commands

    parser = argparse.ArgumentParser(
        prog="bitextflow-local", description="Local services, the local multilingual site and the demo of bitextflow."
    )
    sub = parser.add_subparsers(dest="subcommand", required=True)
    services = sub.add_parser("services", help="local S3 (SeaweedFS), site and Airflow for the demo, in the background")
    services.add_argument("action", choices=["up", "down", "status"])
    services.add_argument(
        "--executor",
        choices=["local", "celery"],
        help="local (default): LocalExecutor on SQLite; celery: CeleryExecutor on a private PostgreSQL and Redis "
        "with Celery workers (docs/scaling.md)",
    )
    services.add_argument("--workers", type=_positive, help="Celery workers, each its own process (default 2)")
    services.set_defaults(func=cmd_services)
    site = sub.add_parser(
        "site",
        help="build, serve or measure the local multilingual site",
        description="Build and serve the local multilingual test site.",
    )
    site.set_defaults(func=cmd_site)
    site_commands = add_commands(site)
    multisite_command.add_command(site_commands)
    ccindex_command.add_command(site_commands)
    demo = sub.add_parser("demo", help="trigger a pair's DAG (en-es) on the running services, follow it and report the release")
    demo.add_argument(
        "config", nargs="?", type=Path, help="pair config, relative to the project home (default include/pairs/en-es.yaml)"
    )
    demo.add_argument("--run-id", help="the run's id (default: Airflow's manual__<time>)")
    demo.add_argument(
        "--set", action="append", metavar="SECTION.FIELD=VALUE", help="override an option for this run (as a DAG run's overrides)"
    )
    demo.set_defaults(func=cmd_demo)
    report = sub.add_parser(
        "report",
        help="save a release's HTML report under .local/reports and print its file:// URI, for a browser",
        description="Download a release's report.html (self-contained) from the local S3 into .local/reports/ and print "
        "the file:// URI a browser opens.",
    )
    report.add_argument("--pair", default="en-es", help="language pair (default en-es)")
    report.add_argument("--version", type=_positive, help="release version (default: the latest)")
    report.set_defaults(func=cmd_report)
    prepare = sub.add_parser(
        "prepare",
        help="build what pair configs use: the local site, dictionaries, models, the bicleaner environment",
        description="Build, once, what the pair configs use beyond the Python environment (each step is a no-op when "
        "built). `make demo` runs it for the demo's config, `make models` with --all.",
    )
    prepare.add_argument("configs", nargs="*", type=Path, help="pair configs (default: every one in include/pairs)")
    prepare.add_argument("--all", action="store_true", help="every step, also those no pair config uses (`make models`)")
    prepare.add_argument("--list", action="store_true", help="list the steps and whether they would be built; build nothing")
    prepare.set_defaults(func=cmd_prepare)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from bitextflow.errors import ConfigError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as error:  # bad input named in one line (a --set that is no section.field=value, a bad config)
        print(f"bitextflow-local: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
