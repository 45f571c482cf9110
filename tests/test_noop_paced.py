"""A pass that computes nothing is never slower than the one that computes, even where the engine's
own NOOP run of an op is (a timing anomaly: without compute between them, the DMA requests meet in
another order). Found on mlir-air's as-built Llama prefill: at 512 tokens the ffn_down GEMM's NOOP
design (row-major DDR, bfp16) simulates 5 us slower than the GEMM itself."""
from dataclasses import replace

from pathlib import Path

import numpy as np
import pytest

from fastsim.arch import NPU2
from fastsim.llm import LlmStudy, simulate_llm
from fastsim.llm.run import apply_overlay, pinned_layout
from fastsim.mapping.overlay import load_as_built

ROOT = Path(__file__).resolve().parents[1]



@pytest.fixture(scope="module")
def as_built_prefill():
    built = load_as_built(ROOT / "examples" / "as_built" / "air_prefill_bf16.toml")
    study = LlmStudy(model="llama-3.2-1b", regime="prefill", prompt=512)
    study = replace(study, precision=replace(study.precision, **built.precision))
    study = apply_overlay(study, built.overlays["prefill"])
    return study, simulate_llm(study, NPU2)


def test_an_ops_data_movement_never_takes_longer_than_the_op(as_built_prefill):
    _, run = as_built_prefill
    assert np.all(run.movement_seconds.values <= run.op_seconds.values)


def test_noop_of_the_anomalous_class_saves_time_per_op_and_in_total(as_built_prefill):
    study, run = as_built_prefill
    ablated = simulate_llm(replace(pinned_layout(study, run), noop=("gemm",)), NPU2)
    assert np.all(ablated.op_seconds.values <= run.op_seconds.values)
    assert float(ablated.total_seconds) < float(run.total_seconds)
