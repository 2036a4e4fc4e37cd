"""The stages of a run, one module each, on top of the algorithms: each reads its inputs from the object
store, calls the algorithms, and writes its outputs and counts (see :mod:`~bitextflow.stages.base` for
the contract and :mod:`~bitextflow.stages.registry` for the one list of stages)."""
