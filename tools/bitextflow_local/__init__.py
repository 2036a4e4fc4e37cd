"""Local tooling for bitextflow's demo, tests and benchmarks; not part of the ``bitextflow`` library.

- :mod:`bitextflow_local.localsite`: a multilingual website built from Debian documentation packages
  and served on 127.0.0.1, with the truth of which pages translate which (the crawl target).
- :mod:`bitextflow_local.services`: the local stack (a SeaweedFS S3 server, the site and Airflow) and
  the demo that runs a pair's DAG on it.

The command line is ``bitextflow-local`` (:mod:`bitextflow_local.cli`).
"""
