"""``fastsim run llm``: a transformer's decode step, prefill, encode or whole generation, and the
replay of an optimize plan (``--plan``). The model-dependent options (per-tensor dtypes, a
checkpoint's measured bytes, routing) become library inputs in ``llm_inputs.py``."""
from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import click

from ..errors import ConfigError, SimulationError
from ..llm.routing import MODES as ROUTING_MODES
from ..report import units_of
from .common import MODEL_HELP, SOFT_LIMITS, fail, option_flag, run_options_here, study_option, too_big
from .llm_inputs import TENSOR_KINDS


@click.command("llm")
@run_options_here
@click.option("--model", default="llama-3.2-1b", show_default=True, help=MODEL_HELP)
@study_option("regime", extra_choices=("generate",),
              more_help="generate: prefill, overlay switch, then --new-tokens decode steps; an encoder "
                        "(bert-base) runs encode unless told otherwise, its --prompt at most its positions")
@click.option("--new-tokens", default=128, show_default=True, type=int, help="generate: tokens to decode")
@study_option("context")
@study_option("prompt")
@study_option("prefill_context")
@study_option("batch")
@study_option("weights", more_help="set one kind with --tensor-dtype, or measure them with --checkpoint")
@click.option("--tensor-dtype", "tensor_dtypes", multiple=True, metavar="KIND=DTYPE",
              help=f"one kind of weight tensor stored differently (repeatable), KIND one of {', '.join(TENSOR_KINDS)}, "
                   "DTYPE as --weights, e.g. --tensor-dtype lm_head=bf16 --tensor-dtype embedding=bf16")
@click.option("--checkpoint", "checkpoint_path", type=click.Path(exists=True), default=None,
              help="a .safetensors file, a folder of .safetensors shards or a .gguf file: bytes per weight of "
                   f"each kind ({', '.join(TENSOR_KINDS)}) measured from its headers (its weight counts must "
                   "match the model's within 2 %)")
@study_option("kv")
@study_option("activations")
@click.option("--routing", type=click.Choice(ROUTING_MODES), default="expected", show_default=True,
              help="mixture-of-experts models: which experts tokens pick; expected: the routing closest to the "
                   "expectation, sampled: drawn with --routing-seed")
@click.option("--routing-seed", default=0, show_default=True, type=click.IntRange(0, 2**63 - 1),
              help="seed of --routing sampled, and the first seed of --routing-samples")
@click.option("--routing-histogram", type=click.Path(dir_okay=False, exists=True), default=None,
              help="JSON of how often each expert is picked: a list of counts (all layers) or "
                   "{\"layers\": [[...], ...]} (default: uniform)")
@click.option("--routing-samples", default=0, show_default=True, type=click.IntRange(0, 10_000),
              help="mixture-of-experts decode: simulate the step under N sampled routings (seeds --routing-seed "
                   "onwards) and report p50/p95/p99 of step time and tokens/s")
@click.option("--noop", multiple=True, help="op class replaced by a data-only pass (repeatable)")
@click.option("--cuts", default="", help="cut into dispatches after these layers, e.g. 4,8,12; none: one "
              "dispatch (default: the greedy feasible cut)")
@click.option("--fusion", default="auto", show_default=True,
              help="auto: search per group (norm_qkv, flash_attention, ffn), pipelines (prefill) and chain; "
                   "none: every op via DDR; groups; chain; or kinds joined by +, KIND:pipeline for a "
                   "spatial pipeline, e.g. ffn:pipeline+flash_attention")
@click.option("--dataflow", "dataflows", multiple=True, help="CLASS_OR_OP=ws|is|os (repeatable)")
@click.option("--columns", "columns", multiple=True, help="CLASS_OR_OP=N columns to run on (repeatable)")
@study_option("residency")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), default=None,
              help="an overlay or as-built TOML (docs/as_built.md): [model] precision and per-regime "
                   "[prefill]/[decode]/[encode] tables (fusion, cuts, columns, dataflow, datapath, tiles, l2); "
                   "what it leaves open is searched and reported")
