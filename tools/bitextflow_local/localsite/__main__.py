"""Command line: `bitextflow-local site build|serve|stats`, also `python -m bitextflow_local.localsite build|serve|stats`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bitextflow.errors import BitextflowError
from bitextflow_local.localsite.build import DEFAULT_LANGUAGES, Site, build_site
from bitextflow_local.localsite.composition import measure
from bitextflow_local.localsite.gnome_help import build_help_site
from bitextflow_local.localsite.server import SiteServer, serve_forever
from bitextflow_local.localsite.truth import Truth

DEFAULT_PORT = 8765


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; user errors print one line on stderr and exit with status 1."""
    parser = argparse.ArgumentParser(
        prog="python -m bitextflow_local.localsite", description="Build and serve the local multilingual test site."
    )
    add_commands(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the command that :func:`add_commands`' arguments parsed into ``args``."""
    try:
        started = time.monotonic()
        if args.gnome_help:
            site = build_help_site(args.languages or DEFAULT_LANGUAGES, args.cache)
        else:
            site = build_site(args.cache, args.languages, full=args.full)
        if args.command == "build":
            _print_summary(site, time.monotonic() - started)
        elif args.command == "stats":
            _print_composition(site, args.pair)
        else:
            serve_forever(site.docroot, args.port, on_ready=_announce)
    except BitextflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def add_commands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """Add the commands build, serve and stats, with their options, to ``parser``; returns them, for more commands."""
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="download the packages if needed and build the site")
    serve = commands.add_parser("serve", help="build if needed, then serve on 127.0.0.1 until SIGINT/SIGTERM")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 = any free port)")
    stats = commands.add_parser(
        "stats", help="build if needed, then print the site's composition for a pair as JSON (pages, depths, bfs order)"
    )
    stats.add_argument("--pair", default="en-es", help="language pair whose translated pages are located (default en-es)")
    for command in (build, serve, stats):
        command.add_argument(
            "--cache",
            type=Path,
            default=None,
            help="cache directory (default the cache folder localsite, ~/.cache/bitextflow/localsite unless $BITEXTFLOW_CACHE "
            "or $XDG_CACHE_HOME say otherwise; localsite-full with --full)",
        )
        command.add_argument(
            "--languages",
            type=lambda value: [lang.strip() for lang in value.split(",") if lang.strip()],
            default=None,
            help=f"comma-separated language codes (default {','.join(DEFAULT_LANGUAGES)}; with --full, all of its languages)",
        )
        command.add_argument(
            "--full",
            action="store_true",
            help="the full site of the crawl benchmark: every language Debian ships the manuals in, language portals "
            "(default cache folder localsite-full)",
        )
        command.add_argument(
            "--gnome-help",
            action="store_true",
            help="GNOME's desktop help (Debian's gnome-user-docs, about 40 languages, Persian among them) in --languages "
            "instead of the Debian manuals, at /help/<lang>/ (default cache folder localsite-help-<languages>)",
        )
    return commands


def _print_summary(site: Site, seconds: float) -> None:
    truth = Truth.load(site.cache_dir)
    print(f"local site ready in {seconds:.1f} s: {site.docroot}")
    print("pages: " + ", ".join(f"{lang} {count}" for lang, count in site.pages.items()))
    first = "en" if "en" in site.languages else site.languages[0]
    pair_counts = ", ".join(f"{first}-{other} {len(truth.pairs(first, other))}" for other in site.languages if other != first)
    print(f"truth: {site.truth_path}" + (f" (translation pairs: {pair_counts})" if pair_counts else ""))


def _print_composition(site: Site, pair: str) -> None:
    source, _, target = pair.partition("-")
    if source not in site.languages or target not in site.languages:
        raise BitextflowError(f"the site has {', '.join(site.languages)}; --pair {pair} is not among them")
    print(json.dumps(measure(site.docroot, Truth.load(site.cache_dir), (source, target)).as_dict()))


def _announce(server: SiteServer) -> None:
    print(f"serving the local site at {server.base_url} (stop with Ctrl-C or SIGTERM)", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
