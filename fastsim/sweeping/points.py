"""Evaluate one sweep point: build the arch and the study from its parameters, simulate, and
return the registered outputs. A point that is invalid (say, a mapping that does not fit) gets
status 1 and empty outputs instead of stopping the sweep."""
from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import numpy as np

from ..arch import load
from ..errors import ConfigError, SimulationError
from ..llm.parameters import PRECISION_NAMES, from_words
from ..studies.registry import SWEEP_KINDS
from .spec import ARCH_FIELDS, LLM_KINDS, SweepSpec, prefill_context_refusal, spec_dir
from .variables import BOUND_RESOURCES, OPERANDS, REGISTRY


def split_params(params: dict) -> tuple[dict, dict]:
    """(study parameters, arch overrides)."""
    study, arch = {}, {}
    for name, value in params.items():
        if name.startswith("arch."):
            arch[name[5:]] = value
        elif name in ARCH_FIELDS and not name.startswith(("dataflow.", "columns.")):
            arch[name] = value
        else:
            study[name] = value
    return study, arch


def build_arch(spec: SweepSpec, overrides: dict):
    table = dict(spec.arch)
    base = load(table.pop("base", "npu2"))
    changes = {**table, **overrides}
    return base.replace(**changes) if changes else base


def _tuple(value) -> tuple:
    if value in (None, "", "none"):
        return ()
    if isinstance(value, str):
        return tuple(x for x in value.replace("+", ",").split(",") if x)
    return tuple(value)


PRECISION_PARAMS = ("weights", "kv", "activations", "group_size", "weight_compression", "kv_compression",
                    "embedding", "lm_head", "attention", "ffn", "router")
WEIGHT_KIND_PARAMS = ("embedding", "lm_head", "attention", "ffn", "router")  # "" : as ``weights``


def llm_study(params: dict):
    """The ``LlmStudy`` of a point's study parameters (spec names mapped to the study's fields).

    ``routing`` / ``routing_seed`` become ``Routing(mode, seed)``; the per-kind weight dtypes
    (``embedding``, ``lm_head``, ``attention``, ``ffn``, ``router``; "" = as ``weights``) go to
    ``Precision``; ``search_budget = "exact"`` is None. A point without ``weights`` runs the
    model's stored precision (its config.json's ``quantization_config``, e.g. gpt-oss's mxfp4; else
    ``Precision()``), its other precision keys replacing that storage's; a given ``weights`` is a
    what-if of the whole model and wins, as ``fastsim run llm --weights`` does. A prefill point's
    ``context`` is refused (its cached tokens are ``prefill_context``); for encode (which keeps no
    cache) ``context`` is the input length when no ``prompt`` is given.
    """
    from ..llm import LlmStudy
    from ..llm.routing import Routing

    why = prefill_context_refusal(params)
    if why:
        raise ConfigError([f"context = {params['context']!r}: {why}"], "llm study")
    p = from_words(params)
    given = {k: p.pop(k) for k in PRECISION_PARAMS if k in p}
    given.update({k: given[k] or None for k in WEIGHT_KIND_PARAMS if k in given})
    names = {k: given.pop(k) for k in PRECISION_NAMES if k in given}  # LlmStudy's own precision arguments
    routing = Routing(**{f: p.pop(k) for k, f in (("routing", "mode"), ("routing_seed", "seed")) if k in p})
    dataflow = {k.split(".", 1)[1]: p.pop(k) for k in list(p) if k.startswith("dataflow.")}
    columns = {k.split(".", 1)[1]: int(p.pop(k)) for k in list(p) if k.startswith("columns.")}
    if p.get("regime") == "encode" and "context" in p and "prompt" not in p:
        p["prompt"] = p.pop("context")  # an encoder keeps no cache: context is the input's length
    if "noop" in p:
        p["noop"] = _tuple(p["noop"])
    if "cuts" in p:  # "" (or absent): the greedy default; "none": one dispatch
        p["cuts"] = None if p["cuts"] == "" else tuple(int(x) for x in _tuple(p["cuts"]))
    study = LlmStudy(dataflow=dataflow, columns=columns, routing=routing, **names, **p)
    return replace(study, precision=replace(study.precision, **given)) if given else study


def cached_tokens(spec: SweepSpec, params: dict) -> dict:
    """A point's parameters with a ``context`` crossed with a ``regime`` axis read as each point's
    tokens cached before its pass: decode's ``context``, prefill's ``prefill_context``. Only where
    the spec gives no ``prefill_context``: a cartesian product has no other way to pair them
    (``sweeps/kv_growth.toml``). A spec that fixes the regime to prefill writes ``prefill_context``."""
    crossed = spec.kind in LLM_KINDS and "regime" in spec.axes and "prefill_context" not in spec.base | spec.axes
    if crossed and params.get("regime") == "prefill" and "context" in params:
        params = dict(params)
        params["prefill_context"] = params.pop("context")
    return params


