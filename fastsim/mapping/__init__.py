"""The mapper: the mapping space of matmul-like ops, closed-form bounds, and a search whose best
candidates are simulated cycle-exactly in one batch (``docs/mapping.md``)."""
from .design import matmul_design
from .plan import check as check_mapping
from .search import Pins, SearchResult, clear_cache, search
from .space import Mapping, Matmul, baseline_mapping

__all__ = ["check_mapping", "Mapping", "Matmul", "Pins", "SearchResult", "baseline_mapping", "clear_cache", "matmul_design",
           "search", "map_matmul"]


def map_matmul(*args, **kwargs):
    """Search a matmul's mapping; returns an xarray Dataset over ``candidate`` (see
    ``fastsim.mapping.results.to_dataset``)."""
    from .results import map_dataset

    return map_dataset(*args, **kwargs)
