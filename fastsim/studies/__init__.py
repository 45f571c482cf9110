"""Studies that carry out the optimization method (``docs/studies.md``, walked through in ``docs/tutorial.md``): each returns an
xarray Dataset with units on every variable and can write a Markdown report with figures."""
from .ablate import ablate
from .bandwidth import bandwidth
from .compression import compression
from .cuts import cuts
from .dataflow import dataflow, playbook
from .kv import kv
from .overlays import Request, overlays, parse_request
from .regimes import Regime, parse_regime, parse_regimes
from .traffic import traffic

__all__ = ["ablate", "bandwidth", "compression", "cuts", "dataflow", "playbook", "kv", "overlays", "Request", "parse_request", "Regime",
           "parse_regime", "parse_regimes", "traffic"]
