"""Compiled (numba) per-sample loops of the finite-sum solver family.

Every kernel runs one epoch (or one inner loop) over a given index array and mutates the solver
state in place, so the Python driver in :mod:`solvers.methods` keeps the logic readable (step sizes,
access orders, stopping) and the compiled code runs the loop and nothing else (the scikit-learn
``_sag.py`` / ``_sag_fast.pyx`` split). Linear models ``f_i(x) = phi(a_i . x, y_i)`` store ONE
scalar per term (seed 001, section 4.4, L1514-1525). Dense rows are a 2-D C-contiguous array;
sparse rows are CSR ``(data, indices, indptr)``. Kernels taking both use ``sparse`` to choose.
"""
