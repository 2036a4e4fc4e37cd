"""Do sentence vectors lift text quality (bitextflow.extract.text_quality) towards the human level? The experiment.

Two probes, both a logistic regression on multilingual-e5-small vectors (the project's encoder,
:func:`bitextflow.models.encoder.shared_encoder`, int8 ONNX on the CPU unless ``--runtime`` says otherwise):

- ``diagnostic`` (never shipped: trained on the evaluation data, whose licence is evaluation only): leave one language
  out on the MaCoCu annotations (annotator 1; bg, hr, is, mk, mt): fit on four languages' keep labels, score the
  fifth, on (a) the vectors, (b) the vectors and the 12 weighted terms of :func:`~bitextflow.extract.text_quality.terms`
  (and, for comparison, (c) the terms alone). It says what the vectors can carry. C from ``C_GRID`` is reported for
  each; ``keep`` is probability >= 0.5 (class-balanced fit), never when the identifier names another language.
- ``shippable``: fit on data the project may ship, none of it from the annotations: positives are running text
  (paragraphs of the local Debian documentation site, ``$BITEXTFLOW_CACHE/localsite/site``, built by
  ``bitextflow-local prepare``: Debian Reference and the installation guide in en, es, fr, de; and Tatoeba sentences,
  CC-BY 2.0 FR, joined 3-6 to a paragraph, from ``shared/eval/tatoeba*``: 57 languages); negatives are made from the
  same material (:data:`NEGATIVE_KINDS`: shuffled word order, keyword lists, menus of short titles joined by
  separators, tables of numbers, truncated fragments, a paragraph followed by another language's, lower-cased run-ons
  without punctuation, running text followed by a menu). C by 4-fold cross-validated log-loss on that set. Scored on
  the annotations per language and macro; and mixed with the surface-term score: ``(1 - a) * score + a * p``, keep
  from 0.5, ``a`` chosen on four languages (the surface weights and threshold of that fold, chosen without the fifth by
  ``bench/text_quality.py``'s search) and scored on the fifth.

Metric as in ``bench/text_quality.py``: binary macro F1 of keep (PT or RTE) against annotator 1.

    .venv/bin/python bench/train_text_quality_probe.py [--data ../shared/eval/macocu_text_quality] [--cache DIR] [--json]

``--cache DIR`` keeps the vectors (``.npy``, keyed by a digest of the texts and the encoder) so a second run does not
encode again. It writes no model: docs/text-quality.md ("What we tried") has the figures and why none is shipped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_quality as bench  # noqa: E402  (bench/text_quality.py: reading, the metric, the surface search)
from bitextflow.extract import text_quality as tq  # noqa: E402
from bitextflow.settings import cache_dir  # noqa: E402
from machine import cpu_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
C_GRID = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
MIX_GRID = np.round(np.linspace(0.0, 1.0, 21), 2)
NEGATIVE_KINDS = ("shuffled", "keywords", "menu", "numbers", "fragment", "other_language", "run_on", "text_and_menu")
DEBIAN_PER_LANGUAGE = 700
TATOEBA_PARAGRAPHS_PER_LANGUAGE = 16
SEED = 13
WEIGHTED = [tq.TERMS.index(name) for name in tq.WEIGHTS]
OTHER = tq.TERMS.index("other")
_SPACES = re.compile(r"\s+")


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def debian_paragraphs(site: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per language: the site's paragraphs (``<p>`` of 8 words or more) and its short titles (headings, links)."""
    import lxml.html

    paragraphs: dict[str, list[str]] = {}
    titles: dict[str, list[str]] = {}
    pages = [(p, p.name.split(".")[-2]) for p in sorted((site / "reference").glob("*.*.html"))]
    pages += [(p, p.parent.name) for p in sorted((site / "install").glob("*/*.html"))]
    for page, lang in pages:
        root = lxml.html.parse(str(page)).getroot()
        for p in root.iter("p"):
            text = _clean(p.text_content())
            if len(text.split()) >= 8:
                paragraphs.setdefault(lang, []).append(text)
        for node in root.iter("h1", "h2", "h3", "a", "dt"):
            text = re.sub(r"^[\d.]+\s*", "", _clean(node.text_content()))
            if 1 <= len(text.split()) <= 5:
                titles.setdefault(lang, []).append(text)
    return {k: sorted(set(v)) for k, v in paragraphs.items()}, {k: sorted(set(v)) for k, v in titles.items()}


