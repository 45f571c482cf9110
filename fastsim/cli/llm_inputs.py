"""``run llm``'s model-dependent options turned into library inputs: per-tensor dtypes
(``--tensor-dtype``), bytes per weight measured from a checkpoint (``--checkpoint``) and the
routing of mixture-of-experts models (``--routing*``). Each is checked against the model, so that
an option the model would silently ignore (a router dtype for a dense model, an LM-head dtype for a
tied head, a routing seed nothing samples with) is refused by name instead.
"""
from __future__ import annotations

import click
from click.core import ParameterSource

from ..errors import ConfigError
from ..llm.model import WEIGHT_DTYPES, ModelConfig

TENSOR_KINDS = ("embedding", "lm_head", "attention", "ffn", "router")  # Precision's per-tensor fields
# a checkpoint whose weight count of a kind is off by more than this is another model (2 %: room for
# tensors the model does not simulate, e.g. BERT's masked-LM transform, counted beside the FFN)
SAME_MODEL_TOLERANCE = 0.02
ROUTING_OPTIONS = {"routing": "--routing", "routing_seed": "--routing-seed",
                   "routing_histogram": "--routing-histogram", "routing_samples": "--routing-samples"}


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user set option ``name`` (on the command line or through the environment),
    rather than leaving its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def precision_clashes(ctx: click.Context, precision: dict) -> list[str]:
    """The precision options given on the command line that an as-built file's [model] table
    (``precision``) also sets: run llm and study ablate refuse each (which one wins would be a guess)."""
    return [f"--{k}" for k in ("weights", "kv", "activations") if k in precision and given(ctx, k)]


def parse_tensor_dtypes(values: tuple[str, ...]) -> dict[str, str]:
    """("KIND=DTYPE", ...) -> {KIND: DTYPE}; every malformed entry reported at once."""
    out, problems = {}, []
    for v in values:
        kind, sep, dtype = (s.strip() for s in v.partition("="))
        if not sep:
            problems.append(f"{v!r}: expected KIND=DTYPE, e.g. lm_head=bf16")
        elif kind not in TENSOR_KINDS:
            problems.append(f"{v!r}: KIND {kind!r} must be one of {', '.join(TENSOR_KINDS)}")
        elif dtype not in WEIGHT_DTYPES:
            problems.append(f"{v!r}: DTYPE {dtype!r} must be one of {', '.join(WEIGHT_DTYPES)}")
        elif out.get(kind, dtype) != dtype:
            problems.append(f"{v!r}: {kind} is already {out[kind]} (give each KIND once)")
        else:
            out[kind] = dtype
    if problems:
        raise click.BadParameter("; ".join(problems), param_hint="--tensor-dtype")
    return out


def measured_bytes(path: str, model: ModelConfig, pinned: dict[str, str]) -> tuple[tuple[str, float], ...]:
    """``Precision.measured`` from a checkpoint's headers: bytes per weight of each kind the model
    simulates and the checkpoint holds, after checking that the checkpoint is this model's (weight
    counts per kind within ``SAME_MODEL_TOLERANCE``) and that ``--tensor-dtype`` (``pinned``) does
    not set the same kind."""
    from ..llm.checkpoint import read_checkpoint

    ck = read_checkpoint(path)
    have = model.weights_by_kind()
    problems = [p for kind in TENSOR_KINDS if (p := _count_problem(kind, ck.params_by_kind.get(kind, 0), model, have))]
    measured = tuple((kind, ck.bytes_per_weight(kind)) for kind in TENSOR_KINDS
                     if ck.params_by_kind.get(kind) and have[kind])
    problems += [f"--checkpoint measures {kind} and --tensor-dtype sets {kind}={pinned[kind]}: which wins would "
                 "be a guess; drop one" for kind, _ in measured if kind in pinned]
    if problems:
        raise ConfigError(problems, f"checkpoint {path}")
    return measured


def _count_problem(kind: str, held: int, model: ModelConfig, have: dict[str, int]) -> str | None:
    """Why a checkpoint holding ``held`` weights of ``kind`` is not this model's, or None.

    A model without an LM head of its own (tied, or an encoder) reads none, so a head a checkpoint
    stores anyway (a tied copy, BERT's masked-LM head) is no evidence either way."""
    want = have[kind]
    if kind == "lm_head" and not want:
        return None
    if abs(held - want) <= SAME_MODEL_TOLERANCE * want:
        return None
    untied = " (an untied LM head)" if kind == "lm_head" else ""
    return (f"checkpoint holds {held:,} {kind} weights, {model.name} has {want:,}{untied}: not the same model?")


def routing_from(ctx: click.Context, o, model: ModelConfig):
    """The ``Routing`` of the ``--routing*`` options, refusing each one given explicitly that the
    model or the other options make meaningless."""
    from ..llm.routing import Routing, read_histogram

    explicit = [flag for name, flag in ROUTING_OPTIONS.items() if given(ctx, name)]
    if model.experts is None:
        if explicit:
            raise ConfigError([f"{flag} applies to mixture-of-experts models; {model.name} has none"
                               for flag in explicit], "routing")
        return Routing()
    problems = []
    if given(ctx, "routing_samples") and o.regime != "decode":
        problems.append(f"--routing-samples {o.routing_samples}: spreads are of decode steps (--regime decode), "
                        f"not {o.regime}")
    if given(ctx, "routing_seed") and o.routing != "sampled" and not o.routing_samples:
        problems.append(f"--routing-seed {o.routing_seed}: seeds --routing sampled or --routing-samples; with "
                        "--routing expected it changes nothing")
    if problems:
        raise ConfigError(problems, "routing")
    histogram = read_histogram(o.routing_histogram, model.experts, model.num_layers) if o.routing_histogram else ()
    return Routing(mode=o.routing, seed=o.routing_seed, histogram=histogram)
