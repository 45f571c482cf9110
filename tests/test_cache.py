"""The one cache (fastsim.cache): a later process gets the very same search from the disk tier,
which holds JSON and plain arrays (no pickle) that decode to what was stored; a different code
version or a damaged entry never answers; clear() forgets every region; the disk tier can be
switched off by environment or settings."""
import dataclasses
import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as settings_h
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import xarray as xr

import fastsim
from fastsim import cache, settings
from fastsim.lower import lower
from fastsim.mapping import Matmul, Pins, search
from fastsim.mapping.search import REGION as SEARCH_REGION, _key as search_key
from fastsim.mapping.search_store import decode, encode

SEARCH = """
import json, sys, fastsim
from fastsim.mapping import Matmul, search
r = search(Matmul(256, 128, 512, "bf16"), fastsim.NPU2)
print(json.dumps([r.best.label(), r.best_cycles, [x["label"] for x in r.ranked]]))
"""


def _search_in_new_process(env) -> list:
    out = subprocess.run([sys.executable, "-c", SEARCH], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_cache__a_later_process_reads_the_same_search_from_plain_files(tmp_path):
    env = dict(os.environ, FASTSIM_CACHE_DIR=str(tmp_path), FASTSIM_CACHE="1")
    first = _search_in_new_process(env)
    stored = list(tmp_path.glob("v*/search/*" + cache.SUFFIX))
    assert len(stored) == 1
    plain, arrays = cache._read_entry(stored[0])  # JSON and plain arrays: nothing to unpickle
    assert plain["value"]["best_cycles"] == first[1]
    assert all(a.dtype.kind in "iufbU" for a in arrays.values())
    assert _search_in_new_process(env) == first
    stored[0].write_bytes(b"not an archive")  # a damaged entry is searched again and rewritten
    assert _search_in_new_process(env) == first
    assert stored[0].read_bytes() != b"not an archive"


@pytest.mark.parametrize("op, pins", [(Matmul(96, 160, 224, "int8"), Pins()),
                                      (Matmul(64, 512, 128, "bf16", b_bytes=0.5625, cast_cycles_per_weight=1 / 32,
                                              name="q_proj"), Pins(dataflow=("ws",)))])
def test_cache__a_search_decodes_to_what_was_encoded(op, pins, tmp_path):
    found = search(op, fastsim.NPU2, pins)
    cache._write_entry(tmp_path / "entry", *encode(found))  # through the file, as a later process reads it
    back = decode(*cache._read_entry(tmp_path / "entry"), fastsim.NPU2)
    for name in ("op", "best", "best_cycles", "ranked", "rejected", "enumerated", "legal", "rejected_by_reason"):
        assert getattr(back, name) == getattr(found, name), name
    for name, value in found.best_arrays._asdict().items():  # what an evaluation reads: no Dataset built
        np.testing.assert_array_equal(getattr(back.best_arrays, name), value, err_msg=name)
        assert np.asarray(getattr(back.best_arrays, name)).dtype == np.asarray(value).dtype, name
    xr.testing.assert_identical(back.best_simulation, found.best_simulation)
    assert all(back.best_simulation[v].dtype == found.best_simulation[v].dtype for v in found.best_simulation.variables)
    rebuilt, original = lower(back.best_design), lower(found.best_design)
    for table in ("prm", "bds", "ch", "cons", "prog", "cores", "host", "lock_init", "col_rates"):
        np.testing.assert_array_equal(getattr(rebuilt, table), getattr(original, table), err_msg=table)


def test_cache__a_search_whose_run_is_not_kept_is_not_stored(tmp_path):
    found = search(Matmul(96, 160, 224, "int8"), fastsim.NPU2)
    unkept = dataclasses.replace(found, best_run=found.best_simulation)
    with pytest.raises(TypeError, match="Dataset"):
        encode(unkept)
    with settings.use(cache=True, cache_dir=str(tmp_path)):  # the disk tier skips it, and says nothing
        cache.CACHE.put("search", ("an unkept answer",), unkept)
    assert not list(tmp_path.rglob("*" + cache.SUFFIX))


def test_cache__other_code_versions_and_off_never_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FASTSIM_CACHE", "1")
    op = Matmul(128, 128, 128, "bf16")
    cache.clear()
    found = search(op, fastsim.NPU2)
    key = search_key(op, fastsim.NPU2, Pins(), 6, 50, None)  # as search() keys it
    assert list(tmp_path.glob("v*/search/*" + cache.SUFFIX))
    cache.clear()
    assert cache.CACHE.get("search", key, fastsim.NPU2).best_cycles == found.best_cycles  # from disk
    cache.clear()
    monkeypatch.setattr(cache, "code_version", lambda: "another")
    assert cache.CACHE.get("search", key, fastsim.NPU2) is None  # another simulator's answers are not read
    monkeypatch.undo()
    for off in (dict(env="0"), dict(setting=False)):
        monkeypatch.setenv("FASTSIM_CACHE_DIR", str(tmp_path / "off"))
        monkeypatch.setenv("FASTSIM_CACHE", off.get("env", "1"))
        cache.clear()
        with settings.use(cache=off.get("setting")):
            assert search(op, fastsim.NPU2).best_cycles == found.best_cycles
            assert cache.directory() is None
        assert not (tmp_path / "off").exists()


def test_cache__clear_forgets_every_region_or_those_named():
    search(Matmul(64, 64, 64, "bf16"), fastsim.NPU2)
    assert cache.CACHE.size("search") > 0 and cache.CACHE.size("engine") > 0
    cache.clear("engine")
    assert cache.CACHE.size("engine") == 0 and cache.CACHE.size("search") > 0
    cache.clear()
    assert all(cache.CACHE.size(r) == 0 for r in ("engine", "search", "op"))


def test_cache__clearing_a_region_it_does_not_have_is_refused_by_name():
    with pytest.raises(ValueError, match="engin"):
        cache.clear("engin")


def test_cache__costly_entries_outlive_any_number_of_cheap_ones():
    c = cache.Cache((cache.Region("r", 4, costly_size=2),))
    c.put("r", "slow", 1, costly=True)
    for i in range(50):  # a study's many small designs between two uses of a large one
        c.put("r", i, i)
    assert c.get("r", "slow") == 1 and c.get("r", 0) is None and c.size("r") == 5
    for name in ("slow2", "slow3"):  # the costly tier is itself bounded, least recently used first
        c.put("r", name, name, costly=True)
    assert c.get("r", "slow") is None and c.get("r", "slow3") == "slow3"
    c.clear("r")
    assert c.size("r") == 0


def test_cache__engine_runs_that_stepped_long_go_to_the_costly_tier(monkeypatch):
    from fastsim import result_cache
    from fastsim.simulation import run_batch
    from helpers import passthrough

    cache.clear("engine")
    monkeypatch.setattr(result_cache, "COSTLY_STEPS", 10**12)
    run_batch([lower(passthrough(n_obj=3))])
    assert len(cache.CACHE._costly["engine"]) == 0 and cache.CACHE.size("engine") == 1
    monkeypatch.setattr(result_cache, "COSTLY_STEPS", 1)
    run_batch([lower(passthrough(n_obj=4))])
    assert len(cache.CACHE._costly["engine"]) == 1 and cache.CACHE.size("engine") == 2


_ARRAYS = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=6),
    st.one_of(
        hnp.arrays(st.sampled_from([np.int64, np.int32, np.float64, np.bool_, np.uint8]),
                   hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
        hnp.arrays(hnp.unicode_string_dtypes(), hnp.array_shapes(max_dims=2, max_side=3)),
    ),
    max_size=6)


