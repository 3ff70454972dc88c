"""The one progress mechanism: a callable that receives the fraction done in [0, 1].

Long work (fits, sweeps, simulations) accepts ``progress: ProgressFn | None``. The command line
wraps it in a tqdm bar (:func:`tqdm_progress`), the API's job runner stores the fraction on the job
resource and cancels a job by raising :class:`Cancelled` from inside the callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

ProgressFn = Callable[[float], None]


class Cancelled(Exception):
    """Raised by a progress callback to stop the work that reports to it."""


def report(progress: ProgressFn | None, fraction: float) -> None:
    """Call ``progress`` with ``fraction`` clipped to [0, 1]; a no-op when ``progress`` is None."""
    if progress is not None:
        progress(min(1.0, max(0.0, float(fraction))))


def scaled(progress: ProgressFn | None, start: float, stop: float) -> ProgressFn | None:
    """A callback reporting into the sub-range [start, stop] of ``progress`` (for nested work)."""
    if progress is None:
        return None

    def inner(f: float) -> None:
        progress(start + (stop - start) * min(1.0, max(0.0, f)))

    return inner


@contextmanager
def tqdm_progress(desc: str = "", disable: bool = False) -> Iterator[ProgressFn]:
    """A progress callback drawing a tqdm bar on the terminal (percent done)."""
    from tqdm import tqdm

    bar = tqdm(total=1000, desc=desc, disable=disable, bar_format="{l_bar}{bar}| {elapsed}<{remaining}")
    last = [0]

    def cb(f: float) -> None:
        n = int(round(1000 * min(1.0, max(0.0, f))))
        if n > last[0]:
            bar.update(n - last[0])
            last[0] = n

    try:
        yield cb
    finally:
        bar.close()
