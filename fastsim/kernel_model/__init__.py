"""Kernel model: cycles of one core-kernel call from the core's documented units (MAC issue rate per
dtype, L1 load/store ports, accumulator moves and shift-round-saturate, loop fill/drain, per-call
overhead), per core generation, instead of a single efficiency.

One module per kernel family (``matmul``: matmul/GEMV micro-kernels; ``conv``: standard, depthwise
and pointwise conv; ``vector``/``attention``: vector-unit kernels). This package sits at the
engine-interface layer beside ``fastsim.cost``: it imports only arch, errors, dtypes, settings and
kernels. Import the family module you need; nothing is re-exported here so that the families stay
independent. docs/kernel_model.md lists every parameter with its source.
"""
