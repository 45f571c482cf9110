"""Studies that carry out the optimization method (``docs/studies.md``, walked through in ``docs/tutorial.md``): each returns an
xarray Dataset with units on every variable and can write a Markdown report with figures."""
from .ablate import ablate
from .bandwidth import bandwidth
from .compression import compression
from .cuts import cuts
from .dataflow import dataflow, playbook
from .overlays import Request, overlays, parse_request
from .regimes import Regime, parse_regime, parse_regimes

__all__ = ["ablate", "bandwidth", "compression", "cuts", "dataflow", "playbook", "overlays", "Request", "parse_request", "Regime",
           "parse_regime", "parse_regimes"]
