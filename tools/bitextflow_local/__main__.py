"""``python -m bitextflow_local``: the same as the ``bitextflow-local`` command."""

from bitextflow_local.cli import main

raise SystemExit(main())
