"""Models the samplers run on: the interface (:mod:`.base`) and its instances."""

from .base import Model, minibatch_grad
from .drbm import DRBM
from .gaussian import Gaussian
from .logistic import LogisticRegression
from .normal_gamma import NormalGamma
from .tape import TapeGradients

__all__ = ["Model", "minibatch_grad", "DRBM", "Gaussian", "LogisticRegression", "NormalGamma", "TapeGradients"]
