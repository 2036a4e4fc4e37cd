"""What a side of a document pair gives the aligner (bitextflow.stages.document_sides): a sentence one page keeps and
the other page shows only as text its extraction dropped is a copy with no counterpart, set aside before alignment; the
blocks extraction takes sentences from all go to the block alignment, those it kept no sentence of included."""

from __future__ import annotations

from bitextflow.records import Document
from bitextflow.stages.document_sides import copies, dropped_pieces, source_blocks

COMMAND = "localname @ localhost $ ssh -q -X loginname@remotehost.domain Password:"


def spanish_page() -> Document:
    # the command sits in the list item's paragraph; Spanish extraction kept the instruction and dropped the command
    item = f"Ejecute ssh (1) con la opción -X para establecer una conexión como se muestra. {COMMAND}"
    return Document.of_text("es", "http://127.0.0.1/ch07.es.html", "es", [("listitem", item), ("text", "Fin.")])


def test_a_sentence_the_other_page_shows_but_dropped_is_a_copy() -> None:
    kept_es = ["Ejecute ssh (1) con la opción -X para establecer una conexión como se muestra.", "Fin."]
    dropped = dropped_pieces(spanish_page(), "es", kept_es)
    english = ["Run ssh (1) with -X option to establish a connection as the following.", COMMAND.replace("$", " $ ")]
    # spacing and punctuation do not hide a copy
    assert copies(english, dropped) == {1}


def test_a_sentence_the_other_page_kept_is_no_copy() -> None:
    kept_es = ["Ejecute ssh (1) con la opción -X para establecer una conexión como se muestra.", COMMAND, "Fin."]
    assert copies([COMMAND], dropped_pieces(spanish_page(), "es", kept_es)) == set()


def test_a_one_word_sentence_is_never_taken_for_a_copy() -> None:
    page = Document.of_text("es", "http://127.0.0.1/a.es.html", "es", [("cell", "Debian"), ("text", "Hola.")])
    assert copies(["Debian"], dropped_pieces(page, "es", ["Hola."])) == set()


def test_the_blocks_extraction_reads_are_the_block_alignments_whatever_it_kept() -> None:
    page = Document.of_text(
        "es", "http://127.0.0.1/a.es.html", "es",
        [("title", "Guía"), ("text", "Tabla 1.12. Accion de la tecla Intro en MC"), ("code", "$ mc"), ("cell", "tipo")],
    )  # fmt: skip
    assert [(block.id, block.type, block.text) for block in source_blocks(page)] == [
        (1, "text", "Tabla 1.12. Accion de la tecla Intro en MC"),
        (3, "cell", "tipo"),
    ]
