"""A local multilingual website built from Debian documentation, served on 127.0.0.1.

It is the crawl target of the demo, the tests and the benchmarks: real translated pages, two URL styles
for languages, pages without translations, robots-protected pages and non-HTML files, plus the truth
of which pages are translations of which, kept outside the docroot.
"""

from bitextflow_local.localsite.build import Site, build_site
from bitextflow_local.localsite.server import SiteServer, serve
from bitextflow_local.localsite.truth import Truth

__all__ = ["Site", "SiteServer", "Truth", "build_site", "serve"]
