"""Models the samplers run on: the interface (:mod:`.base`) and its instances."""

from .base import Model, minibatch_grad
from .gaussian import Gaussian
from .logistic import LogisticRegression
from .normal_gamma import NormalGamma

__all__ = ["Model", "minibatch_grad", "Gaussian", "LogisticRegression", "NormalGamma"]
