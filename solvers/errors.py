"""The one error type for bad input, raised by every package of the library.

:class:`InputError` carries its field, reason and location as data, so that the service maps it to
an ``application/problem+json`` body once (``app/errors.py``) without reading the message text, and
a researcher calling the library gets the same information as an API user.

It lives in ``solvers`` because that is the lowest package: ``aggregators``, ``markets`` and ``app``
all import it from here (``aggregators.validation.PredictionError`` is the same class).
"""

from __future__ import annotations

from typing import Any


class InputError(ValueError):
    """Invalid input or parameter: names the field, the reason and, where it applies, the location.

    It is a ``ValueError`` (as scikit-learn's argument errors are), not a ``TypeError``: the service
    reads a ``TypeError`` from a library call as a wrong keyword argument, which is another error.

    Parameters
    ----------
    field
        Dotted name of the offending argument as the caller wrote it (``"weights"``,
        ``"options.step"``, ``"predictions"``).
    reason
        What is wrong, in words (``"must be >= 0; got -1"``).
    code
        A short machine-readable kind (``"invalid"``, ``"nan"``, ``"zero-probability"``...).
    item, agent
        The first offending (item, agent) of a prediction array, when there is one.
    **location
        Any other coordinates of the offending entry (``index=3``, ``row=7``...).
    """

    def __init__(
        self,
        field: str,
        reason: str,
        *,
        code: str = "invalid",
        item: int | None = None,
        agent: int | None = None,
        **location: Any,
    ) -> None:
        self.field = field
        self.reason = reason
        self.code = code
        self.item = item
        self.agent = agent
        self.location: dict[str, Any] = {k: v for k, v in (("item", item), ("agent", agent)) if v is not None}
        self.location.update({k: v for k, v in location.items() if v is not None})
        where = ", ".join(f"{k} {v}" for k, v in self.location.items())
        super().__init__(f"{field}: {reason}" + (f" (at {where})" if where else ""))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: ``{"field", "reason", "code", **location}``."""
        d: dict[str, Any] = {"field": self.field, "reason": self.reason, "code": self.code}
        d.update(self.location)
        return d
