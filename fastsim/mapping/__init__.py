"""The mapper: the mapping space of matmul-like ops, closed-form bounds, and a search whose best
candidates are simulated cycle-exactly in one batch (``docs/mapping.md``)."""
from .design import matmul_design
from .plan import check as check_mapping
from .pins import Pins
from .search import search
from .search_result import SearchResult
from .space import Mapping, Matmul, baseline_mapping

__all__ = ["check_mapping", "Mapping", "Matmul", "Pins", "SearchResult", "baseline_mapping", "matmul_design",
           "search", "map_matmul", "datapath_of"]


def map_matmul(*args, **kwargs):
    """Search a matmul's mapping; returns an xarray Dataset over ``candidate`` (see
    ``fastsim.mapping.results.to_dataset``)."""
    from .results import map_dataset

    return map_dataset(*args, **kwargs)


def datapath_of(op: Matmul, mapping: Mapping, arch) -> str:
    """The MAC datapath ``mapping`` runs ``op`` on (the key of ``arch.macs_per_cycle`` and
    ``arch.efficiency``): the mapping's own, else the arch's fastest for the op's dtype. A mapping
    that cannot exist on ``arch`` is a ConfigError."""
    from ..errors import ConfigError
    from .plan import structure

    resolved = structure(op, mapping, arch)
    if isinstance(resolved, str):
        raise ConfigError([resolved], "mapping")
    return resolved.macs_key