@click.option("--save-overlay", "save_overlay", type=click.Path(dir_okay=False), default=None,
              help="write the layout this run used as an overlay TOML")
@study_option("kernel_efficiency")
@study_option("stream_split")
@study_option("search_budget", more_help="exact is slower; the report gives what the budget may leave on the table")
@study_option("causal_halving")
@study_option("lm_head_last_only")
@study_option("row_major_ddr")
@study_option("resident_programs")
@study_option("launches_reconfigure")
@study_option("dispatch_commands")
@click.option("--whole-run", is_flag=True,
              help="choose the matmuls' kernels for the whole pass, not op by op: where their distinct kernels "
                   "outgrow program memory (a reload every layer), move ops onto kernels others use when the "
                   "whole pass gets faster (coordinate descent judged by whole-pass simulations)")
@click.option("--compression", "compression_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="measured.json from fastsim study compression: compress weight and KV streams by the "
                   "measured ratios of their dtypes")
@click.option("--samples", default=0, show_default=True, type=click.IntRange(0, 1_000_000),
              help="sample per-token latency and time to first token N times under the seeded variance model "
                   "(DDR contention, dispatch jitter, bursty arrivals; docs/latency.md) and report p50/p95/p99")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="seed of --samples")
@click.option("--load", default=0.5, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="with --samples: request arrival rate as a share of what the NPU serves")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="replay every regime of a fastsim optimize plan.json (other options ignored) and check "
                   "the predicted numbers")
@click.pass_context
def llm_cmd(ctx, plan_path, **options):
    """A transformer forward pass: one decode step, a prefill, an encode, or a whole generation.

    Example: fastsim run llm --model llama-3.2-3b --regime prefill --prompt 1024 --json"""
    opts, o = ctx.obj, SimpleNamespace(**options)
    with _progress_bar(sys.stderr.isatty()):
        try:
            if not plan_path:
                _encoder_inputs(ctx, o)
            _refuse_unused(ctx, o, plan_path)
        except ConfigError as e:
            fail(e)
        if plan_path:
            replay(plan_path, opts)
            return
        try:
            study = _study(ctx, o)
            too_big(opts, [f"{name} = {value:,} is beyond {SOFT_LIMITS[name]:,}: expect minutes or more"
                           for name, value in (("context", o.context), ("prompt", o.prompt), ("batch", o.batch))
                           if isinstance(value, int) and value > SOFT_LIMITS[name]])
            result, tails = _simulate(study, o, opts["arch"])
            spread = _routing_spread(study, o, opts["arch"])
        except (ConfigError, SimulationError, ValueError) as e:
            fail(e)
    latency = _latency(tails, o)
    if o.regime == "generate":
        _echo_generation(result, latency, o, opts)
    else:
        _echo_pass(result, study, latency, spread, o, opts)


# options that mean something in some regimes only: (option, the regimes it applies to, what to use instead)
REGIME_OPTIONS = (("context", ("decode",), "generate decodes from the prompt's length; for prefill, tokens cached before the prompt are "
                   "--prefill-context; encode has none"),
                  ("prompt", ("prefill", "encode", "generate"), "decode reads --context cached tokens"),
                  ("prefill_context", ("prefill", "generate"), "decode reads --context cached tokens"),
                  ("new_tokens", ("generate",), "only --regime generate decodes new tokens"),
                  ("causal_halving", ("prefill", "generate"), "only a prefill's causal attention skips masked keys"),
                  ("lm_head_last_only", ("prefill", "generate"), "only a prefill has tokens before the last"),
                  ("whole_run", ("decode", "prefill", "encode"), "a generation runs two layouts: search each with "
                   "--regime decode and --regime prefill"),
                  ("save_overlay", ("decode", "prefill", "encode"), "a generation runs two layouts: save each "
                   "regime's with --regime decode and --regime prefill"))


