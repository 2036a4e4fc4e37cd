"""``bitextflow-local site multi``: build a web of many small sites (:mod:`.multisite`), print the crawl overrides
that reach it, and serve it if asked."""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
import time
from pathlib import Path

from bitextflow.errors import BitextflowError, StageError
from bitextflow_local.localsite.build import build_site
from bitextflow_local.localsite.multisite import (
    DEFAULT_LANGUAGES,
    DEFAULT_PORT,
    MAX_SITES,
    SITES_DIRNAME,
    WEB_FILENAME,
    Web,
    build_web,
)
from bitextflow_local.localsite.server import SiteServers, serve_sites_forever


def add_command(site_commands: argparse._SubParsersAction) -> None:
    """Add `multi` to the `site` commands; it runs :func:`run_command`."""
    multi = site_commands.add_parser(
        "multi",
        help="build a web of many small bilingual sites from the local site, each on its own loopback address",
        description="Build a web of --sites sites (deterministic for a --seed), print the crawl overrides that reach "
        "it, and with --serve serve it until SIGINT/SIGTERM. Site k is served on 127.0.0.(k + 2).",
    )
    multi.add_argument("--sites", type=int, required=True, help=f"how many sites (1 to {MAX_SITES})")
    multi.add_argument("--out", type=Path, required=True, help="folder of the web: sites/<address>/ and web.json")
    multi.add_argument("--seed", type=int, default=0, help="which documents go to which site (default 0)")
    multi.add_argument(
        "--languages",
        type=lambda value: [lang.strip() for lang in value.split(",") if lang.strip()],
        default=list(DEFAULT_LANGUAGES),
        help=f"comma-separated languages of the sites (default {','.join(DEFAULT_LANGUAGES)})",
    )
    multi.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"TCP port of every site (default {DEFAULT_PORT}; 0 = any free port, with --serve)",
    )
    multi.add_argument("--serve", action="store_true", help="then serve the sites until SIGINT or SIGTERM")
    multi.add_argument(
        "--full",
        action="store_true",
        help="deal the documents of the full local site (man pages, changelogs, four manuals: more material for many "
        "sites; built on first use) instead of the default one",
    )
    multi.add_argument("--cache", type=Path, default=None, help="cache directory of the local site (as for site build)")
    multi.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Build the web, print where it is and the crawl overrides, serve it if asked; errors are one line on stderr."""
    try:
        if not 0 <= args.port < 65536 or (args.port == 0 and not args.serve):
            raise StageError(f"--port {args.port}: give a TCP port (1 to 65535; 0, any free port, goes with --serve)")
        started = time.monotonic()
        source = build_site(args.cache, full=args.full)
        web = build_web(source, args.out, args.sites, args.seed, args.languages)
        pairs = ", ".join(
            f"{a}-{b} {sum(len(site.truth.pairs(a, b)) for site in web.sites)}"
            for a, b in itertools.combinations(web.languages, 2)
        )
        print(f"web of {len(web.sites)} sites ready in {time.monotonic() - started:.1f} s: {web.root / SITES_DIRNAME}")
        print(f"pages: {web.pages} (translation pairs: {pairs}); truth: {web.root / WEB_FILENAME}")
        if not args.serve:
            _print_overrides(web, args.port)
            return 0
        docroots = {site.address: site.docroot for site in web.sites}
        serve_sites_forever(docroots, args.port, on_ready=lambda servers: _announce(web, servers))
    except BitextflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _print_overrides(web: Web, port: int) -> None:
    """The pair-config overrides that crawl the whole web, as `bitextflow run` options."""
    seeds = shlex.quote(f"crawl.seeds={json.dumps(web.seeds(port))}")
    allowed = shlex.quote(f"crawl.allow_private_addresses={json.dumps(web.allowed_addresses(port))}")
    print(f"crawl.allow_private_addresses: {', '.join(web.allowed_addresses(port))}")
    print(f"overrides: --set {seeds} --set {allowed}", flush=True)


def _announce(web: Web, servers: SiteServers) -> None:
    _print_overrides(web, servers.port)
    print(f"serving {len(web.sites)} sites on port {servers.port} (stop with Ctrl-C or SIGTERM)", flush=True)
