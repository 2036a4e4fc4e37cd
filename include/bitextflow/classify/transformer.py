"""A fine-tuned multilingual encoder with a classification head, calibrated by temperature scaling.

The DSI classifier fine-tunes XLM-R on English and applies it zero-shot to other languages; any
transformers folder works here (``AutoModelForSequenceClassification``): the default is the converted
multilingual-e5-small (the project's offline encoder), ``xlm-roberta-large`` where a deployment has it.

The word embeddings are frozen during fine-tuning: they hold the shared multilingual vocabulary, and
leaving them untouched keeps the languages not seen in training (zero-shot) aligned with the one that
was; it also removes most of the trainable parameters (250k x hidden), which makes CPU training fast.

Temperature scaling (Guo, Pleiss, Sun and Weinberger, "On Calibration of Modern Neural Networks",
ICML 2017): one scalar T > 0 divides the logits before the softmax; it is fitted on the dev split by
minimising the negative log-likelihood, so the argmax (and accuracy) is unchanged while the
probabilities become honest, which matters because users threshold them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from bitextflow.classify.data import LabelledSentence
from bitextflow.errors import StageError
from bitextflow.models.fine_tuning import fine_tune, freeze_lower_layers
from bitextflow.models.inference import batch_size_for, default_device, inference_precision, length_sorted_batches

WARMUP_SHARE = 0.1


@dataclass(frozen=True)
class FineTuning:
    """Fine-tuning settings (domain.training in the pair config)."""

    max_length: int = 64
    epochs: float = 1.0
    batch_size: int = 16
    learning_rate: float = 1e-4
    max_steps: int | None = None
    seed: int = 0
    trainable_layers: int | None = None  # None: all


def fit_temperature(logits: np.ndarray, targets: np.ndarray, max_iter: int = 50) -> float:
    """The T > 0 minimising the NLL of softmax(logits / T) on (logits, targets) (Guo et al. 2017)."""
    if len(logits) == 0:
        return 1.0
    values = torch.as_tensor(logits, dtype=torch.float64)
    gold = torch.as_tensor(targets, dtype=torch.long)
    log_t = torch.zeros(1, dtype=torch.float64, requires_grad=True)  # T = exp(log_t) stays positive
    optimiser = torch.optim.LBFGS([log_t], lr=0.1, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(values / log_t.exp(), gold)
        loss.backward()
        return loss

    optimiser.step(closure)
    temperature = log_t.exp().item()
    return temperature if math.isfinite(temperature) and temperature > 0 else 1.0


class TransformerClassifier:
    kind = "transformer"

    def __init__(
        self, model, tokenizer, labels: Sequence[str], temperature: float, max_length: int, device: torch.device
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.labels = list(labels)
        self.temperature = temperature
        self.max_length = max_length
        self.device = device

    @classmethod
    def train(
        cls,
        train: Sequence[LabelledSentence],
        dev: Sequence[LabelledSentence],
        labels: Sequence[str],
        base_model: Path,
        settings: FineTuning = FineTuning(),
        device: torch.device | None = None,
        progress: Callable[[int, int, float], None] | None = None,
    ) -> TransformerClassifier:
        """Fine-tune `base_model` on `train`, then fit the temperature on `dev`. `progress(step, steps, loss)`."""
        device = device or default_device()
        torch.manual_seed(settings.seed)
        tokenizer = AutoTokenizer.from_pretrained(base_model, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(
            base_model,
            local_files_only=True,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
        ).to(device)
        model.get_input_embeddings().requires_grad_(False)
        if settings.trainable_layers is not None:
            freeze_lower_layers(model, settings.trainable_layers)
        index = {label: i for i, label in enumerate(labels)}
        examples = [(s.text, index[s.label]) for s in train]
        batches_per_epoch = math.ceil(len(examples) / settings.batch_size)
        steps = max(1, math.ceil(batches_per_epoch * settings.epochs))
        if settings.max_steps:
            steps = min(steps, settings.max_steps)
        rng = random.Random(settings.seed)
        classifier = cls(model, tokenizer, labels, 1.0, settings.max_length, device)

        def batches() -> Iterator[tuple[dict[str, torch.Tensor], torch.Tensor]]:
            """Batches drawn from reshuffled passes over the examples, for as many steps as asked."""
            order: list[int] = []
            while True:
                if len(order) < settings.batch_size:
                    order += rng.sample(range(len(examples)), len(examples))
                batch, order = order[: settings.batch_size], order[settings.batch_size :]
                gold = torch.tensor([examples[i][1] for i in batch], device=device)
                yield classifier._tokenize([examples[i][0] for i in batch]), gold

        model.train()
        fine_tune(
            model, batches(), settings.learning_rate, steps=steps, warmup_share=WARMUP_SHARE, clip_norm=1.0, progress=progress
        )
        model.eval()
        dev_logits = classifier.logits([s.text for s in dev])
        classifier.temperature = fit_temperature(dev_logits, np.array([index[s.label] for s in dev]))
        return classifier

    def _tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        encoded = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
        return {name: tensor.to(self.device) for name, tensor in encoded.items()}

    def logits(self, texts: Sequence[str], batch_size: int | None = None, reduced_precision: bool = True) -> np.ndarray:
        """Raw float32 logits, shape (len(texts), labels), in input order.

        Batching and precision follow the device (`bitextflow.models.inference`): `batch_size` None is its
        default, `reduced_precision` False keeps float32 on a GPU too.
        """
        result = np.zeros((len(texts), len(self.labels)), dtype=np.float32)
        if len(texts) == 0:
            return result
        token_ids = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, return_attention_mask=False)[
            "input_ids"
        ]
        with inference_precision(self.device, reduced_precision):
            for positions, inputs in length_sorted_batches(
                token_ids, self.tokenizer.pad_token_id, batch_size or batch_size_for(self.device), self.device
            ):
                result[positions] = self.model(**inputs).logits.float().cpu().numpy()
        return result

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """softmax(logits / T): the calibrated distribution over `labels`, one row per text."""
        scaled = torch.as_tensor(self.logits(texts)) / self.temperature
        return torch.softmax(scaled, dim=-1).numpy()

    def save(self, folder: Path) -> None:
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    @classmethod
    def load(
        cls, folder: Path, labels: Sequence[str], temperature: float, max_length: int, device: str | None = None
    ) -> TransformerClassifier:
        resolved = torch.device(device) if device else default_device()
        model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).to(resolved).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        if model.config.num_labels != len(labels):
            raise StageError(
                f"model folder {folder} has {model.config.num_labels} outputs but its metadata lists {len(labels)} labels; retrain it"
            )
        return cls(model, tokenizer, labels, temperature, max_length, resolved)
