"""Batch segmentation of a folder: ``segapp batch`` and its library form.

>>> from segapp.batch import find_pairs, run_batch, PoolExecutor    # doctest: +SKIP
>>> with PoolExecutor(2) as ex:                                      # doctest: +SKIP
...     result = run_batch(find_pairs("photos"), "masks", executor=ex)
>>> result.summary()                                                 # doctest: +SKIP

Modules: :mod:`~.pairing` (image ↔ scribbles by stem), :mod:`~.task` (one pair, run on a
worker), :mod:`~.executors` (serial, process pool, Dask), :mod:`~.runner` (skip finished
pairs, collect rows), :mod:`~.report` (CSV/JSON), :mod:`~.progress` (tqdm bar or plain
lines). The command line ``segapp batch`` is :mod:`segapp.cli.batch`. None of them imports dask
or tqdm unless used.
"""

from .executors import DaskExecutor, Executor, PoolExecutor, SerialExecutor
from .pairing import DEFAULT_PATTERNS, Pair, Pairing, find_pairs
from .runner import BatchResult, run_batch
from .task import ROW_FIELDS, Task, segment_pair

__all__ = ["find_pairs", "run_batch", "segment_pair", "Pair", "Pairing", "Task", "BatchResult",
           "Executor", "SerialExecutor", "PoolExecutor", "DaskExecutor", "DEFAULT_PATTERNS",
           "ROW_FIELDS"]
