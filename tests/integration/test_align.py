"""Alignment stage: URL document matching, Debian dictionaries, Gale-Church and Hunalign-style sentence
alignment, and the scorer.

The tests of this module against real services; those that need none are tests/unit/test_align.py's.
"""

from __future__ import annotations

from tests.support import ROOT


def test_align_sentences_stage_uses_the_configured_aligner(store) -> None:
    """The stage on real S3 honours ``align.sentence_aligner``; hunalign loads the en-es dictionary once
    (or, where it cannot be built, aligns without it)."""
    import pandas as pd
    import pyarrow as pa

    from bitextflow import records
    from bitextflow.config import load_pair_config
    from bitextflow.stages.registry import REGISTRY, run_context
    from bitextflow.storage.tables import read_table, write_table
    from tests.support import write_partition_documents

    def frame(schema: pa.Schema, rows: list[dict[str, object]]) -> pd.DataFrame:
        return pd.DataFrame([{field.name: row.get(field.name) for field in schema} for row in rows])

    from bitextflow.models.static import default_static_dir

    root = ROOT
    results = {}
    # hybrid only where `make setup` built its static model: building it here would take minutes.
    built = (default_static_dir() / "model.safetensors").is_file()
    for method in ("gale-church", "hunalign", "hybrid-e5", *(("hybrid",) if built else ())):
        config = load_pair_config(root / "include" / "pairs" / "en-es.yaml").with_overrides({"align.sentence_aligner": method})
        ctx = run_context(config, store, f"align_{method}")
        sentences_key = ctx.key("partitions", "part-00000.sentences.parquet")
        rows = [
            {
                "doc_id": doc,
                "url": doc,
                "language": lang,
                "paragraph_index": 0,
                "sentence_index": k,
                "text": text,
                "duplicate": False,
                "partition": 0,
            }
            for doc, lang, texts in (
                ("a", "en", ["The house is red.", "It has a garden with 2 trees.", "Nothing else here."]),
                ("b", "es", ["La casa es roja.", "Tiene un jardín con 2 árboles.", "Nada más aquí."]),
            )
            for k, text in enumerate(texts)
        ]
        write_table(store, sentences_key, frame(records.SENTENCES, rows), records.SENTENCES)
        write_partition_documents(store, ctx.key("partitions", "part-00000.documents.parquet"), frame(records.SENTENCES, rows))
        pair = {"doc_id_a": "a", "doc_id_b": "b", "url_a": "a", "url_b": "b", "method": "url_tokens", "score": 1.0,
                "partition": 0}  # fmt: skip
        pairs_key = write_table(
            store,
            ctx.key("align_documents", "docpairs-part-00000-00000.parquet"),
            frame(records.DOCUMENT_PAIRS, [pair]),
            records.DOCUMENT_PAIRS,
        )
        # the shipped config embeds the run's sentences once (its margin scorer and classifier read the vectors)
        output = read_table(store, REGISTRY.run(ctx, "align_sentences", REGISTRY.run(ctx, "embed", [pairs_key]))[0])
        results[method] = list(zip(output["text_a"], output["text_b"], strict=True))
    assert (
        results["hunalign"]
        == results["gale-church"]
        == results["hybrid-e5"]
        == results.get("hybrid", results["gale-church"])
        == [
            ("The house is red.", "La casa es roja."),
            ("It has a garden with 2 trees.", "Tiene un jardín con 2 árboles."),
            ("Nothing else here.", "Nada más aquí."),
        ]
    )


# -- partly translated pages ---------------------------------------------------------------------------------------
GUIDE_EN = (
    "Download the installation image from a mirror near you. Check its checksum before you write it to a disk.",
    "The installer asks for the keyboard layout first. Choose the layout printed on your keyboard.",
    "Partition the disk with the guided option. It keeps the data of other systems on the disk.",
    "Select a mirror of the archive in your country. Downloads from a near mirror are faster.",
    "Reboot the machine when the installer says it has finished. Remove the installation medium first.",
)
GUIDE_ES = {  # what the translators had done: the first and the third paragraphs
    0: "Descargue la imagen de instalación desde una réplica cercana. Compruebe su suma de control antes de grabarla en un disco.",
    2: "Particione el disco con la opción guiada. Esta opción conserva los datos de otros sistemas del disco.",
}
FAQ = (
    ("Debian is a free operating system made by volunteers. It runs on many kinds of computers.",
     "Debian es un sistema operativo libre hecho por voluntarios. Funciona en muchos tipos de ordenadores."),
    ("Each release is supported for several years. Security updates come from a separate archive.",
     "Cada versión recibe soporte durante varios años. Las actualizaciones de seguridad vienen de otro archivo."),
)  # fmt: skip
#: A command both FAQ pages show in English: the Spanish page's copy is another language's paragraph there.
COMMAND = "Run apt-get update as root, then apt-get upgrade."


