"""URL-looking strings of a script file (Heritrix ExtractorJS, narrower): page paths and http(s) URLs only."""

from __future__ import annotations

from bitextflow.crawl.script_links import carries_links, script_urls


def test_page_paths_and_links_written_as_markup_are_kept_other_strings_not():
    script = (
        'var menu = ["en/guide.html", \'es/guia.html\', "/docs/", "https://h/abs.php?x=1", "not a url", "jquery", '
        '"image.png", "a.b", "//cdn.example/x.html", "mailto:a@h"];\n'
        "document.write('<a href=\"es/faq.html\">FAQ</a>'); var t = `tpl/${name}.html`;"
    )
    assert script_urls(script, "http://h/base/") == [
        "http://h/base/en/guide.html", "http://h/base/es/guia.html", "http://h/docs/", "https://h/abs.php?x=1",
        "http://h/base/es/faq.html",
    ]  # fmt: skip
    assert carries_links(script) and not carries_links('function f(a) { return "lib/" + a; }')
