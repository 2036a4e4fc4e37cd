"""Fine-tuning a transformers sequence classifier: the one training loop of the project's models.

The smart crawl's URL classifiers and the domain classifier are both an encoder with a classification
head, trained with AdamW and cross-entropy; they differ in how batches are drawn (each caller yields its
own), whether classes are weighted, and whether the learning rate warms up and gradients are clipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import torch
from transformers import get_linear_schedule_with_warmup

_LAYER_INDEX = re.compile(r"\.layer\.(\d+)\.")


def freeze_lower_layers(model: Any, trainable: int) -> None:
    """Freeze every encoder layer but the top ``trainable`` (and the embeddings): backward passes stop early, so
    training costs a fraction on a CPU. Layers are found by the ``.layer.<i>.`` in parameter names
    (BERT, XLM-R, DeBERTa and their kin)."""
    layers = int(model.config.num_hidden_layers)
    for name, parameter in model.named_parameters():
        found = _LAYER_INDEX.search(name)
        if (found and int(found.group(1)) < layers - trainable) or ".embeddings." in f".{name}":
            parameter.requires_grad_(False)


def fine_tune(
    model: Any,
    batches: Iterable[tuple[dict[str, torch.Tensor], torch.Tensor]],
    learning_rate: float,
    *,
    steps: int | None = None,
    class_weight: torch.Tensor | None = None,
    warmup_share: float | None = None,
    clip_norm: float | None = None,
    progress: Callable[[int, int | None, float], None] | None = None,
) -> int:
    """AdamW over the trainable parameters, one optimiser step per ``(inputs, gold labels)`` batch, until the
    batches end or ``steps`` were taken; returns the steps taken.

    ``class_weight`` weighs the cross-entropy per class; ``warmup_share`` (needs ``steps``) warms the learning
    rate up linearly over that share of the steps and decays it linearly to zero; ``clip_norm`` clips the
    gradients' norm; ``progress(step, steps, loss)`` is called after every step.
    """
    optimiser = torch.optim.AdamW((p for p in model.parameters() if p.requires_grad), lr=learning_rate)
    schedule = None
    if warmup_share is not None:
        if steps is None:
            raise ValueError("a warm-up needs the number of steps")
        schedule = get_linear_schedule_with_warmup(optimiser, int(warmup_share * steps), steps)
    taken = 0
    for inputs, gold in batches:
        loss = torch.nn.functional.cross_entropy(model(**inputs).logits, gold, weight=class_weight)
        loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimiser.step()
        if schedule is not None:
            schedule.step()
        optimiser.zero_grad()
        taken += 1
        if progress is not None:
            progress(taken, steps, loss.item())
        if steps is not None and taken >= steps:
            break
    return taken
