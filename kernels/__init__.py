"""Numba kernels of fastsim, installed as ``fastsim.kernels``.

Pure functions over plain arrays: they import only numpy, numba and ``_jit`` (the one module that
owns numba settings). Configuration, validation and unpacking live in ``fastsim``.
"""
