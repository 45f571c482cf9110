"""Which BD chains loop forever, found for all BDs in one walk (``validate.endless_chains``), is
what following each chain on its own (``validate.chain_of``) says."""
from hypothesis import given
from hypothesis import strategies as st

import fastsim
from fastsim.design import Design, mm2s
from fastsim.validate import chain_of, endless_chains


@given(st.lists(st.one_of(st.none(), st.integers(0, 30)), min_size=1, max_size=30))
def test_endless_chains__equal_walking_each_chain(successors):
    d = Design(fastsim.NPU2)
    buf = d.buffer(d.mem(0), 64)
    bds = [d.bd(mm2s(d.mem(0)), buf, 64) for _ in successors]
    for b, nxt in zip(bds, successors):
        b.next = None if nxt is None else bds[nxt % len(bds)]
    endless = endless_chains(bds)
    assert endless == {b.id: chain_of(b)[1] for b in bds}
    assert any(endless.values()) == any(chain_of(b)[1] for b in bds)
