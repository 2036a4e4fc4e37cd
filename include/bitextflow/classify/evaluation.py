"""Evaluation report of a domain classifier: accuracy, macro P/R/F1, a per-class table, a confusion matrix image."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def evaluate(gold: Sequence[str], probabilities: np.ndarray, labels: Sequence[str]) -> dict[str, Any]:
    """Metrics of argmax predictions; labels absent from `gold` (zero-shot sets) are left out of the macro means."""
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    predicted = [labels[i] for i in probabilities.argmax(axis=1)] if len(gold) else []
    present = [label for label in labels if label in set(gold)]
    precision, recall, f1, support = precision_recall_fscore_support(gold, predicted, labels=list(labels), zero_division=0)
    per_class = {
        label: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(n)}
        for label, p, r, f, n in zip(labels, precision, recall, f1, support, strict=True)
    }
    macro = {
        name: float(np.mean([per_class[label][name] for label in present])) if present else 0.0
        for name in ("precision", "recall", "f1")
    }
    return {
        "sentences": len(gold),
        "accuracy": float(accuracy_score(gold, predicted)) if len(gold) else 0.0,
        "macro_precision": macro["precision"],
        "macro_recall": macro["recall"],
        "macro_f1": macro["f1"],
        "labels_present": present,
        "per_class": per_class,
        "confusion_matrix": confusion_matrix(gold, predicted, labels=list(labels)).tolist() if len(gold) else [],
    }


def write_report(metrics: dict[str, Any], labels: Sequence[str], folder: Path, title: str) -> list[Path]:
    """``report.json``, ``report.md`` and ``confusion_matrix.png`` in `folder`; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "report.json", folder / "report.md"]
    written[0].write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    lines = [
        f"# {title}",
        "",
        f"{metrics['sentences']} sentences; accuracy {metrics['accuracy']:.3f}; macro precision {metrics['macro_precision']:.3f}, "
        f"recall {metrics['macro_recall']:.3f}, F1 {metrics['macro_f1']:.3f} (over labels present: {', '.join(metrics['labels_present'])}).",
        "",
        "| label | precision | recall | F1 | support |",
        "|---|---|---|---|---|",
    ]
    for label, row in metrics["per_class"].items():
        lines.append(f"| {label} | {row['precision']:.3f} | {row['recall']:.3f} | {row['f1']:.3f} | {row['support']} |")
    lines += ["", "![confusion matrix](confusion_matrix.png)", ""]
    written[1].write_text("\n".join(lines), encoding="utf-8")
    if metrics["confusion_matrix"]:
        written.append(_plot_confusion(np.array(metrics["confusion_matrix"]), labels, folder / "confusion_matrix.png", title))
    return written


def _plot_confusion(matrix: np.ndarray, labels: Sequence[str], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # no display on workers
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(1.2 * len(labels) + 2.5, 1.0 * len(labels) + 2))
    axes.imshow(matrix, cmap="Blues")
    axes.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    axes.set_yticks(range(len(labels)), labels)
    axes.set_xlabel("predicted")
    axes.set_ylabel("gold")
    axes.set_title(title, fontsize=9)
    threshold = matrix.max() / 2 if matrix.size else 0
    for (row, column), value in np.ndenumerate(matrix):
        axes.text(column, row, str(value), ha="center", va="center", color="white" if value > threshold else "black", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