def _encoder_inputs(ctx, o) -> None:
    """An encoder (BERT) has one regime: encode is its default (a decode step is not its work), and
    its --prompt defaults to at most the positions it was trained for. --kv is refused: an encoder
    keeps no KV cache, so its dtype would change nothing."""
    from ..llm import get_model
    from .llm_inputs import given

    model = get_model(o.model)
    if not model.encoder:
        return
    if given(ctx, "kv"):
        raise ConfigError([f"--kv {o.kv}: {model.name} is an encoder (bidirectional attention over its input, "
                           "no KV cache): there is nothing to store at --kv; drop it"], "llm options")
    if not given(ctx, "regime"):
        o.regime, o.regime_why = "encode", f" ({model.name} is an encoder: encode is its one regime)"
    if o.regime == "encode" and not given(ctx, "prompt") and model.max_context:
        o.prompt = min(o.prompt, model.max_context)


def _refuse_unused(ctx, o, plan_path) -> None:
    """An option that does not apply to the run is refused by name, never silently ignored."""
    from .llm_inputs import given

    problems = []
    if plan_path:
        others = [p.name for p in ctx.command.params if p.name != "plan_path" and given(ctx, p.name)]
        problems += [f"--{name.replace('_', '-')}: --plan replays the plan's own inputs; it takes no other "
                     "option (arch, --json and --trace go before the subcommand)" for name in others]
    else:
        latency = ("decode",) if o.samples else ()  # --samples: time to first token prefills --prompt
        why = getattr(o, "regime_why", "")
        problems += [f"--{name.replace('_', '-')} does not apply to --regime {o.regime}{why}: {instead}"
                     for name, regimes, instead in REGIME_OPTIONS
                     if given(ctx, name) and o.regime not in regimes + (latency if name == "prompt" else ())]
    if problems:
        raise ConfigError(problems, "llm options")


def _progress_bar(on: bool):
    """The mapping progress bar on stderr (for a terminal) while the command simulates."""
    from .. import settings

    return settings.use(progress=on)


def _parse_dataflow(values):
    """("CLASS=FLOW", ...) -> {CLASS: FLOW} (also --columns: CLASS=N)."""
    out = {}
    for v in values:
        if "=" not in v:
            raise click.BadParameter(f"{v!r}: expected CLASS=ws|is|os", param_hint="--dataflow")
        key, flow = v.split("=", 1)
        out[key.strip()] = flow.strip()
    return out


def _parse_cuts(text):
    """"" -> None (the greedy default cut), "none" -> () (one dispatch), "4,8" -> (4, 8)."""
    if not text:
        return None
    if text.strip().lower() == "none":
        return ()
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected layer indices like 4,8,12", param_hint="--cuts")


def _study(ctx, o):
    """The LlmStudy of the options (a generation starts with its prefill), with an as-built file's
    [model] precision over the options' (``llm.run.with_as_built``)."""
    from ..llm import LlmStudy, get_model
    from ..llm.run import with_as_built
    from .llm_inputs import routing_from

    model = get_model(o.model)
    if o.regime == "generate" and model.encoder:
        raise ConfigError([f"regime = 'generate': {model.name} is an encoder (no decoding); allowed encode"],
                          "llm study")
    precision = _precision(ctx, o, model)
    if o.overlay_path:
        _read_as_built(ctx, o)
    study = LlmStudy(model=o.model, regime="prefill" if o.regime == "generate" else o.regime,
                    context=o.context, prompt=o.prompt, batch=o.batch, prefill_context=o.prefill_context,
                    precision=precision, routing=routing_from(ctx, o, model),
                    dataflow=_parse_dataflow(o.dataflows), residency=o.residency,
                    columns={k: int(v) for k, v in _parse_dataflow(o.columns).items()},
                    cuts=_parse_cuts(o.cuts), noop=tuple(o.noop), kernel_efficiency=o.kernel_efficiency,
                    fusion=o.fusion, stream_split=o.stream_split, search_budget=o.search_budget,
                    causal_halving=o.causal_halving, lm_head_last_only=o.lm_head_last_only,
                    dispatch_commands=o.dispatch_commands, row_major_ddr=o.row_major_ddr,
                    resident_programs=o.resident_programs, launches_reconfigure=o.launches_reconfigure)
    return with_as_built(study, o.as_built) if o.overlay_path else study


