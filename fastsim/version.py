"""The version of fastsim, written once: pyproject.toml reads it from here
(``[tool.setuptools.dynamic]``), so the package metadata and ``fastsim.__version__`` agree."""
__version__ = "0.1.0"