@settings_h(max_examples=60, deadline=None)
@given(arrays=_ARRAYS)
def test_cache__entry_file_round_trips_every_array_exactly(arrays, tmp_path_factory):
    """What the disk tier writes it reads back: the same dtype, shape and bits, writable and
    aligned for its dtype (kernels take cached tables as they are)."""
    path = tmp_path_factory.mktemp("entry") / ("e" + cache.SUFFIX)
    cache._write_entry(path, {"key": "k", "value": {"n": 1}}, arrays)
    plain, back = cache._read_entry(path)
    assert plain == {"key": "k", "value": {"n": 1}}
    assert list(back) == list(arrays)
    for name, a in arrays.items():
        b = back[name]
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(b, a)
        assert b.flags.writeable and b.flags.aligned


def test_cache__entry_file_refuses_python_objects(tmp_path):
    with pytest.raises(TypeError, match="only plain numbers and strings"):
        cache._write_entry(tmp_path / "e", {"key": "k"}, {"x": np.array([{"a": 1}], dtype=object)})


def test_cache__entries_the_live_tier_drops_are_kept_packed_and_unpacked_on_a_hit():
    def encode(value):
        if value == "unwritable":
            raise TypeError("no codec for it")
        return {"name": value[0]}, {"numbers": value[1]}

    def decode(plain, arrays, context):
        if plain["name"] == "bad":
            raise KeyError("unreadable")
        return (plain["name"] + context, arrays["numbers"])

    c = cache.Cache((cache.Region("r", 2, cache.Codec(encode, decode), packed_size=3),))
    with settings.use(cache=False):  # memory only: a dropped entry is not read back from disk
        c.put("r", 0, ("a", np.arange(3)))
        c.put("r", 1, "unwritable")
        for i in range(2, 5):
            c.put("r", i, (str(i), np.full(2, i)))
        assert len(c._memory["r"]) == 2 and len(c._packed["r"]) == 2 and c.size("r") == 4
        name, numbers = c.get("r", 0, "!")  # packed: decoded with the caller's context, live again
        assert name == "a!" and numbers.tolist() == [0, 1, 2] and 0 in c._memory["r"] and 0 not in c._packed["r"]
        assert c.get("r", 1, "!") is None  # the codec could not write it: let go
        for i in (5, 6, 7):
            c.put("r", i, (str(i), np.zeros(1)))
        assert c.get("r", 2, "!") is None  # the packed tier is bounded too, least recently used first
        c.put("r", "b", ("bad", np.zeros(1)))
        c.put("r", 8, ("8", np.zeros(1)))
        c.put("r", 9, ("9", np.zeros(1)))
        assert "b" in c._packed["r"] and c.get("r", "b", "!") is None and "b" not in c._packed["r"]  # unreadable
        c.clear("r")
        assert c.size("r") == 0