def _read_as_built(ctx, o) -> None:
    """The as-built file (``o.as_built``; its [model] precision goes on top of the options' in
    ``llm.run.with_as_built``); an option given on the command line that the file also sets is
    refused (which one wins would be a guess), as is saving a layout that would drop its pins."""
    from ..mapping.overlay import load_as_built
    from .llm_inputs import precision_clashes

    o.as_built = load_as_built(o.overlay_path).check_read_by("llm", o.overlay_path)
    table = o.as_built.precision
    clash = precision_clashes(ctx, table)
    clash += [f"--tensor-dtype {k}" for k in table if k in parse_kinds(o.tensor_dtypes)]
    clash += ["--checkpoint"] if "measured" in table and o.checkpoint_path else []
    clash += ["--compression"] if o.compression_path and ({"weights", "kv"} & set(table)) else []
    problems = [f"{', '.join(clash)}: {o.overlay_path} sets it too ([model]); give it in one place"] if clash else []
    if o.samples:
        problems.append(f"--samples with --overlay: the latency model runs prefill and decode on one layout; "
                        f"run --samples without {o.overlay_path}")
    for regime in (("prefill", "decode") if o.regime == "generate" else (o.regime,)):
        problems += _layout_clashes(ctx, o, o.as_built.overlays.get(regime))
    problems += _unsaved_pins(o, o.as_built.overlays.get(o.regime))
    if problems:
        raise ConfigError(problems, "llm study")


def _layout_clashes(ctx, o, layout) -> list[str]:
    """Layout choices the file makes that an option also makes."""
    from .llm_inputs import given

    if layout is None:
        return []
    from ..mapping.layout import FACTS

    clash = [f"--{k}" for k, pinned in (("fusion", layout.fusion != "auto"), ("cuts", layout.cuts is not None),
                                      ("residency", layout.residency is not None)) if pinned and given(ctx, k)]
    clash += [option_flag(k) for k in FACTS if getattr(layout, k) is not None and given(ctx, k)]
    for option, values, table in (("--dataflow", o.dataflows, layout.dataflow), ("--columns", o.columns, layout.columns)):
        clash += [f"{option} {k}" for k in parse_kinds(values) if k in table]
    return [f"{', '.join(clash)}: {o.overlay_path} sets it too ([{layout.regime}]); give it in one place"] if clash else []


def _unsaved_pins(o, layout) -> list[str]:
    """--save-overlay writes the fusion, columns, dataflow and residency a run chose
    (``llm.assemble.overlay_of``): pins of the file beyond those would be dropped, and the saved
    file would run another design under its name."""
    from ..mapping.layout import FACTS, TABLES

    if not o.save_overlay or layout is None:
        return []
    dropped = [k for k in TABLES if k not in ("columns", "dataflow") and getattr(layout, k)]
    dropped += ["cuts"] if layout.cuts is not None else []
    dropped += [k for k in FACTS if getattr(layout, k) is not None]
    return [f"--save-overlay with {o.overlay_path}: it pins {', '.join(dropped)} ([{layout.regime}]), which a saved "
            "layout does not hold (fusion, columns, dataflow, residency): replaying it would run another design; "
            "run with the file itself"] if dropped else []


def parse_kinds(values) -> set[str]:
    return {v.split("=", 1)[0].strip() for v in values}


