"""Searches run together (``search_many``: each step's candidates of every search in one engine
call) answer exactly as each search alone, in fewer engine calls."""
import pytest

import fastsim.simulation
from fastsim import settings
from fastsim.arch import NPU1, NPU2
from fastsim.cache import clear
from fastsim.errors import ConfigError
from fastsim.mapping import Matmul, Pins, search
from fastsim.mapping.search import search_many

REQUESTS = [(Matmul(32, 64, 64, "bf16"), NPU2, Pins(), 6, 50, None),
            (Matmul(1, 256, 512, "bf16"), NPU2, Pins(), 3, 0, 3),
            (Matmul(64, 128, 96, "int8"), NPU1, Pins(), 6, 50, None),
            (Matmul(16, 512, 128, "bf16"), NPU2, Pins(dataflow=("ws",)), 3, 10, 5)]


def _answers():
    return [(f.best, f.best_cycles, f.simulated, f.legal, f.unexplored_bound_cycles, f.ranked, f.rejected)
            for f in (search(op, arch, pins, top=top, keep=keep, budget=budget)
                      for op, arch, pins, top, keep, budget in REQUESTS)]


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = fastsim.simulation.run_batch

    def run_batch(lowered, *args, **kw):
        calls.append(len(lowered))
        return real(lowered, *args, **kw)

    monkeypatch.setattr(fastsim.simulation, "run_batch", run_batch)
    clear()
    with settings.use(cache=False):
        yield calls
    clear()


def test_together__the_same_answers_as_alone_in_fewer_engine_calls(counted):
    alone = _answers()
    calls_alone = list(counted)
    clear()
    counted.clear()
    search_many(REQUESTS)
    calls_together = list(counted)
    assert _answers() == alone  # the searches were answered by search_many: no call after it
    assert counted == calls_together and sum(calls_together) == sum(calls_alone)
    assert len(calls_together) < len(calls_alone)


def test_together__a_search_that_fails_fails_alone_with_its_own_error(counted):
    bad = (Matmul(1024, 1024, 1024, "bf16"), NPU2, Pins(tile=(256, 256, 256)), 6, 50, None)  # no tile fits L1
    with pytest.raises(ConfigError) as alone:
        search(*bad[:3], top=6, keep=50)
    search_many([bad, *REQUESTS[:2]])
    with pytest.raises(ConfigError) as after:
        search(*bad[:3], top=6, keep=50)
    assert after.value.problems == alone.value.problems
    assert [f.best_cycles for f in (search(op, arch, pins, top=t, keep=k, budget=b)
                                    for op, arch, pins, t, k, b in REQUESTS[:2])] == [a[1] for a in _answers()[:2]]


def test_together__a_graphs_pointwise_convs_join_its_gemm_searches(counted):
    """A pointwise conv's search is a GEMM search (``conv_search._pointwise``): the evaluator hands it
    to ``search_many`` with the graph's other GEMM searches (``conv_search.pointwise_request``), and
    the conv search then finds it answered."""
    from fastsim.evaluation import GraphPins
    from fastsim.graph import CONV, ConvGeometry, Op, Operand
    from fastsim.mapping.conv_search import search_conv
    from fastsim.mapping.mappers import search_request
    from fastsim.mapping.placed import Placed

    geometries = [ConvGeometry(1, 32, 14, 14, 64, 1, 1), ConvGeometry(1, 64, 14, 14, 32, 1, 1)]
    ops = [Op(f"pw{i}", "conv", 0, CONV, *g.gemm_extents(), Operand("activations", 1.0), Operand("weights", 1.0),
              Operand("activations", 1.0), conv=g) for i, g in enumerate(geometries)]
    pins = GraphPins(compute_dtype="int8", search_budget=None, search_control=False)  # as search_conv ranks
    requests = [search_request(Placed(op), NPU2, pins) for op in ops]
    assert all(r is not None for r in requests)
    search_many(requests)
    together = list(counted)
    from fastsim.mapping.conv_search import conv_of

    answers = [search_conv(conv_of(op, "int8"), NPU2, budget=None).best_cycles for op in ops]
    assert counted == together  # answered by search_many: the conv searches ran no engine call
    clear()
    counted.clear()
    assert [search_conv(conv_of(op, "int8"), NPU2, budget=None).best_cycles for op in ops] == answers
    assert len(together) < len(counted)