def test_cache__a_packed_tier_needs_a_codec():
    with pytest.raises(ValueError, match="needs a codec"):
        cache.Cache((cache.Region("r", 2, packed_size=3),))


def test_cache__a_packed_search_answer_is_the_same_answer(monkeypatch):
    """A search answer dropped from the live tier and read again is the answer searched (its
    design rebuilt from the op and mapping), and no search runs again."""
    op = Matmul(96, 256, 128, "bf16")
    with settings.use(cache=False):
        cache.clear()
        fresh = search(op, fastsim.NPU2)
        key = next(iter(cache.CACHE._memory[SEARCH_REGION]))
        cache.CACHE._memory[SEARCH_REGION].pop(key)
        cache.CACHE._pack(cache.CACHE._regions[SEARCH_REGION], [(key, fresh)], cache.CACHE._clears)
        assert key in cache.CACHE._packed[SEARCH_REGION]
        monkeypatch.setattr(importlib.import_module("fastsim.mapping.search"), "_search", None)  # no search again
        again = search(op, fastsim.NPU2)
        assert key not in cache.CACHE._packed[SEARCH_REGION] and key in cache.CACHE._memory[SEARCH_REGION]
    assert again is not fresh and again.best == fresh.best and again.best_cycles == fresh.best_cycles
    assert again.ranked == fresh.ranked and again.best_arrays.cycles == fresh.best_arrays.cycles
    assert (lower(again.best_design).bds == lower(fresh.best_design).bds).all()
    cache.clear()