def tatoeba_sentences(shared: Path) -> dict[str, list[str]]:
    """Per language (Tatoeba's three-letter codes): its sentences, from both Tatoeba folders."""
    found: dict[str, list[str]] = {}
    for path in sorted((shared / "tatoeba").glob("tatoeba.*-eng.*")) + sorted((shared / "tatoeba_lid").glob("tatoeba.*")):
        lang = path.name.split(".")[-1]
        lines = [_clean(line) for line in path.read_text(encoding="utf-8").splitlines()]
        found.setdefault(lang, []).extend(line for line in lines if line)
    return {k: sorted(set(v)) for k, v in found.items()}


def _negative(kind: str, text: str, rng: random.Random, pool: list[str], titles: list[str], foreign: list[str]) -> str:
    tokens = text.split()
    if kind == "shuffled":
        rng.shuffle(tokens)
        return " ".join(tokens)
    if kind == "keywords":
        words = [w.strip(".,;:!?()\"'") for w in " ".join(rng.sample(pool, 3)).split()]
        words = [w for w in words if len(w) > 2]
        picked = rng.sample(words, min(len(words), rng.randint(5, 15)))
        if rng.random() < 0.5:
            picked = [" ".join(rng.sample(words, 2)) for _ in range(rng.randint(4, 10))]
        return rng.choice((", ", " ", "; ", " - ")).join(picked)
    if kind == "menu":
        return rng.choice((" | ", " • ", " · ", " / ", " ", " » ", "\n")).join(rng.sample(titles, rng.randint(3, 10)))
    if kind == "numbers":
        cells = []
        for _ in range(rng.randint(2, 5)):
            cells.append(rng.choice(titles).split()[0])
            cells += [f"{rng.uniform(0, 1000):.{rng.randint(0, 2)}f}" for _ in range(rng.randint(2, 6))]
        return rng.choice((" ", "\t", " | ")).join(cells)
    if kind == "fragment":
        start = rng.randint(1, max(1, len(tokens) // 2))
        return " ".join(tokens[start : start + rng.randint(3, max(4, len(tokens) // 2))]).rstrip(".!?")
    if kind == "other_language":
        return text + " " + rng.choice(foreign)
    if kind == "run_on":
        return re.sub(r"[^\w\s]", "", " ".join(rng.sample(pool, 3)).lower())
    if kind == "text_and_menu":
        return text + " " + rng.choice((" | ", " • ", " ")).join(rng.sample(titles, rng.randint(6, 14)))
    raise ValueError(kind)


def training_set(site: Path, shared: Path, seed: int = SEED) -> tuple[list[str], np.ndarray, list[str]]:
    """(texts, keep 0/1, what each text is): running text and the synthetic non-running text of :func:`_negative`."""
    rng = random.Random(seed)
    paragraphs, titles = debian_paragraphs(site)
    sentences = tatoeba_sentences(shared)
    running: list[tuple[str, str]] = []  # (text, language)
    for lang, found in sorted(paragraphs.items()):
        picked = rng.sample(found, min(DEBIAN_PER_LANGUAGE, len(found)))
        running += [(text, lang) for text in picked]
        # some short documents: 2-3 paragraphs in a row
        running += [(" ".join(rng.sample(found, rng.randint(2, 3))), lang) for _ in range(DEBIAN_PER_LANGUAGE // 7)]
    tatoeba_paragraphs: dict[str, list[str]] = {}
    for lang, found in sorted(sentences.items()):
        for _ in range(TATOEBA_PARAGRAPHS_PER_LANGUAGE):
            tatoeba_paragraphs.setdefault(lang, []).append(" ".join(rng.sample(found, rng.randint(3, 6))))
        running += [(text, lang) for text in tatoeba_paragraphs[lang]]
    texts, labels, kinds = [], [], []
    for text, _lang in running:
        texts.append(text)
        labels.append(1)
        kinds.append("running")
    all_titles = [t for found in titles.values() for t in found]
    for text, lang in running:
        kind = rng.choice(NEGATIVE_KINDS)
        pool = paragraphs.get(lang) or tatoeba_paragraphs[lang]
        foreign = [t for other, found in tatoeba_paragraphs.items() if other != lang for t in found[:4]]
        texts.append(_negative(kind, text, rng, pool, titles.get(lang, all_titles), foreign))
        labels.append(0)
        kinds.append(kind)
    return texts, np.array(labels), kinds


def encode(texts: list[str], runtime: str, cache: Path | None) -> tuple[np.ndarray, float]:
    """The vectors of ``texts`` ("query: " prefix, as the encoder embeds) and texts per second (0 when cached)."""
    from bitextflow.models.encoder import shared_encoder

    encoder = shared_encoder(None, "cpu", runtime)
    key = hashlib.blake2b(json.dumps([encoder.identity(), texts]).encode(), digest_size=10).hexdigest()
    if cache is not None and (cache / f"{key}.npy").exists():
        return np.load(cache / f"{key}.npy"), 0.0
    started = time.perf_counter()
    vectors = encoder.encode(texts)
    speed = len(texts) / (time.perf_counter() - started)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(cache / f"{key}.npy", vectors)
    return vectors, speed


def _regression(c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=5000, class_weight="balanced")


def choose_c(features: np.ndarray, targets: np.ndarray) -> tuple[float, dict[str, float]]:
    from sklearn.model_selection import StratifiedKFold

    losses: dict[str, float] = {}
    for c in C_GRID:
        total = []
        for train, test in StratifiedKFold(4, shuffle=True, random_state=SEED).split(features, targets):
            p = np.clip(_regression(c).fit(features[train], targets[train]).predict_proba(features[test])[:, 1], 1e-7, 1 - 1e-7)
            total.append(-(targets[test] * np.log(p) + (1 - targets[test]) * np.log(1 - p)))
        losses[str(c)] = round(float(np.concatenate(total).mean()), 5)
    return min(C_GRID, key=lambda c: losses[str(c)]), losses


def _f1(gold: np.ndarray, keep: np.ndarray, terms: np.ndarray) -> float:
    return bench.binary_macro_f1(gold, keep & ~(terms[:, OTHER] > 0))


def _summary(figures: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in figures.items()} | {"macro": round(float(np.mean(list(figures.values()))), 4)}


def diagnostic(gold: dict[str, dict[str, np.ndarray]]) -> dict[str, dict]:
    """Leave one language out ON THE ANNOTATIONS (never shipped): per features and C, F1 per language and macro."""
    from sklearn.metrics import roc_auc_score

    langs = sorted(gold)
    views = {
        "terms": lambda g: g["terms"][:, WEIGHTED],
        "vectors": lambda g: g["vectors"],
        "vectors+terms": lambda g: np.hstack([g["vectors"], g["terms"][:, WEIGHTED]]),
    }
    out: dict[str, dict] = {}
    for name, view in views.items():
        for c in (0.3, 1.0, 3.0, 10.0):
            f1s, aucs = {}, {}
            for held in langs:
                rest = [lang for lang in langs if lang != held]
                model = _regression(c).fit(
                    np.vstack([view(gold[r]) for r in rest]), np.concatenate([gold[r]["gold"] for r in rest])
                )
                p = model.predict_proba(view(gold[held]))[:, 1]
                f1s[held] = _f1(gold[held]["gold"], p >= 0.5, gold[held]["terms"])
                aucs[held] = float(roc_auc_score(gold[held]["gold"], p))
            out[f"{name} C={c:g}"] = {"f1": _summary(f1s), "auc": _summary(aucs)}
            print(
                f"diagnostic {name:14} C={c:<4g} F1 {out[f'{name} C={c:g}']['f1']}  AUC macro {out[f'{name} C={c:g}']['auc']['macro']}"
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/eval/macocu_text_quality")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared/eval")
    parser.add_argument("--site", type=Path, default=None, help="the local site (default: $BITEXTFLOW_CACHE/localsite/site)")
    parser.add_argument("--runtime", default="onnx-int8")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    site = args.site or cache_dir("localsite") / "site"
    langs = sorted(p.name.split(".")[1] for p in args.data.glob("annotator1.*.tsv"))
    if not langs or not (site / "reference").is_dir():
        print(f"bench/train_text_quality_probe.py: skipped: no annotations in {args.data} or no site at {site}", file=sys.stderr)
        return 0

    gold: dict[str, dict[str, np.ndarray]] = {}
    gold_speed = []
    for lang in langs:
        rows = bench.read(args.data / f"annotator1.{lang}.tsv")
        texts = [text for text, _label in rows]
        vectors, speed = encode(texts, args.runtime, args.cache)
        gold_speed.append((len(texts), speed))
        found = [tq.terms(text, lang) for text in texts]
        gold[lang] = {
            "vectors": vectors,
            "terms": np.array([[f[name] for name in tq.TERMS] for f in found]),
            "gold": bench.keep([label for _text, label in rows]),
        }
    diag = diagnostic(gold)

    texts, targets, kinds = training_set(site, args.shared)
    vectors, train_speed = encode(texts, args.runtime, args.cache)
    print(f"training set: {len(texts)} texts, {Counter(kinds)}")
    c, losses = choose_c(vectors, targets)
    model = _regression(c).fit(vectors, targets)
    coef, intercept = model.coef_[0], float(model.intercept_[0])
    started = time.perf_counter()
    for _ in range(10):
        _ = 1 / (1 + np.exp(-(gold[langs[0]]["vectors"] @ coef + intercept)))
    probe_speed = 10 * len(gold[langs[0]]["vectors"]) / (time.perf_counter() - started)
    probability = {lang: 1 / (1 + np.exp(-(g["vectors"] @ coef + intercept))) for lang, g in gold.items()}
    shippable = _summary({lang: _f1(g["gold"], probability[lang] >= 0.5, g["terms"]) for lang, g in gold.items()})
    from sklearn.metrics import roc_auc_score

    shippable_auc = _summary({lang: float(roc_auc_score(g["gold"], probability[lang])) for lang, g in gold.items()})
    kept = {lang: round(float((p >= 0.5).mean()), 3) for lang, p in probability.items()}
    print(f"shippable probe (C={c:g}, cv log-loss {losses}): F1 {shippable}, AUC {shippable_auc}, kept share {kept}")

    # the surface score of each fold (weights and threshold chosen without the held-out language), mixed with p
    rows = {(n, lang): bench.read(args.data / f"annotator{n}.{lang}.tsv") for n in (1, 2) for lang in langs}
    found = {lang: {text: tq.terms(text, lang) for n in (1, 2) for text, _label in rows[n, lang]} for lang in langs}
    sets = {(n, lang): bench.Labelled(rows[n, lang], found[lang]) for n in (1, 2) for lang in langs}
    mix: dict[str, float] = {}
    surface: dict[str, float] = {}
    alphas: dict[str, float] = {}
    for held in langs:
        weights, threshold, _objective = bench.choose(
            [s for (n, lang), s in sets.items() if lang != held], bench.coordinate_orders(1)[0]
        )
        score = {lang: 2.0 ** (-(sets[1, lang].matrix @ weights) / threshold) for lang in langs}

        def f1(lang: str, a: float, score=score) -> float:
            return _f1(gold[lang]["gold"], (1 - a) * score[lang] + a * probability[lang] >= 0.5, gold[lang]["terms"])

        rest = [lang for lang in langs if lang != held]
        alphas[held] = float(max(MIX_GRID, key=lambda a: (np.mean([f1(lang, a) for lang in rest]), -a)))
        mix[held], surface[held] = f1(held, alphas[held]), f1(held, 0.0)
    mixed, ours = _summary(mix), _summary(surface)
    print(f"surface terms (LOLO): {ours}")
    print(f"mixed (LOLO, mixing weights {alphas}): {mixed}")
    encode_speed = sum(n for n, _s in gold_speed) / sum(n / s for n, s in gold_speed) if all(s for _n, s in gold_speed) else 0.0
    print(
        f"encoding: {encode_speed:.1f} annotated texts/s, {train_speed:.1f} training texts/s; probe: {probe_speed:,.0f} vectors/s"
    )
    if args.json:
        print(
            json.dumps(
                {
                    "diagnostic_trained_on_the_evaluation_data": diag,
                    "shippable": {
                        "f1": shippable,
                        "auc": shippable_auc,
                        "kept_share": kept,
                        "c": c,
                        "cv_log_loss": losses,
                        "training": dict(Counter(kinds)),
                    },
                    "surface_lolo": ours,
                    "mixed_lolo": {"f1": mixed, "mixing_weight": alphas},
                    "texts_per_s": {"encode_annotated": round(encode_speed, 1), "encode_training": round(train_speed, 1)},
                    "probe_vectors_per_s": round(probe_speed),
                    "cpu": cpu_model(),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
