"""What a bicleaner-ai model folder must hold for ``score_pairs.py`` to score with it: ours, or one bicleaner-ai publishes.

A deployment may point ``score.bicleaner_model`` at a published model it downloaded (docs/score.md, "A published
bicleaner-ai model"); :func:`model_folder_problems` names each file that bicleaner-ai 3.6 would miss, when the task
starts rather than deep in the other environment's traceback.
"""

from __future__ import annotations

from pathlib import Path

import yaml

#: The files a lite model (``dec_attention``, ``transformer``) is read from: ``classifier_settings`` may name others;
#: these are bicleaner-ai 3.6's defaults (``models.BaseModel``). GloVe vectors (``wv_file``) are read in training only.
LITE_MODEL_FILES = {"spm_file": "spm.model", "vocab_file": "spm.vocab", "model_file": "model.h5"}
#: A full model (``xlmr``) without ``model_file`` / ``vocab_file`` settings is a transformers folder itself: TensorFlow
#: weights and their config, and an XLM-R tokenizer (either file loads it).
FULL_MODEL_FILES = ("tf_model.h5", "config.json")
FULL_MODEL_TOKENIZER = ("tokenizer.json", "sentencepiece.bpe.model")
#: Language codes of a multilingual model's side (bicleaner-ai's classify.load_metadata).
ANY_LANGUAGE = ("xx", "xxx")


def model_folder_problems(model: Path, source: str, target: str) -> list[str]:
    """What keeps bicleaner-ai 3.6 from scoring ``source``-``target`` with the model folder ``model``, one line each.

    The layout it publishes and reads (``bicleaner_ai.classify.load_metadata``, ``models.*.load``): ``metadata.yaml``
    with ``source_lang``, ``target_lang``, ``classifier_type`` and ``classifier_settings``, and the files those settings
    name, relative to the folder: for a lite model (``dec_attention``, ``transformer``) :data:`LITE_MODEL_FILES`; for a
    full one (``xlmr``) ``model_file`` and ``vocab_file``, or else the folder itself as a transformers folder
    (:data:`FULL_MODEL_FILES` and one of :data:`FULL_MODEL_TOKENIZER`). ``source_lm``/``target_lm`` and
    ``porn_removal_file`` are not needed: ``score_pairs.py`` turns those filters off. Scores are calibrated when
    ``classifier_settings`` has ``calibration_params``, raw otherwise.
    """
    metadata_path = model / "metadata.yaml"
    try:
        metadata = yaml.safe_load(metadata_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        return [f"{metadata_path} cannot be read ({' '.join(str(exc).split())[:200]}); download the model again"]
    if not isinstance(metadata, dict) or not isinstance(metadata.get("classifier_settings"), dict):
        return [f"{metadata_path} has no classifier_settings: not a bicleaner-ai 3.x model; download a 3.x one"]
    settings, kind = metadata["classifier_settings"], metadata.get("classifier_type")
    problems = []
    languages = (metadata.get("source_lang"), metadata.get("target_lang"))
    if not all(given in (wanted, *ANY_LANGUAGE) for given, wanted in zip(languages, (source, target), strict=True)):
        problems.append(
            f"{metadata_path} is a model for {languages[0]}-{languages[1]}, not {source}-{target}; "
            f"use a model for {source}-{target} (the columns are scored in that order)"
        )
    if kind in ("dec_attention", "transformer"):
        needed = [settings.get(name, default) for name, default in LITE_MODEL_FILES.items()]
    elif kind == "xlmr":
        needed = [settings[name] for name in ("model_file", "vocab_file") if name in settings]
        if "model_file" not in settings:
            needed += FULL_MODEL_FILES
        if "vocab_file" not in settings and not any((model / name).is_file() for name in FULL_MODEL_TOKENIZER):
            problems.append(f"{model} has no XLM-R tokenizer ({' or '.join(FULL_MODEL_TOKENIZER)}); download the model again")
    else:
        return [*problems, f"{metadata_path} names classifier_type {kind!r}; bicleaner-ai 3.6 reads dec_attention, "
                f"transformer or xlmr"]  # fmt: skip
    problems += [
        f"{model / name} is missing: bicleaner-ai reads it for this {kind} model; download the model again"
        for name in needed
        if not (model / name).exists()
    ]
    return problems
