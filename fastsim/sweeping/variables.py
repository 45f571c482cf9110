"""Registered sweep outputs: every variable a sweep can keep, with its dims, dtype, units and
description (one place, so stores are self-describing and specs can be validated)."""
from __future__ import annotations

from ..graph import OP_CLASSES
from ..llm.latency import QUANTILES
from ..llm.parameters import PARAMETERS as STUDY_PARAMETERS
from ..studies.registry import SWEEP_KINDS
from ..studies.variables import Variable
from ..systolic.inputs import OPERANDS

BOUND_RESOURCES = ("compute", "ddr", "shim_column", "dma_stream", "dispatch", "control")
STATUS = ("ok", "config_error", "simulation_error", "error")
MESSAGE_CHARS = 240
FAMILY_CHARS = 32


def _v(*args, **kw):
    return Variable(*args, **kw)


COMMON = {
    "status": _v("status", "1", "0 ok, 1 invalid configuration at this point, 2 simulation error, 3 any other "
                 "error (see message)", "int8", flags=STATUS),
    "seconds": _v("seconds", "s", "end-to-end time of the point (dispatch overheads included)"),
    "ddr_bytes": _v("ddr_bytes", "bytes", "DDR traffic, reads and writes"),
    "bound_by": _v("bound_by", "1", "binding resource (see flag_meanings)", "int8", flags=BOUND_RESOURCES),
}

LLM = {
    **COMMON,
    "tokens_per_s": _v("tokens_per_s", "tokens/s", "tokens processed per second"),
    "weight_bytes": _v("weight_bytes", "bytes", "DDR bytes of weights"),
    "kv_bytes": _v("kv_bytes", "bytes", "DDR bytes of the KV cache (reads and appends)"),
    "activation_bytes": _v("activation_bytes", "bytes", "DDR bytes of activations"),
    "macs": _v("macs", "MAC", "multiply-accumulates of the forward pass"),
    "energy_j": _v("energy_j", "J", "energy from the arch energy table (assumptions)"),
    "dispatch_seconds": _v("dispatch_seconds", "s", "host dispatch overheads"),
    "control_seconds": _v("control_seconds", "s", "runtime-sequence instructions setting ops up inside their "
                          "dispatches"),
    "by_class": _v("by_class", "s", "time per op class", extra_dim=("op_class", OP_CLASSES)),
    # the point's model facts, to segment a sweep over models (strings are fixed width: FAMILY_CHARS)
    "family": _v("family", "1", "model family (the config.json model_type: llama, qwen3, gemma3, mistral, "
                 "mixtral, gpt_oss, bert, ...); empty where the point failed", f"<U{FAMILY_CHARS}"),
    "params": _v("params", "parameters", "weights of the model, every expert counted", "int64"),
    "active_params": _v("active_params", "parameters", "weights one token runs through (mixture of experts: "
                        "only its chosen experts)", "int64"),
    "sliding_window": _v("sliding_window", "tokens", "the largest sliding window of any layer (0: every layer "
                         "attends to the whole context)", "int64"),
    "kv_cache_bytes": _v("kv_cache_bytes", "bytes", "one sequence's KV cache at the point's context (decode: the "
                         "context it reads; prefill: prefill_context + prompt; encode: 0), sliding-window layers "
                         "holding at most their window"),
    # with a samples > 0 parameter (fastsim.llm.latency; NaN without)
    "token_latency_quantile_s": _v("token_latency_quantile_s", "s", "quantiles of per-token latency under the "
                                   "seeded variance model", extra_dim=("quantile", QUANTILES)),
    "ttft_quantile_s": _v("ttft_quantile_s", "s", "quantiles of time to first token under the seeded variance "
                          "model", extra_dim=("quantile", QUANTILES)),
}

GEMM = {
    **COMMON,
    "total_cycles": _v("total_cycles", "cycles", "cycles of the kernel", "int64"),
    "ops_per_s": _v("ops_per_s", "op/s", "achieved operations per second"),
    "peak_fraction": _v("peak_fraction", "1", "achieved over peak operations per second"),
}

SYSTOLIC = {  # every layer of the topology on the point's mesh, summed
    "status": COMMON["status"],
    "total_cycles": _v("total_cycles", "cycles", "SCALE-Sim total cycles, summed over layers", "int64"),
    "compute_cycles": _v("compute_cycles", "cycles", "cycles with unlimited bandwidth, summed over layers", "int64"),
    "stall_cycles": _v("stall_cycles", "cycles", "memory stall cycles, summed over layers", "int64"),
    "stall_cycles_by_operand": _v("stall_cycles_by_operand", "cycles", "stall cycles by the operand whose buffer "
                                  "set them", extra_dim=("operand", OPERANDS)),
    "overall_utilization": _v("overall_utilization", "%", "MACs / (total cycles x PEs) over all layers"),
    "macs": _v("macs", "MAC", "multiply-accumulates of all layers"),
    "sram_words": _v("sram_words", "words", "SRAM reads and writes of all layers"),
    "dram_words": _v("dram_words", "words", "DRAM reads and writes of all layers"),
    "dram_words_by_operand": _v("dram_words_by_operand", "words", "DRAM words by operand (ifmap, filter reads; "
                                "ofmap writes)", extra_dim=("operand", OPERANDS)),
}

# every kind's outputs: the studies' from their declarations (``fastsim.studies.registry``), each with
# the point's status first
REGISTRY = {"llm": LLM, "gemm": GEMM, "systolic": SYSTOLIC,
            **{name: {"status": COMMON["status"], **kind.outputs} for name, kind in SWEEP_KINDS.items()}}

MESSAGE = _v("message", "1", f"why the point failed (status > 0; first {MESSAGE_CHARS} characters), empty when it "
             "did not", f"<U{MESSAGE_CHARS}")
for _registry in REGISTRY.values():  # every kind stores why a point failed
    _registry["message"] = MESSAGE


# units of sweep parameters (axis coordinates): by name, else by the unit suffix of the name
# the declared LLM study parameters' units (fastsim.llm.parameters), the study kinds' own parameters'
# (their declarations), then the other parameters'
PARAMETER_UNITS = {**{p.name: p.units for p in STUDY_PARAMETERS},
                   **{name: units for kind in SWEEP_KINDS.values() for name, units in kind.extra.items()},
                   "m": "elements", "k": "elements", "n": "elements", "tile_m": "elements",
                   "tile_k": "elements", "tile_n": "elements", "cols": "columns", "columns": "columns",
                   "rows": "PEs", "group_size": "weights", "samples": "1", "clock_hz": "Hz",
                   "word_bytes": "bytes"}
SUFFIX_UNITS = (("_words_per_cycle", "words/cycle"), ("_bytes_per_cycle", "bytes/cycle"), ("_bytes_per_s", "bytes/s"), ("_cycles", "cycles"),
                ("_hz", "Hz"), ("_bytes", "bytes"), ("_kb", "kB"), ("_s", "s"), ("_pj", "pJ"))


def parameter_units(name: str) -> str:
    """The unit of a sweep parameter ("1" for counts, ratios and names)."""
    bare = name.split(".", 1)[1] if name.startswith("arch.") else name
    if bare in PARAMETER_UNITS:
        return PARAMETER_UNITS[bare]
    return next((unit for suffix, unit in SUFFIX_UNITS if bare.endswith(suffix)), "1")
