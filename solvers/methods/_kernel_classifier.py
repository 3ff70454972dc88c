"""The scikit-learn shape the kernel SVM estimators share (SFW/MSFW, Pegasos, NORMA): two labels in,
``predict`` from ``decision_function``. Not a solver module (leading underscore: not auto-imported)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError


class BinaryKernelClassifier:
    """What the kernel SVM estimators share: two labels, ``predict`` from ``decision_function`` (``> 0``: the larger)."""

    classes_: np.ndarray

    def _labels(self, y: Any) -> np.ndarray:
        """``y`` (any two label values) as -1/+1, the larger ``+1``; ``classes_`` the two values."""
        y = np.asarray(y).ravel()
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise InputError("y", f"needs exactly two label values; got {len(self.classes_)}")
        return np.where(y == self.classes_[1], 1.0, -1.0)

    def decision_function(self, X: Any) -> np.ndarray:
        raise NotImplementedError

    def predict(self, X: Any) -> np.ndarray:
        return np.where(self.decision_function(X) > 0, self.classes_[1], self.classes_[0])
