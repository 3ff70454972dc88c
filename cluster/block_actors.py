"""Passes over kept blocks through one Dask actor per worker: no scheduler on a pass's way.

A pass of :class:`cluster.chunked_problem.ChunkedProblem` as tasks goes driver → scheduler → worker
→ scheduler → driver (and, with ``reduce="workers"``, once more through a task adding the workers'
partial sums). Measured on a 2-worker ``LocalCluster`` of this machine, one small pass of the log
pool's value and gradient (``bench_cluster_scaling.py --latency``, medians of 200): 2.3 ms through
the actors, 19.0 ms as tasks added by a task, 26.2 ms as a task per block
(``benchmarks/results/cluster-actor-passes-session11.md``). The chunked log-pool fit
at 20,000 × 269 × 64 makes 42 passes, 35 of them on a subsample or a working set whose work is a few
milliseconds, so the round trip is most of their cost.

:class:`BlockHolder` is the actor: created on the worker that holds a group's kept blocks (their
futures resolve to the very objects in that worker's memory, nothing is copied), it runs
:func:`~cluster.chunked_problem.group_pass` on them. :class:`Holders` creates one per group, calls
them all for a pass and returns their partial sums (added on the driver).

Actors are not recomputed when their worker dies (Dask keeps no lineage for their state). So every
wait is cut into :data:`cluster.connect.POLL` slices, and when an actor's future is no longer
``finished``, or a call fails to reach its worker (``OSError``), :class:`Lost` is raised: the
chunked problem then drops the actors for good and runs this pass and the next ones as tasks, which
Dask does recompute on the workers that remain. A block's own error (bad input) raises as it is.
"""

from __future__ import annotations

from typing import Any

from .connect import POLL

__all__ = ["BlockHolder", "Holders", "Lost", "passes_run"]

_PASSES_RUN = [0]  # in this process, by every BlockHolder: which workers ran passes (tests, diagnostics)


def passes_run() -> int:
    """How many passes the block actors of this process (a worker) have run."""
    return _PASSES_RUN[0]


class Lost(Exception):
    """An actor (or its worker) is gone: run the pass as tasks."""


class BlockHolder:
    """A Dask actor holding one worker's kept blocks (``(source, labels, start)`` as in
    :class:`~cluster.chunked_problem.ChunkedProblem`'s groups, their futures resolved there)."""

    def __init__(self, blocks: list) -> None:
        self.blocks = blocks

    def run(self, kind: str, opts: dict, cols: Any, op: str, args: tuple, extras: list) -> Any:
        from .chunked_problem import group_pass

        _PASSES_RUN[0] += 1
        return group_pass(kind, opts, cols, op, args, self.blocks, extras)


class Holders:
    """One :class:`BlockHolder` per group of blocks, each on the worker the group names."""

    def __init__(self, client: Any, groups: list[tuple[str | None, list]]) -> None:
        if any(w is None for w, _ in groups):
            raise Lost("a group of blocks has no worker")
        self.futures = [
            client.submit(BlockHolder, blocks, workers=[w], allow_other_workers=False, actor=True, pure=False)
            for w, blocks in groups
        ]
        self.actors = [self._wait(f.result, f) for f in self.futures]

    def _alive(self) -> bool:
        return all(f.status == "finished" for f in self.futures)

    def _wait(self, result: Any, future: Any = None) -> Any:
        """``result(timeout=POLL)`` until it answers; :class:`Lost` once an actor is gone."""
        while True:
            try:
                return result(timeout=POLL)
            except TimeoutError:
                if future is not None and future.status not in ("pending", "finished"):
                    raise Lost(f"an actor's task ended {future.status}") from None
                if future is None and not self._alive():
                    raise Lost("an actor's worker left the cluster") from None
            except OSError as exc:  # the call could not reach the actor's worker
                raise Lost(str(exc)) from exc

    def run(self, head: tuple, extras: list[list]) -> list:
        """Each group's partial sum of the pass ``head`` (``kind, opts, cols, op, args``), ``extras``
        per group; a group whose extras are all ``None`` is not called."""
        if not self._alive():
            raise Lost("an actor's worker left the cluster")
        try:
            calls = [a.run(*head, e) for a, e in zip(self.actors, extras) if any(x is not None for x in e)]
        except RuntimeError as exc:  # "Worker holding Actor was lost"
            raise Lost(str(exc)) from exc
        return [self._wait(c.result) for c in calls]

    def close(self) -> None:
        """Release the actors now: each actor proxy holds its own future of the actor's task, and the
        proxies are freed only by the garbage collector (a test found the actors, with the blocks
        they reference, still on the workers after the fit); releasing both drops the task, and the
        worker the actor."""
        for f in self.futures + [getattr(a, "_future", None) for a in self.actors]:
            if f is not None:
                f.release()
        self.futures, self.actors = [], []