def _precision(ctx, o, model):
    """The Precision of --weights, --kv, --activations, --tensor-dtype, --checkpoint and
    --compression. A model whose config.json has a quantization_config is stored as it says
    (``ModelConfig.quantization``) unless --weights is given: a given --weights is a what-if of
    the whole model and wins; --tensor-dtype wins for its kind."""
    from dataclasses import replace

    from ..llm import Precision
    from .llm_inputs import given, measured_bytes, parse_tensor_dtypes

    dtypes = parse_tensor_dtypes(o.tensor_dtypes)
    measured = measured_bytes(o.checkpoint_path, model, dtypes) if o.checkpoint_path else ()
    stored = model.quantization if not given(ctx, "weights") else None
    o.stored_weights = (f"config.json's quantization_config: {stored.describe()} (--weights overrides it)"
                        if stored else f"--weights {o.weights}, not config.json's quantization_config "
                        f"({model.quantization.describe()})" if model.quantization else "")
    precision = Precision(weights=o.weights, activations=o.activations, kv=o.kv, measured=measured)
    if stored:
        precision = stored.precision(precision)
    precision = replace(precision, **dtypes)
    ratios = {"weight_compression": {}, "kv_compression": {}}
    if o.compression_path:
        from ..studies.compression import load_run_ratios

        ratios = load_run_ratios(o.compression_path, model)  # refused if measured on another model
    return replace(precision, weight_compression=ratios["weight_compression"].get(precision.weights, 1.0),
                   kv_compression=1.0 if model.encoder else ratios["kv_compression"].get(o.kv, 1.0))


def _routing_spread(study, o, arch) -> dict | None:
    """--routing-samples: the decode step's quantiles over sampled routings (None without it)."""
    if not o.routing_samples:
        return None
    from ..llm.spread import routing_spread

    return routing_spread(study, o.routing_samples, arch)


def _simulate(study, o, arch):
    """(the pass's Dataset, or the generation's summary dict; the latency quantiles or None)."""
    from ..llm import simulate_llm
    from ..llm.run import apply_overlay, strict_for
    from ..mapping import overlay as overlay_io

    overlays = o.as_built.overlays if o.overlay_path else {}
    if o.regime == "generate":
        from ..llm.run import simulate_generation

        result = simulate_generation(study, o.new_tokens, arch, overlays=overlays)
    else:
        layout = overlays.get(o.regime)
        laid_out, strict = apply_overlay(study, layout), strict_for(layout)
        result = simulate_llm(laid_out, arch, strict=strict)
        if o.whole_run:
            from ..studies.whole_run import whole_run_search

            found = whole_run_search(laid_out, arch, seed=result, strict=strict)
            result, study = found.dataset, found.study  # latency samples below run the chosen kernels
            result.attrs["whole_run"] = json.dumps(found.to_json())
        if o.save_overlay:
            from ..llm.assemble import overlay_of

            overlay_io.save({o.regime: overlay_of(result)}, o.save_overlay)
    tails = None
    if o.samples:
        from ..llm.latency import VarianceModel, latency_distribution

        tails = latency_distribution(apply_overlay(study, overlays.get(o.regime)), arch, o.samples, o.seed,
                                     VarianceModel(load=o.load))
    return result, tails


def _latency(tails, o) -> dict | None:
    if tails is None:
        return None
    return {"samples": o.samples, "seed": o.seed, "quantiles": [float(q) for q in tails["quantile"].values],
            "token_latency_s": [float(x) for x in tails.token_latency_quantile_s.values],
            "ttft_s": [float(x) for x in tails.ttft_quantile_s.values]}


