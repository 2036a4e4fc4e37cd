"""How well a sample of a page's sentences stands for the whole page's domain distribution, and what it costs.

The monolingual stage gives a document no classified sentence pair came from (a page without a translation) the
domain classifier's mean distribution over at most ``mono.classifier_sentences`` of its sentences, spread evenly from
the first to the last (:func:`bitextflow.classify.inference.spread`). This script measures that choice on real
documents of known domain: the offline labelled sets (docs/classify.md), where each "site" is one document of a Debian
package (a Debian Reference chapter, an installation-guide page, a Bible book, a licence, a fortunes file) and its
sentences are in page order. For ``--documents`` of them per language (drawn with ``random.Random(0)`` among those of
at least 16 sentences), English and Spanish, it embeds and classifies every sentence with the en-es pair's shipped
classifier (``domain.classifier: offline``, the probe on the int8 encoder's vectors), and compares, for each sample
size N, the mean over the N spread sentences with the mean over all of them:

- ``l1_to_all``: the L1 distance between the two distributions (0..2), averaged over the documents;
- ``argmax_agrees``: the share of documents whose most probable label is the same;
- ``label_accuracy``: the share whose most probable label is the document's own (``all``: with every sentence).

Cost: every sentence is embedded once without the embedding cache and the encoder's rate is measured on that pass
(``sentences_per_s``, wall time, after a warm-up); ``ms_per_document`` is a sample's distinct sentences over that rate.

Usage, from the project root::

    .venv/bin/python bench/document_domains.py [--json] [--documents N] [--sizes 4,8,16,32]

With ``--json`` the last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from bitextflow.classify.data import read_labelled
from bitextflow.classify.inference import spread
from bitextflow.classify.model import load_model
from bitextflow.classify.offline import offline_set
from bitextflow.classify.offline_model import offline_classifier
from bitextflow.errors import BitextflowError
from machine import cpu_model

PAIR = "en-es"
LANGUAGES = ("en", "es")
MIN_SENTENCES = 16


def documents(language: str, count: int) -> list[tuple[str, list[str]]]:
    """``count`` documents of the offline set of ``language`` with at least MIN_SENTENCES distinct sentences, as
    (label, sentences in page order)."""
    by_site: dict[str, list[str]] = defaultdict(list)
    labels: dict[str, str] = {}
    for sentence in read_labelled(offline_set(language)):
        by_site[sentence.site].append(sentence.text)
        labels[sentence.site] = sentence.label
    sites = sorted(site for site, texts in by_site.items() if len(dict.fromkeys(texts)) >= MIN_SENTENCES)
    chosen = sorted(random.Random(0).sample(sites, min(count, len(sites))))
    return [(labels[site], list(dict.fromkeys(by_site[site]))) for site in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--documents", type=int, default=40, help="documents per language (default 40)")
    parser.add_argument("--sizes", default="1,4,8,16,32", help="sample sizes N, comma-separated (default 1,4,8,16,32)")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    try:
        classifier = load_model(offline_classifier(PAIR.split("-")[0]), PAIR)[0]
        by_language = {language: documents(language, args.documents) for language in LANGUAGES}
    except BitextflowError as error:
        print(f"document_domains: {error}", file=sys.stderr)
        return 2
    pages = [page for language in LANGUAGES for page in by_language[language]]
    texts = list(dict.fromkeys(text for _, sentences in pages for text in sentences))
    classifier.predict_proba(texts[:64])  # warm-up: the encoder's first batches pick their kernels
    started = time.perf_counter()
    probabilities = dict(zip(texts, classifier.predict_proba(texts), strict=True))
    rate = len(texts) / (time.perf_counter() - started)
    columns = {label: i for i, label in enumerate(classifier.labels)}
    whole = [np.mean([probabilities[text] for text in sentences], axis=0) for _, sentences in pages]
    result: dict = {
        "cpu": cpu_model(),
        "classifier": f"domain.classifier offline ({classifier.kind}, {PAIR})",
        "documents": {language: len(by_language[language]) for language in LANGUAGES},
        "sentences": len(texts),
        "sentences_per_s": round(rate, 1),
        "all": {
            "label_accuracy": round(
                float(np.mean([m.argmax() == columns[label] for (label, _), m in zip(pages, whole, strict=True)])), 4
            )
        },
        "samples": {},
    }
    for size in sizes:
        samples = [spread(sentences, size) for _, sentences in pages]
        means = [np.mean([probabilities[text] for text in sample], axis=0) for sample in samples]
        per_document = float(np.mean([len(sample) for sample in samples]))
        result["samples"][str(size)] = {
            "l1_to_all": round(float(np.mean([np.abs(m - w).sum() for m, w in zip(means, whole, strict=True)])), 4),
            "argmax_agrees": round(float(np.mean([m.argmax() == w.argmax() for m, w in zip(means, whole, strict=True)])), 4),
            "label_accuracy": round(
                float(np.mean([m.argmax() == columns[label] for (label, _), m in zip(pages, means, strict=True)])), 4
            ),
            "sentences_per_document": round(per_document, 2),
            "ms_per_document": round(1000 * per_document / rate, 1),
        }
    if not args.json:
        print(f"{result['cpu']}: {len(pages)} documents, {len(texts)} sentences, {rate:.0f} sentences/s")
        print(f"{'N':>4} {'L1 to all':>10} {'argmax agrees':>14} {'label acc.':>11} {'ms/document':>12}")
        for size, figures in result["samples"].items():
            print(
                f"{size:>4} {figures['l1_to_all']:>10.4f} {figures['argmax_agrees']:>14.3f} {figures['label_accuracy']:>11.3f} "
                f"{figures['ms_per_document']:>12.1f}"
            )
        print(f" all {'':>10} {'':>14} {result['all']['label_accuracy']:>11.3f}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
