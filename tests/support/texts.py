"""Sentences of software documentation and their Spanish translations, none of them in the data the margin scorer
was calibrated on: the tests' stand-in for a translated page's paragraphs; and a fetched page of given paragraphs."""

from __future__ import annotations

from collections.abc import Sequence

from bitextflow.extract.model import WarcResponse

#: (English, Spanish) pairs, in the order a page would hold them.
DOCUMENTATION = [
    ("The package manager installs the software and its dependencies.", "El gestor de paquetes instala el software y sus dependencias."),
    ("Open a terminal and type the following command.", "Abra una terminal y escriba la siguiente orden."),
    ("The system will restart after the installation.", "El sistema se reiniciará después de la instalación."),
    ("You can change the language of the keyboard later.", "Puede cambiar el idioma del teclado más tarde."),
    ("Do not remove the disk while the computer is on.", "No quite el disco mientras el ordenador está encendido."),
    ("Back up your files before you upgrade the system.", "Haga una copia de seguridad de sus archivos antes de actualizar el sistema."),
    ("The network settings are stored in this file.", "La configuración de la red se guarda en este archivo."),
    ("Press the power button to turn the computer on.", "Pulse el botón de encendido para encender el ordenador."),
    ("Each user has a home directory for personal files.", "Cada usuario tiene un directorio personal para sus archivos."),
    ("The kernel loads the drivers of the hardware at boot.", "El núcleo carga los controladores del hardware al arrancar."),
    ("Read the manual page of a command before you use it.", "Lea la página del manual de una orden antes de usarla."),
    ("The log files record what the services did.", "Los archivos de registro guardan lo que hicieron los servicios."),
    ("A firewall blocks the connections you did not allow.", "Un cortafuegos bloquea las conexiones que no permitió."),
    ("Mount the partition before you copy files to it.", "Monte la partición antes de copiar archivos en ella."),
    ("The printer queue lists the documents waiting to print.", "La cola de impresión muestra los documentos que esperan."),
    ("Update the package lists once a week at least.", "Actualice las listas de paquetes al menos una vez por semana."),
    ("The desktop shows a panel with the running programs.", "El escritorio muestra un panel con los programas en ejecución."),
    ("Remove the packages that nothing depends on any more.", "Elimine los paquetes de los que ya no depende nada."),
]  # fmt: skip


def page_response(paragraphs: Sequence[str]) -> WarcResponse:
    """A fetched HTML page whose main content is ``paragraphs``, one ``<p>`` each."""
    body = "<html><body><main>" + "".join(f"<p>{text}</p>" for text in paragraphs) + "</main></body></html>"
    return WarcResponse(
        url="http://example.com/", body=body.encode(), status=200, mime="text/html", http_charset="utf-8", record_id="r",
        offset=0, date="2026-12-04T00:00:00Z",
    )  # fmt: skip