def _echo_generation(g: dict, latency: dict | None, o, opts: dict) -> None:
    if o.overlay_path:
        g["as_built"] = {r: _as_built_summary(o, r) for r in ("prefill", "decode")}
    if opts["trace"]:
        click.echo("trace: not written for --regime generate (trace --regime decode or prefill)", err=True)
    if latency:
        g["latency"] = latency
    if opts["json"]:
        click.echo(json.dumps({**g, "units": units_of(g)}))
        return
    click.echo(f"{g['model']}: prompt {o.prompt} + {o.new_tokens} new tokens on {g['arch']}")
    click.echo(f"  time to first token  {g['ttft_s'] * 1e3:,.2f} ms (prefill)")
    click.echo(f"  overlay switch       {g['overlay_s'] * 1e3:,.2f} ms ({g['overlay_change']}; "
               f"prefill {g['prefill_fusion']}, decode {g['decode_fusion']})")
    click.echo(f"  decode               {g['decode_s'] * 1e3:,.2f} ms ({g['tpot_s'] * 1e3:,.3f} ms/token mean)")
    click.echo(f"  total                {g['seconds'] * 1e3:,.2f} ms ({g['tokens_per_s']:,.1f} new tokens/s)")
    _echo_latency(latency)


def _echo_pass(ds, study, latency: dict | None, spread: dict | None, o, opts: dict) -> None:
    """One decode step, prefill or encode: its summary as JSON or a table (and its trace, if asked)."""
    from ..llm.run import llm_summary

    s = llm_summary(ds)
    for key in ("family", "params", "active_params"):
        s.setdefault(key, ds.attrs[key])
    if latency:
        s["latency"] = latency
    if spread:
        s["routing_spread"] = spread
    if "whole_run" in ds.attrs:
        s["whole_run"] = json.loads(ds.attrs["whole_run"])
    if getattr(o, "stored_weights", ""):
        s["weights_from"] = o.stored_weights
    if o.overlay_path:
        s["as_built"] = _as_built_summary(o)
        if ds.attrs.get("dispatch_problems"):
            s["as_built"]["beyond_assumed_limits"] = ds.attrs["dispatch_problems"]
    if opts["trace"]:
        from ..trace import write_trace

        s["trace_events"] = write_trace(ds, opts["trace"])
        click.echo(f"trace: {opts['trace']} ({s['trace_events']} slices; open in ui.perfetto.dev)", err=True)
    if opts["json"]:
        click.echo(json.dumps({**s, "units": units_of(s)}))
        return
    what = {"decode": f"decode step at context {o.context}", "prefill": f"prefill of {o.prompt} tokens",
            "encode": f"encode of {o.prompt} tokens"}[o.regime]
    pr = study.precision
    packed = f" ({pr.weight_compression:.3g}x compressed)" if pr.weight_compression != 1.0 else ""
    packed_kv = f" ({pr.kv_compression:.3g}x compressed)" if pr.kv_compression != 1.0 else ""
    kv = "" if o.regime == "encode" else f", kv {o.kv}{packed_kv}"  # an encoder keeps no KV cache
    click.echo(f"{s['model']} {what}, batch {o.batch}, weights {_weights_text(pr, _measured_source(o))}{packed}{kv} on {s['arch']}")
    if s.get("weights_from"):
        click.echo(f"  weights from    {s['weights_from']}")
    _echo_model(s)
    if o.overlay_path:
        a = s["as_built"]
        click.echo(f"  as built        {a['file']}: pinned {', '.join(a['pinned']) or 'nothing'}; "
                   f"searched {', '.join(a['searched']) or 'nothing'}")
        if "beyond_assumed_limits" in a:
            click.echo(f"  as built        runs although fastsim's assumed dispatch limits say: "
                       f"{a['beyond_assumed_limits']}")
    # a decode step makes one token per sequence: per step, and tokens/s counts the whole batch
    _echo_pass_table(s, ds, ("ms/step" if o.batch > 1 else "ms/token") if o.regime == "decode" else "ms",
                     _fusion_source(o))
    if "whole_run" in s:
        click.echo(f"  {s['whole_run']['summary']}")
    _echo_latency(latency)
    _echo_spread(spread)


def _as_built_summary(o, regime: str | None = None) -> dict:
    return o.as_built.report(o.overlay_path, regime or o.regime)


