"""Inputs shared by the graphical tests: the bad covariances every entry point must refuse, with the
error code each gets."""

import numpy as np

BAD_COVARIANCES = [
    (np.array([[1.0, 0.3], [0.2, 1.0]]), "not_symmetric"),
    (np.array([[1.0, 2.0], [2.0, 1.0]]), "not_psd"),
    (np.array([[1.0]]), "bad_shape"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), "nan"),
    (np.array([[1.0, np.inf], [np.inf, 1.0]]), "nan"),
    (np.ones((2, 3)), "bad_shape"),
    ("covariance", "bad_shape"),
]
