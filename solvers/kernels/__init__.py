"""Compiled (numba) kernels for the problems of :mod:`solvers.problems`.

Each kernel does one fused pass over the data it is given and nothing else; problems choose the
chunking and the storage precision. Every kernel is ``@njit(cache=True)`` (the Makefile sets
``NUMBA_CACHE_DIR``), so the compile cost is paid once per machine.
"""