def _weights_text(pr, source: str = "checkpoint") -> str:
    """"int4", or "int4 (lm_head bf16)", or "int4 (checkpoint: ffn 0.563, ... bytes/weight)": what
    each weight kind is stored as, where it differs from --weights."""
    pinned = [f"{kind} {getattr(pr, kind)}" for kind in TENSOR_KINDS if getattr(pr, kind)]
    if pr.measured:
        pinned.append(f"{source}: " + ", ".join(f"{kind} {b:.3f}" for kind, b in pr.measured) + " bytes/weight")
    return pr.weights + (f" ({'; '.join(pinned)})" if pinned else "")


def _measured_source(o) -> str:
    """Where measured bytes per weight came from: --checkpoint, or an as-built file's [model]."""
    if o.checkpoint_path:
        return f"checkpoint {o.checkpoint_path}"
    return f"as built {o.overlay_path}" if o.overlay_path else "measured"


def _count(n: int) -> str:
    """A weight count as people say it: 46.7 B, 109.5 M, 918.3 K."""
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,}"


def _echo_model(s: dict) -> None:
    """The family and size line, and the weight bytes read per tensor kind, largest first."""
    active = f", {_count(s['active_params'])} active per token" if s["active_params"] != s["params"] else ""
    click.echo(f"  model           {s['family']}, {_count(s['params'])} params{active}")
    kinds = sorted(s["weight_bytes_by_kind"].items(), key=lambda kb: -kb[1])
    if kinds:
        click.echo("  DDR weight traffic by kind: " + ", ".join(f"{kind} {b / 1e6:,.1f} MB" for kind, b in kinds))


def _echo_spread(spread: dict | None) -> None:
    if not spread:
        return
    names = "/".join(f"p{round(100 * q):d}" for q in spread["quantiles"])
    first, last = spread["seeds"]
    click.echo(f"  routing spread  {names} over {spread['samples']:,} sampled routings (seeds {first}..{last})")
    click.echo("    step          " + " / ".join(f"{x * 1e3:,.3f}" for x in spread["step_s"]) + " ms")
    click.echo("    tokens/s      " + " / ".join(f"{x:,.1f}" for x in spread["tokens_per_s"])
               + "  (at pN, N % of the steps are at least this fast)")


def _fusion_source(o) -> str:
    """Whether the fusion was searched or pinned (by --fusion or an as-built file's table)."""
    layout = o.as_built.overlays.get(o.regime) if getattr(o, "as_built", None) else None
    return "pinned" if o.fusion != "auto" or (layout is not None and layout.fusion != "auto") else "searched"


