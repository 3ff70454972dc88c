"""Agora past one machine, on Dask's ``distributed`` scheduler (seed 002 ch. V; issue 18).

- :mod:`cluster.graphs`: bipartite worker graphs and the topologies of the seed's experiments.
- :mod:`cluster.consensus_admm`: consensus ADMM (Alg. 9) over a worker graph with fixed, grid,
  adaptive (Alg. 10), He/Boyd and ``sqrt(mu1 L2)`` penalties, in-process or on Dask workers.
- :mod:`cluster.chunked_fit`: the log, linear and Rényi (weights) fits on a chunked array
  (dask.array or Zarr), passes on Dask workers over :mod:`cluster.chunked_problem`, partial sums
  added on the workers.
- :mod:`cluster.fanout`: a competition run's fits (methods, gamma sweep, leave-one-out) as Dask tasks.
- :mod:`cluster.connect`: a ``distributed.Client`` from a scheduler address, with a clear error.
- :mod:`cluster.host_memory`: whether the host takes freed memory back (then the workers start
  without NumPy's huge pages, :func:`cluster.connect.kernel_friendly_nanny`).

The package is named ``cluster`` (not ``distributed``, which is Dask's own package).
"""