def evaluate(spec: SweepSpec, params: dict) -> dict:
    """Outputs of one point (NaN or -1 where a point failed)."""
    registry = REGISTRY[spec.kind]
    study_params, arch_overrides = split_params(cached_tokens(spec, params))
    try:
        if spec.kind == "systolic":
            values = _systolic(params, spec)
        else:
            arch = build_arch(spec, arch_overrides)
            values = RUNNERS[spec.kind](study_params, arch)
        values["status"] = 0
    except ConfigError as e:
        values = {"status": 1, "message": str(e)}
    except SimulationError as e:
        values = {"status": 2, "message": str(e)}
    except Exception as e:  # one bad point must not abort the sweep: it gets a status and the reason
        values = {"status": 3, "message": f"{type(e).__name__}: {e}"}
    out = {}
    for name in spec.outputs:
        var = registry[name]
        if var.extra_dim:
            labels = var.extra_dim[1]
            got = values.get(name, {})
            out[name] = np.array([got.get(lbl, 0.0) if values["status"] == 0 else math.nan for lbl in labels])
        elif var.dtype.startswith("<U"):  # strings (message, family): empty where not known
            out[name] = str(values.get(name, ""))[:int(var.dtype[2:])]
        elif name in values:
            out[name] = values[name]
        else:
            out[name] = -1 if var.dtype.startswith("int") else math.nan
    return out


def _llm(params: dict, arch) -> dict:
    from ..llm.run import summarize_llm

    p = dict(params)
    samples, seed, load = int(p.pop("samples", 0)), int(p.pop("seed", 0)), float(p.pop("load", 0.5))
    study = llm_study(p)
    # no sweep output reads the compute / movement split, nor any op's stall attribution
    s = summarize_llm(study, arch, movement=False, stalls=False)
    s["bound_by"] = BOUND_RESOURCES.index(s["bound_by"])
    s.update(model_facts(study))
    if samples:
        from ..llm.latency import VarianceModel, latency_distribution

        tails = latency_distribution(study, arch, samples, seed, VarianceModel(load=load))
        for name in ("token_latency_quantile_s", "ttft_quantile_s"):
            s[name] = dict(zip(tails["quantile"].values.tolist(), tails[name].values.tolist()))
    return s


def model_facts(study) -> dict:
    """The point's model facts (``family``, ``params``, ``active_params``, ``sliding_window``) and
    ``kv_cache_bytes``: one sequence's cache at the tokens the pass leaves cached (decode: the
    ``context`` it reads; prefill: ``prefill_context + prompt``; encode: none)."""
    from ..llm.transformer import kv_cache_bytes

    model = study.model_config()
    cached = {"decode": study.context, "prefill": study.prefill_context + study.prompt}.get(study.regime, 0)
    return {"family": model.family, "params": int(model.params),
            "active_params": int(model.active_params), "sliding_window": max(model.windows, default=0),
            "kv_cache_bytes": kv_cache_bytes(model, study.precision, cached)}


def _study_point(kind, params: dict, arch) -> dict:
    """A study kind's point (``fastsim.studies.registry``): its own parameters (``kind.extra``) by
    name, the rest as the point's ``LlmStudy``."""
    p = dict(params)
    extra = {name: p.pop(name) for name in kind.extra if name in p}
    return kind.point(llm_study(p), arch, **extra)


def _gemm(params: dict, arch) -> dict:
    from ..report import summarize
    from ..simulation import simulate
    from ..workloads.gemm import Gemm, gemm_design

    g = Gemm(**params)  # sweep parameters are Gemm's own field names
    ds = simulate(gemm_design(g, arch))
    s = summarize(ds, 0, arch, g.ops, g.dtype)
    s["bound_by"] = BOUND_RESOURCES.index(s["bound_by"])
    return s


def _topology(path: str):
    """The layers of a topology file, read per point (a small CSV: cheaper than caching a file that
    may change between points)."""
    from ..systolic import read_topology

    return read_topology(path)


def _systolic(params: dict, spec: SweepSpec) -> dict:
    from ..systolic import MeshConfig, mesh_metrics

    p = dict(params)
    layers = _topology(str(spec_dir(spec.source) / str(p.pop("topology"))))
    p.setdefault("dataflow", "os")
    p["bandwidth_words_per_cycle"] = p.get("bandwidth_words_per_cycle") or None  # 0: unlimited
    cfg = MeshConfig(**p)
    m = mesh_metrics(layers, [cfg])
    dram = {"ifmap": m["dram_ifmap_reads"].sum(), "filter": m["dram_filter_reads"].sum(),
            "ofmap": m["dram_ofmap_writes"].sum()}
    total = int(m["total_cycles"].sum())
    return {
        "total_cycles": total, "compute_cycles": int(m["compute_cycles"].sum()),
        "stall_cycles": int(m["stall_cycles"].sum()),
        "stall_cycles_by_operand": dict(zip(OPERANDS, m["stall_cycles_by_operand"].sum(axis=(0, 1)).tolist())),
        "overall_utilization": 100.0 * m["macs"].sum() / (max(total, 1) * cfg.rows * cfg.cols),
        "macs": float(m["macs"].sum()),
        "sram_words": float((m["sram_ifmap_reads"] + m["sram_filter_reads"] + m["sram_ofmap_writes"]).sum()),
        "dram_words": float(sum(dram.values())),
        "dram_words_by_operand": {k: float(v) for k, v in dram.items()},
    }


# how a point of each sweep kind runs (systolic points take the spec itself: ``evaluate``; a study's
# kind runs its declared point: ``fastsim.studies.registry``); a kind declared in REGISTRY without a
# runner would store every point as failed: refused at import
RUNNERS = {"llm": _llm, "gemm": _gemm, **{name: partial(_study_point, kind) for name, kind in SWEEP_KINDS.items()}}
if set(RUNNERS) | {"systolic"} != set(REGISTRY):
    raise ImportError("sweep kinds without a runner or runners without a kind: "
                      f"{(set(RUNNERS) | {'systolic'}) ^ set(REGISTRY)}")
