"""Fix, tag and score sentence pairs with bifixer, bicleaner-hardrules and bicleaner-ai.

Runs INSIDE the bicleaner environment (``.venv-bicleaner`` locally, docker/bicleaner.Dockerfile in a
pod), by path, with the standard library and the three tools only: it cannot import bitextflow, whose
dependencies clash with bicleaner-ai's (numpy < 2, transformers 4.57). The same command runs in both
places:

    python score_pairs.py --model DIR --source en --target es --input IN --output OUT

IN is a TSV ``text_a<TAB>text_b`` (a path or an http(s) URL, e.g. a presigned S3 GET); OUT (a path or a
presigned PUT URL) receives one line per input line, in order (``env:NAME`` for either stands for the
value of the environment variable NAME: the pipeline passes its presigned URLs that way, as every local
user may read a process's arguments in /proc/<pid>/cmdline but not its environment):
``fixed_a<TAB>fixed_b<TAB>hardrules_tag<TAB>bicleaner_score`` where the tag is ``keep`` or the rules
that reject the pair, and the score is calibrated with the model's Platt parameters (fitted on a balanced
sample), so 0.5 means even odds whatever share of negatives the model was trained on. The offline switches are deliberate: fastspell's language identification and
bifixer's sentence resplitting would download models at run time.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

TOOLS_DIR = Path(sys.executable).parent


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not (Path(args.model) / "metadata.yaml").is_file():
        print(
            f"error: no bicleaner-ai model at {args.model} (metadata.yaml missing); build one with `make setup`", file=sys.stderr
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="bitextflow-bicleaner-") as tmp:
        work = Path(tmp)
        pairs = work / "pairs.tsv"
        pairs.write_bytes(_read(_location(args.input)))
        expected = _line_count(pairs)
        fixed, tagged, scored = work / "fixed.tsv", work / "tagged.tsv", work / "scores.txt"
        # Every step keeps one output line per input line (no dedup, no drop of empty or long pairs).
        _run(["bifixer", pairs, fixed, args.source, args.target, "--scol", "1", "--tcol", "2", "--ignore_segmentation",
              "--ignore_duplicates", "--ignore_empty", "--ignore_long", "-q"])  # fmt: skip
        _run(["bicleaner-hardrules", fixed, tagged, "-s", args.source, "-t", args.target, "--scol", "1", "--tcol", "2",
              "--annotated_output", "--run_all_rules", "--disable_lang_ident", "--disable_lm_filter", "--disable_porn_removal",
              "-q"])  # fmt: skip
        _run(["bicleaner-ai-classify", fixed, scored, args.model, "--scol", "1", "--tcol", "2", "--score_only", "--calibrated",
              "--disable_hardrules", "--disable_lm_filter", "--disable_porn_removal", "--offline", "-q"])  # fmt: skip
        rows = []
        for fixed_line, tagged_line, score_line in zip(_lines(fixed), _lines(tagged), _lines(scored), strict=True):
            text_a, text_b = (fixed_line.split("\t") + [""])[:2]
            rows.append(f"{text_a}\t{text_b}\t{tagged_line.split(chr(9))[-1]}\t{score_line.strip()}\n")
        if len(rows) != expected:
            print(f"error: {expected} pairs in, {len(rows)} scored; a tool dropped lines", file=sys.stderr)
            return 1
        _write(_location(args.output), "".join(rows).encode("utf-8"))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="bicleaner-ai model folder (with metadata.yaml)")
    parser.add_argument("--source", required=True, help="language code of the first column")
    parser.add_argument("--target", required=True, help="language code of the second column")
    parser.add_argument("--input", required=True, help="TSV of pairs: a path, an http(s) URL or env:VARIABLE holding one")
    parser.add_argument(
        "--output", required=True, help="where the scored TSV goes: a path, an http(s) PUT URL or env:VARIABLE holding one"
    )
    return parser


def _run(command: list) -> None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [str(TOOLS_DIR / command[0]), *map(str, command[1:])]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-15:])
        raise SystemExit(f"error: {Path(command[0]).name} failed (exit {result.returncode}):\n{tail}")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _line_count(path: Path) -> int:
    return len(_lines(path))


def _location(value: str) -> str:
    """A path or URL as given, or the value of the variable ``env:NAME`` names."""
    if not value.startswith("env:"):
        return value
    name = value.removeprefix("env:")
    if not os.environ.get(name):
        raise SystemExit(f"error: {value} names the environment variable {name}, which is not set")
    return os.environ[name]


def _read(source: str) -> bytes:
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=300) as response:  # noqa: S310 - presigned URL given by the caller
            return response.read()
    return Path(source).read_bytes()


def _write(target: str, data: bytes) -> None:
    if target.startswith(("http://", "https://")):
        # The content type is part of the URL's signature (bitextflow.storage.ObjectStore.presigned_url).
        headers = {"Content-Type": "application/octet-stream"}
        request = urllib.request.Request(target, data=data, method="PUT", headers=headers)  # noqa: S310 - presigned URL given by the caller
        with urllib.request.urlopen(request, timeout=300):  # noqa: S310
            return
    Path(target).write_bytes(data)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