def _sentences(text: str) -> list[str]:
    return [sentence if sentence.endswith(".") else sentence + "." for sentence in text.split(". ")]


def test_a_partly_translated_page_pair_gives_sentence_pairs_of_its_translated_paragraphs_only(store) -> None:
    """The Spanish guide keeps three of its five paragraphs in English and is identified as English: document
    alignment pairs it with the English guide (its second pass), and sentence alignment aligns the translated
    paragraphs, split from the page's paragraphs since extraction kept its English ones only; the untranslated
    ones are counted. The fully translated FAQ gives its pairs as before, less the command both of its pages show in
    English: the English page's copy is set aside (the Spanish page holds it as an English paragraph), never joined to
    a neighbouring sentence's bead."""
    import pandas as pd

    from bitextflow import records
    from bitextflow.config import load_pair_config
    from bitextflow.stages.registry import REGISTRY, run_context
    from bitextflow.storage.tables import read_table
    from tests.support import through_partitions

    root = ROOT
    config = load_pair_config(root / "include" / "pairs" / "en-es.yaml").with_overrides({"align.sentence_aligner": "gale-church"})
    ctx = run_context(config, store, "align_partly_translated")
    partly = [(GUIDE_ES[k], "es") if k in GUIDE_ES else (text, "en") for k, text in enumerate(GUIDE_EN)]
    pages = {  # doc_id: (url, document language, language set, paragraphs as (text, language))
        "guide-en": ("http://site.test/en/guide.html", "en", {"en": 1.0}, [(text, "en") for text in GUIDE_EN]),
        "guide-es": ("http://site.test/es/guide.html", "en", {"en": 0.6, "es": 0.4}, partly),
        "faq-en": ("http://site.test/en/faq.html", "en", {"en": 1.0}, [*((en, "en") for en, _es in FAQ), (COMMAND, "en")]),
        "faq-es": (
            "http://site.test/es/faq.html",
            "es",
            {"es": 0.9, "en": 0.1},
            [*((es, "es") for _en, es in FAQ), (COMMAND, "en")],
        ),
    }
    documents, sentences = [], []
    for doc_id, (url, language, language_set, texts) in pages.items():
        menu = ("Inicio de la documentación · Guía de instalación", "es") if doc_id == "guide-es" else ("Home", language)
        paragraphs = [
            {"type": "text", "text": text, "language": lang, "boilerplate": k == 0, "out_of_language": lang != language,
             "terms": []}
            for k, (text, lang) in enumerate([menu, *texts])
        ]  # fmt: skip
        documents.append({"doc_id": doc_id, "url": url, "language": language, "paragraphs": paragraphs, "images": [],
                          "repairs": [], "language_set": [{"language": c, "share": s} for c, s in language_set.items()],
                          "partition": 0})  # fmt: skip
        # what extraction stores: the sentences of the main paragraphs in the document's language
        sentences += [
            {"doc_id": doc_id, "url": url, "language": language, "paragraph_index": p_index, "paragraph_type": "text",
             "sentence_index": s_index, "text": sentence, "duplicate": False, "partition": 0}
            for p_index, (text, lang) in enumerate(texts, start=1) if lang == language
            for s_index, sentence in enumerate(_sentences(text))
        ]  # fmt: skip
    frame = pd.DataFrame([{field.name: row.get(field.name) for field in records.DOCUMENTS} for row in documents])
    pair_keys = REGISTRY.run(ctx, "align_documents", through_partitions(ctx, frame, pd.DataFrame(sentences)))
    document_pairs = pd.concat([read_table(store, key) for key in pair_keys])
    assert sorted(zip(document_pairs["doc_id_a"], document_pairs["doc_id_b"], strict=True)) == [
        ("faq-en", "faq-es"),
        ("guide-en", "guide-es"),
    ]

    embedded = REGISTRY.run(ctx, "embed", pair_keys)  # the shipped config's one embedding of each sentence
    output = pd.concat([read_table(store, key) for key in REGISTRY.run(ctx, "align_sentences", embedded)])
    aligned = list(zip(output["text_a"], output["text_b"], strict=True))
    translated = [pair for k, es in GUIDE_ES.items() for pair in zip(_sentences(GUIDE_EN[k]), _sentences(es), strict=True)]
    faq = [pair for en, es in FAQ for pair in zip(_sentences(en), _sentences(es), strict=True)]
    assert sorted(aligned) == sorted(translated + faq)
    counts = store.get_json(ctx.key("align_sentences", "sentpairs-part-00000-00000.counts.json"))
    untranslated = 2 * 3  # three untranslated paragraphs of two sentences: on the English page, and on the Spanish one
    assert counts["dropped"] == {"untranslated_src": untranslated + 1, "untranslated_tgt": untranslated}
    assert counts["in"] == counts["kept"] + sum(counts["dropped"].values()) and counts["kept"] == len(aligned)