def _echo_pass_table(s: dict, ds, unit: str, fusion_source: str = "searched") -> None:
    from ..mapping.dispatch import cuts_text

    batch = f", batch {s['batch']} counted" if s.get("batch", 1) > 1 else ""
    click.echo(f"  time            {s['seconds'] * 1e3:,.3f} {unit}  ({s['tokens_per_s']:,.1f} tokens/s{batch})")
    click.echo(f"  DDR             {s['ddr_bytes'] / 1e6:,.1f} MB  (weights {s['weight_bytes'] / 1e6:,.1f}, "
               f"KV {s['kv_bytes'] / 1e6:,.1f}, activations {s['activation_bytes'] / 1e6:,.1f})")
    click.echo(f"  energy          {s['energy_j'] * 1e3:,.2f} mJ (energy table: assumptions)")
    chained = ", one chained run list" if ds.attrs.get("dispatch_commands") == "chained" and s["dispatches"] > 1 else ""
    click.echo(f"  dispatch        {s['dispatches']} x {1e3 * s['dispatch_seconds'] / s['dispatches']:,.3f} ms "
               f"({100 * s['dispatch_share']:.1f} %{chained}), cuts after layers [{cuts_text(ds.attrs['cuts'])}]")
    click.echo(f"  control         {s['control_seconds'] * 1e3:,.3f} ms ({s['control_instructions']:,} runtime-sequence "
               "instructions setting ops up inside their dispatches)")
    if s["program_reload_seconds"]:
        click.echo(f"  program reloads {s['program_reload_seconds'] * 1e3:,.3f} ms (kernels exceed core program memory)")
    if s["launch_seconds"]:
        click.echo(f"  launches        {s['launch_seconds'] * 1e3:,.3f} ms (each launch reconfigures the array inline: "
                   "launches_reconfigure)")
    if fusion_source == "pinned":
        click.echo(f"  fusion          {s['fusion']}  (pinned)")
    else:
        click.echo(f"  fusion          {s['fusion']}  (searched: {ds.attrs['fusion_alternatives']})")
    click.echo(f"  compute         {s['compute_s'] * 1e3:,.3f} ms, exposed {s['exposed_compute_s'] * 1e3:,.3f} ms "
               f"(what NOOP of every class would save, about)")
    click.echo(f"  bound by        {s['bound_by']}")
    m = s["mapping_search"]
    click.echo(f"  mappings        {m['proven_best']} of {m['matmul_ops']} matmul ops proven the best of their space; "
               f"better mappings could save at most {m['most_seconds_better_mappings_save'] * 1e3:,.3f} ms "
               f"({100 * m['most_share_better_mappings_save']:.1f} %; --search-budget exact proves them all)")
    if m.get("kernel_shared_ops"):
        click.echo(f"  kernels         {m['kernel_shared_ops']} matmul ops run a kernel their dispatch shares "
                   f"(the dispatch's kernels then fit program memory)")
    if m.get("program_reload_seconds"):
        click.echo(f"                  {m['program_reload_seconds'] * 1e3:,.3f} ms of that bound is program reloads "
                   f"no shared kernel set avoided; --whole-run searches kernel choices on whole runs")
    click.echo("  class           ms        share")
    for cls, sec in sorted(s["by_class"].items(), key=lambda kv_: -kv_[1]):
        click.echo(f"    {cls:<14}{sec * 1e3:9.3f}  {100 * sec / s['seconds']:5.1f} %")


def _echo_latency(latency: dict | None) -> None:
    if not latency:
        return
    names = "/".join(f"p{round(100 * q):d}" for q in latency["quantiles"])
    click.echo(f"  latency {names} over {latency['samples']:,} samples (seed {latency['seed']}; variance model: "
               "assumptions, docs/latency.md)")
    click.echo("    per token     " + " / ".join(f"{x * 1e3:,.3f}" for x in latency["token_latency_s"]) + " ms")
    click.echo("    first token   " + " / ".join(f"{x * 1e3:,.1f}" for x in latency["ttft_s"]) + " ms")


def replay(plan_path: str, opts: dict) -> None:
    """Run each regime of an optimize plan and compare with its predicted numbers (exit 1 if any differs)."""
    from ..llm import simulate_llm
    from ..llm.run import llm_summary
    from ..studies.optimize import study_from_json

    try:
        plan = json.loads(open(plan_path).read())
        if plan["inputs"]["arch"] != opts["arch"].name:
            raise ValueError(f"the plan was made for arch {plan['inputs']['arch']!r}: pass --arch "
                             f"{plan['inputs']['arch']} (before the subcommand)")
        out, same = {}, True
        for label, r in plan["regimes"].items():
            got = llm_summary(simulate_llm(study_from_json(r["study"]), opts["arch"]))
            out[label] = {k: got[k] for k in r["predicted"]}
            same &= out[label] == r["predicted"]
    except (ConfigError, SimulationError, ValueError, KeyError, TypeError, OSError) as e:
        click.echo(f"error: {plan_path}: {e}", err=True)
        sys.exit(2)
    if opts["json"]:
        click.echo(json.dumps({"regimes": out, "matches_prediction": same}))
    else:
        for label, got in out.items():
            click.echo(f"{label}: {got['seconds'] * 1e3:,.3f} ms, {got['tokens_per_s']:,.1f} tokens/s, "
                       f"{got['dispatches']} dispatch(es), fusion {got['fusion']}")
        click.echo("matches the plan's prediction" if same else "DIFFERS from the plan's prediction")
    if not same:
        sys.exit(1)
