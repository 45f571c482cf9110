"""Searches cached on disk (fastsim.disk_cache): a later process gets the very same result, a
different code version or a damaged entry never answers, and the cache can be switched off."""
import json
import os
import subprocess
import sys

import fastsim
from fastsim import disk_cache
from fastsim.mapping import Matmul, clear_cache, search

SEARCH = """
import json, sys, fastsim
from fastsim.mapping import Matmul, search
r = search(Matmul(256, 128, 512, "bf16"), fastsim.NPU2)
print(json.dumps([r.best.label(), r.best_cycles, [x["label"] for x in r.ranked]]))
"""


def _search_in_new_process(env) -> list:
    out = subprocess.run([sys.executable, "-c", SEARCH], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_disk_cache__a_later_process_reads_the_same_search(tmp_path):
    env = dict(os.environ, FASTSIM_CACHE_DIR=str(tmp_path), FASTSIM_CACHE="1")
    first = _search_in_new_process(env)
    stored = list(tmp_path.glob("v*/search/*.pkl"))
    assert len(stored) == 1
    assert _search_in_new_process(env) == first
    stored[0].write_bytes(b"not a pickle")  # a damaged entry is searched again and rewritten
    assert _search_in_new_process(env) == first
    assert stored[0].read_bytes() != b"not a pickle"


def test_disk_cache__other_code_versions_and_off_never_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FASTSIM_CACHE", "1")
    op = Matmul(128, 128, 128, "bf16")
    clear_cache()
    found = search(op, fastsim.NPU2)
    key = (op, "any key")
    disk_cache.save("test", key, found.best_cycles)
    assert disk_cache.load("test", key) == found.best_cycles
    assert disk_cache.load("test", (op, "another key")) is None
    monkeypatch.setattr(disk_cache, "directory", lambda: tmp_path / "vother")
    assert disk_cache.load("test", key) is None  # another simulator's answers are not read
    monkeypatch.undo()
    monkeypatch.setenv("FASTSIM_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setenv("FASTSIM_CACHE", "0")
    clear_cache()
    search(op, fastsim.NPU2)
    assert disk_cache.directory() is None and not (tmp_path / "off").exists()
