"""Command line: ``fastsim run [--arch A] [--json] [--trace F] [gemm ...]``."""
from __future__ import annotations

import json
import os
import sys

import click

from . import arch as arch_mod
from .cli_study import fail
from .errors import ConfigError, SimulationError


def _load_arch(name: str):
    try:
        return arch_mod.load(name)
    except (ValueError, ConfigError) as e:
        raise click.BadParameter(str(e), param_hint="--arch")


class _CleanErrors(click.Group):
    """Bad input or a failed simulation ends with one message and exit status 2, never a Python
    traceback (``--debug`` shows it)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:  # the reader stopped (| head): end quietly, as other tools do
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except Exception as e:
            if ctx.params.get("debug"):
                raise
            known = isinstance(e, (ConfigError, SimulationError))
            click.echo(f"error: {e}" if known else
                       f"error: {type(e).__name__}: {e} (fastsim --debug ... shows the traceback)", err=True)
            sys.exit(2)


@click.group(cls=_CleanErrors)
@click.version_option(package_name="fastsim")
@click.option("--threads", default=None, type=click.IntRange(min=1),
              help="threads a batch of designs is simulated on (default: $FASTSIM_THREADS or every core; "
                   "results do not depend on it), e.g. fastsim --threads 1 run llm")
@click.option("--debug", is_flag=True, help="show the Python traceback of an error, e.g. fastsim --debug run llm")
def main(threads, debug):
    """fastsim: cycle-level simulator of AI-Engine-style spatial NPUs."""
    if threads is not None:
        from .threads import ENV

        os.environ[ENV] = str(threads)


@main.group(invoke_without_command=True)
@click.option("--arch", "arch_name", default="npu2", show_default=True,
              help="preset (npu1, npu2) or a TOML file with an [arch] table")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of a table")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False),
              help="write a Perfetto/Chrome trace JSON of every BD transfer and kernel call")
@click.option("--trace-raw", is_flag=True, help="with --trace: every event, no summary slices for periodic runs")
@click.option("--no-skip", is_flag=True, help="step every cycle (same result, slower)")
@click.option("--yes", is_flag=True, help="run sizes that take minutes or more to simulate without asking")
@click.pass_context
def run(ctx, arch_name, as_json, trace_path, trace_raw, no_skip, yes):
    """Simulate a workload (default: a 2048^3 bf16 GEMM on npu2). Options given here may also come
    after the workload.

    Example: fastsim run --arch npu1 --json gemm --m 1000 --k 97 --n 31 --dtype int8"""
    ctx.obj = {"arch": _load_arch(arch_name), "json": as_json, "trace": trace_path, "skip": not no_skip, "yes": yes,
               "trace_raw": trace_raw}
    if ctx.invoked_subcommand is None:
        ctx.invoke(gemm)


def _run_options_here(fn):
    """The ``run`` options (--arch, --json, --trace, --no-skip, --yes) accepted after the workload
    too (``fastsim run gemm --m 512 --json``); given there, they override the ones before it."""
    def setter(key, convert=lambda v: v):
        def callback(ctx, param, value):
            if value not in (None, False):
                ctx.obj[key] = convert(value)
        return callback

    for option in reversed([
        click.option("--arch", "arch_here", default=None, expose_value=False, callback=setter("arch", _load_arch),
                     help="as fastsim run --arch"),
        click.option("--json", "json_here", is_flag=True, expose_value=False, callback=setter("json"),
                     help="as fastsim run --json"),
        click.option("--trace", "trace_here", default=None, type=click.Path(dir_okay=False), expose_value=False,
                     callback=setter("trace"), help="as fastsim run --trace"),
        click.option("--no-skip", "no_skip_here", is_flag=True, expose_value=False,
                     callback=setter("skip", lambda v: False), help="as fastsim run --no-skip"),
        click.option("--yes", "yes_here", is_flag=True, expose_value=False, callback=setter("yes"),
                     help="as fastsim run --yes"),
    ]):
        fn = option(fn)
    return fn


# Sizes past which a run takes minutes or more here: the CLI asks for --yes (the API's hard limits
# are in the workload validators).
SOFT_LIMITS = {"gemm_macs": 1 << 36, "context": 1 << 17, "prompt": 1 << 14, "batch": 64}


def _too_big(opts: dict, what: list[str]) -> None:
    if what and not opts.get("yes"):
        raise ConfigError([f"{w}; pass --yes (fastsim run --yes ...) to run it anyway" for w in what], "size guard")


def _parse_tile(text):
    if not text:
        return None
    try:
        tile = tuple(int(x) for x in text.split(","))
    except ValueError:
        tile = ()
    if len(tile) != 3 or min(tile) < 1:
        raise click.BadParameter(f"{text!r}: expected three sizes m,k,n >= 1, e.g. 64,64,64", param_hint="--tile")
    return tile


def _gemm_options(fn):
    """Options shared by ``run gemm`` and ``map gemm``: the op and the pins of its search."""
    for option in reversed([
        click.option("--m", "m", default=2048, show_default=True, type=click.IntRange(min=1)),
        click.option("--k", "k", default=2048, show_default=True, type=click.IntRange(min=1)),
        click.option("--n", "n", default=2048, show_default=True, type=click.IntRange(min=1)),
        click.option("--dtype", default="bf16", show_default=True),
        click.option("--tile", default=None, help="pin the L1 tile m,k,n (default: searched)"),
        click.option("--l2", type=click.Choice(["none", "a", "b", "ab"]), default=None,
                     help="pin which operands mem tiles hold and re-send (default: searched)"),
        click.option("--cols", default=None, type=click.IntRange(min=1), help="pin the columns used"),
        click.option("--dataflow", "gemm_dataflow", type=click.Choice(["os", "ws", "is"]), default=None,
                     help="pin the dataflow"),
        click.option("--efficiency", default=None, type=click.FloatRange(0, 1, min_open=True),
                     help="matmul kernel efficiency, fraction of the MAC array's peak (default: the arch's "
                          "measured one-core figure per datapath)"),
        click.option("--stream-split", type=click.Choice(["equal", "proportional"]), default=None,
                     help="pin how shared operands are streamed over columns (default: searched)"),
    ]):
        fn = option(fn)
    return fn


def _gemm_from(m, k, n, dtype, tile, l2, cols, gemm_dataflow, efficiency, stream_split):
    from .workloads.gemm import Gemm

    t = _parse_tile(tile) or (None, None, None)
    return Gemm(m, k, n, dtype, *t, cols=cols, kernel_efficiency=efficiency,
                dataflow=gemm_dataflow, l2=None if l2 is None else ("" if l2 == "none" else l2),
                stream_split=stream_split)


@run.command()
@_gemm_options
@_run_options_here
@click.pass_context
def gemm(ctx, m, k, n, dtype, tile, l2, cols, gemm_dataflow, efficiency, stream_split):
    """C = A @ B, any size, on the searched mapping (``fastsim map gemm`` lists the candidates).

    Example: fastsim run gemm --m 256 --k 4096 --n 1000 --dtype int8 --tile 64,64,64"""
    from .report import format_summary, summarize
    from .simulation import simulate
    from .trace import write_trace
    from .workloads.gemm import gemm_design, gemm_mapping

    opts = ctx.obj
    arch = opts["arch"]
    try:
        g = _gemm_from(m, k, n, dtype, tile, l2, cols, gemm_dataflow, efficiency, stream_split)
        g.matmul()  # validated before the size guard reads it
        if g.macs > SOFT_LIMITS["gemm_macs"]:
            floor = g.macs / (arch.compute_tiles * max(arch.macs_per_cycle.values()))
            _too_big(opts, [f"{g.macs:,} MACs (more than 4096^3): at least {floor:,.0f} cycles on {arch.name}, and "
                            "the search simulates its best 6 candidates; expect minutes"])
        found = gemm_mapping(g, arch)
        design = gemm_design(g, arch, found.best)
        ds = simulate(design, skip=opts["skip"], trace=bool(opts["trace"]))
    except (ConfigError, SimulationError) as e:
        fail(e)
    from .mapping.plan import structure

    summary = summarize(ds, 0, arch, g.ops, dtype)
    mp = found.best
    datapath = structure(g.matmul(), mp, arch).macs_key
    summary["workload"] = {"kind": "gemm", "m": m, "k": k, "n": n, "dtype": dtype,
                           "kernel_efficiency": efficiency or arch.efficiency(datapath)}
    summary["mapping"] = {"label": mp.label(), "dataflow": mp.dataflow, "split": mp.split, "tile": list(mp.tile),
                          "cols": mp.cols, "rows": mp.rows, "col0": mp.col0, "k_split": mp.k_split,
                          "order": mp.order, "l2": mp.l2, "datapath": mp.datapath,
                          "stream_split": mp.stream_split,
                          "padding_waste": next(r["padding_waste"] for r in found.ranked if r["chosen"])}
    if opts["trace"]:
        summary["trace_events"] = write_trace(ds, opts["trace"], raw=opts["trace_raw"])
    if opts["json"]:
        click.echo(json.dumps(summary))
    else:
        click.echo(format_summary(f"GEMM {m}x{k}x{n} {dtype} on {arch.name}", summary))
        click.echo(f"  mapping         {mp.label()} (padding {100 * summary['mapping']['padding_waste']:.1f} %)")
        if opts["trace"]:
            click.echo(f"  trace           {opts['trace']} ({summary['trace_events']} slices)")


@main.group("map")
def map_group():
    """Search mappings of an op and list the ranked and rejected candidates."""


@map_group.command("gemm")
@_gemm_options
@click.option("--arch", "arch_name", default="npu2", show_default=True, help="preset or TOML file")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1), help="candidates listed")
@click.option("--simulate", "simulate_top", default=6, show_default=True, type=click.IntRange(min=1),
              help="best-bounded candidates simulated cycle-exactly")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of a table")
def map_gemm(m, k, n, dtype, tile, l2, cols, gemm_dataflow, efficiency, stream_split, arch_name, top,
             simulate_top, as_json):
    """Rank mappings of C = A @ B: tiles, L2 residency, columns, dataflow, K split; each with its
    lower bound, simulated cycles, bytes per level and energy; rejected ones with their reason.

    Example: fastsim map gemm --m 2048 --k 2048 --n 2048 --dtype bf16 --top 5"""
    from .workloads.gemm import gemm_mapping

    arch = _load_arch(arch_name)
    try:
        g = _gemm_from(m, k, n, dtype, tile, l2, cols, gemm_dataflow, efficiency, stream_split)
        found = gemm_mapping(g, arch, top=simulate_top)
    except (ConfigError, SimulationError) as e:
        fail(e)
    ranked = sorted(found.ranked, key=lambda r: (r["simulated_cycles"] < 0, r["simulated_cycles"],
                                                 r["lower_bound_cycles"]))[:top]
    if as_json:
        def plain(r):
            return {k: (list(v) if isinstance(v, tuple) else v) for k, v in r.items()}
        click.echo(json.dumps({"op": {"m": m, "k": k, "n": n, "dtype": dtype}, "arch": arch.name,
                               "best": found.best.label(), "best_cycles": found.best_cycles,
                               "enumerated": found.enumerated, "legal": found.legal,
                               "rejected_by_reason": found.rejected_by_reason,
                               "ranked": [plain(r) for r in ranked],
                               "rejected": [plain(r) for r in found.rejected[:top]]}))
        return
    click.echo(f"GEMM {m}x{k}x{n} {dtype} on {arch.name}: {found.enumerated:,} candidates, "
               f"{found.legal:,} legal")
    click.echo(f"  {'mapping':<44}{'bound':>12}{'simulated':>12}  {'bound by':<12}{'DDR MB':>8}"
               f"{'L1 kB':>7}{'L2 kB':>7}{'uJ':>8}")
    for r in ranked:
        sim = f"{r['simulated_cycles']:,}" if r["simulated_cycles"] >= 0 else "-"
        mark = "*" if r["chosen"] else " "
        click.echo(f"{mark} {r['label']:<44}{r['lower_bound_cycles']:>12,.0f}{sim:>12}  "
                   f"{r['simulated_bound_by'] or r['bound_resource']:<12}"
                   f"{(r['ddr_read_bytes'] + r['ddr_write_bytes']) / 1e6:>8.2f}{r['l1_bytes'] / 1024:>7.1f}"
                   f"{r['l2_bytes'] / 1024:>7.1f}{r['energy_pj'] / 1e6:>8.1f}")
    click.echo("  rejected (best bounds), and why:")
    for r in found.rejected[:min(top, 5)]:
        click.echo(f"    {r['label']:<44}{r['lower_bound_cycles']:>12,.0f}  {r['reason']}")
    click.echo("  rejections by reason: " + ", ".join(f"{k} {v:,}" for k, v in sorted(found.rejected_by_reason.items())))


@main.command("arch")
@click.argument("name", default="npu2")
def show_arch(name):
    """Print an architecture (preset name or TOML file) as JSON.

    Example: fastsim arch examples/wide_array.toml"""
    import dataclasses
    a = _load_arch(name)
    click.echo(json.dumps(dataclasses.asdict(a), indent=2))


def _parse_dataflow(values):
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


@run.command()
@_run_options_here
@click.option("--model", default="llama-3.2-1b", show_default=True,
              help="preset (llama-3.2-1b, llama-3.2-3b, llama-3.1-8b) or a Hugging Face config.json")
@click.option("--regime", type=click.Choice(["decode", "prefill", "generate"]), default="decode", show_default=True,
              help="generate: prefill, overlay switch, then --new-tokens decode steps")
@click.option("--new-tokens", default=128, show_default=True, type=int, help="generate: tokens to decode")
@click.option("--context", default=4096, show_default=True, type=int, help="decode: cached tokens")
@click.option("--prompt", default=2048, show_default=True, type=int, help="prefill: prompt tokens")
@click.option("--prefill-context", default=0, show_default=True, type=int,
              help="prefill: tokens already cached before the prompt (chunked prefill)")
@click.option("--batch", default=1, show_default=True, type=int)
@click.option("--weights", type=click.Choice(["int4", "int8", "bf16"]), default="int4", show_default=True)
@click.option("--kv", type=click.Choice(["bf16", "int8"]), default="bf16", show_default=True)
@click.option("--activations", type=click.Choice(["bf16", "int8"]), default="bf16", show_default=True)
@click.option("--noop", multiple=True, help="op class replaced by a data-only pass (repeatable)")
@click.option("--cuts", default="", help="cut into dispatches after these layers, e.g. 4,8,12; none: one "
              "dispatch (default: the greedy feasible cut)")
@click.option("--fusion", default="auto", show_default=True,
              help="auto: search per group (norm_qkv, flash_attention, ffn), pipelines (prefill) and chain; "
                   "none: every op via DDR; groups; chain; or kinds joined by +, KIND:pipeline for a "
                   "spatial pipeline, e.g. ffn:pipeline+flash_attention")
@click.option("--dataflow", "dataflows", multiple=True, help="CLASS_OR_OP=ws|is|os (repeatable)")
@click.option("--columns", "columns", multiple=True, help="CLASS_OR_OP=N columns to run on (repeatable)")
@click.option("--residency", type=click.Choice(["streamed", "static"]), default="streamed", show_default=True)
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), default=None,
              help="TOML with a [prefill] and/or [decode] table: fusion, columns, dataflow per regime")
@click.option("--save-overlay", "save_overlay", type=click.Path(dir_okay=False), default=None,
              help="write the layout this run used as an overlay TOML")
@click.option("--efficiency", default=None, type=click.FloatRange(0, 1, min_open=True),
              help="matmul kernel efficiency (default: the arch's measured one-core figure per datapath)")
@click.option("--stream-split", type=click.Choice(["auto", "equal", "proportional"]), default="auto",
              show_default=True, help="how streamed tensors are shared among columns (auto: proportional "
              "for element-wise ops, searched for matmuls)")
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
def llm(ctx, model, regime, new_tokens, context, prompt, batch, weights, kv, activations, noop, cuts, fusion,
        dataflows, columns, residency, overlay_path, save_overlay, efficiency, stream_split, compression_path,
        samples, seed, load, prefill_context, plan_path):
    """A transformer forward pass: one decode step or a prefill.

    Example: fastsim run llm --model llama-3.2-3b --regime prefill --prompt 1024 --json"""
    from .llm import LlmStudy, Precision, simulate_llm
    from .llm.run import llm_summary

    opts = ctx.obj
    from .llm.run import show_progress

    show_progress(sys.stderr.isatty())
    if plan_path:
        _replay(plan_path, opts)
        return
    try:
        ratios = {"weight_compression": {}, "kv_compression": {}}
        if compression_path:
            from .studies.compression import load_run_ratios

            ratios = load_run_ratios(compression_path)
        study = LlmStudy(model=model, regime="prefill" if regime == "generate" else regime,
                         context=context, prompt=prompt, batch=batch, prefill_context=prefill_context,
                         precision=Precision(weights=weights, activations=activations, kv=kv,
                                             weight_compression=ratios["weight_compression"].get(weights, 1.0),
                                             kv_compression=ratios["kv_compression"].get(kv, 1.0)),
                         dataflow=_parse_dataflow(dataflows), residency=residency,
                         columns={k: int(v) for k, v in _parse_dataflow(columns).items()},
                         cuts=_parse_cuts(cuts), noop=tuple(noop), kernel_efficiency=efficiency, fusion=fusion,
                         stream_split=stream_split)
        _too_big(opts, [f"{name} = {value:,} is beyond {SOFT_LIMITS[name]:,}: expect minutes or more"
                        for name, value in (("context", context), ("prompt", prompt), ("batch", batch))
                        if isinstance(value, int) and value > SOFT_LIMITS[name]])
        from .llm.run import apply_overlay
        from .mapping import overlay as overlay_io

        overlays = overlay_io.load(overlay_path) if overlay_path else {}
        if regime == "generate":
            from .llm.run import simulate_generation
            g = simulate_generation(study, new_tokens, opts["arch"], overlays=overlays)
        else:
            ds = simulate_llm(apply_overlay(study, overlays.get(regime)), opts["arch"])
            if save_overlay:
                from .llm.assemble import overlay_of
                overlay_io.save({regime: overlay_of(ds)}, save_overlay)
        tails = None
        if samples:
            from .llm.latency import VarianceModel, latency_distribution

            tails = latency_distribution(apply_overlay(study, overlays.get(regime)), opts["arch"], samples, seed,
                                         VarianceModel(load=load))
    except (ConfigError, SimulationError, ValueError) as e:
        fail(e)
    latency = None if tails is None else {
        "samples": samples, "seed": seed, "quantiles": [float(q) for q in tails["quantile"].values],
        "token_latency_s": [float(x) for x in tails.token_latency_quantile_s.values],
        "ttft_s": [float(x) for x in tails.ttft_quantile_s.values]}
    if regime == "generate":
        if opts["trace"]:
            click.echo("trace: not written for --regime generate (trace --regime decode or prefill)", err=True)
        if latency:
            g["latency"] = latency
        if opts["json"]:
            click.echo(json.dumps(g))
        else:
            click.echo(f"{g['model']}: prompt {prompt} + {new_tokens} new tokens on {g['arch']}")
            click.echo(f"  time to first token  {g['ttft_s'] * 1e3:,.2f} ms (prefill)")
            click.echo(f"  overlay switch       {g['overlay_s'] * 1e6:,.0f} us ({g['overlay_change']}; "
                       f"prefill {g['prefill_fusion']}, decode {g['decode_fusion']})")
            click.echo(f"  decode               {g['decode_s'] * 1e3:,.2f} ms ({g['tpot_s'] * 1e3:,.3f} ms/token mean)")
            click.echo(f"  total                {g['seconds'] * 1e3:,.2f} ms ({g['tokens_per_s']:,.1f} new tokens/s)")
            _echo_latency(latency)
        return
    s = llm_summary(ds)
    if latency:
        s["latency"] = latency
    if opts["trace"]:
        from .trace import write_trace

        s["trace_events"] = write_trace(ds, opts["trace"])
        click.echo(f"trace: {opts['trace']} ({s['trace_events']} slices; open in ui.perfetto.dev)", err=True)
    if opts["json"]:
        click.echo(json.dumps(s))
        return
    what = f"decode step at context {context}" if regime == "decode" else f"prefill of {prompt} tokens"
    pr = study.precision
    packed = f" ({pr.weight_compression:.3g}x compressed)" if pr.weight_compression != 1.0 else ""
    packed_kv = f" ({pr.kv_compression:.3g}x compressed)" if pr.kv_compression != 1.0 else ""
    click.echo(f"{s['model']} {what}, batch {batch}, weights {weights}{packed}, kv {kv}{packed_kv} on {s['arch']}")
    unit = "ms/token" if regime == "decode" else "ms"
    click.echo(f"  time            {s['seconds'] * 1e3:,.3f} {unit}  ({s['tokens_per_s']:,.1f} tokens/s)")
    click.echo(f"  DDR             {s['ddr_bytes'] / 1e6:,.1f} MB  (weights {s['weight_bytes'] / 1e6:,.1f}, "
               f"KV {s['kv_bytes'] / 1e6:,.1f}, activations {s['activation_bytes'] / 1e6:,.1f})")
    click.echo(f"  energy          {s['energy_j'] * 1e3:,.2f} mJ (energy table: assumptions)")
    click.echo(f"  dispatch        {s['dispatches']} x {1e6 * s['dispatch_seconds'] / s['dispatches']:,.0f} us "
               f"({100 * s['dispatch_share']:.1f} %), cuts after layers [{ds.attrs['cuts']}]")
    if s["program_reload_seconds"]:
        click.echo(f"  program reloads {s['program_reload_seconds'] * 1e3:,.3f} ms (kernels exceed core program memory)")
    click.echo(f"  fusion          {s['fusion']}  (searched: {ds.attrs['fusion_alternatives']})")
    click.echo(f"  compute         {s['compute_s'] * 1e3:,.3f} ms, exposed {s['exposed_compute_s'] * 1e3:,.3f} ms "
               f"(what NOOP of every class would save, about)")
    click.echo(f"  bound by        {s['bound_by']}")
    click.echo("  class           ms        share")
    for cls, sec in sorted(s["by_class"].items(), key=lambda kv_: -kv_[1]):
        click.echo(f"    {cls:<14}{sec * 1e3:9.3f}  {100 * sec / s['seconds']:5.1f} %")
    _echo_latency(latency)


def _echo_latency(latency: dict | None) -> None:
    if not latency:
        return
    names = "/".join(f"p{round(100 * q):d}" for q in latency["quantiles"])
    click.echo(f"  latency {names} over {latency['samples']:,} samples (seed {latency['seed']}; variance model: "
               "assumptions, docs/latency.md)")
    click.echo("    per token     " + " / ".join(f"{x * 1e3:,.3f}" for x in latency["token_latency_s"]) + " ms")
    click.echo("    first token   " + " / ".join(f"{x * 1e3:,.1f}" for x in latency["ttft_s"]) + " ms")


def _replay(plan_path: str, opts: dict) -> None:
    """Run each regime of an optimize plan and compare with its predicted numbers (exit 1 if any differs)."""
    from .llm import simulate_llm
    from .llm.run import llm_summary
    from .studies.optimize import study_from_json

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


@main.command("sweep")
@click.argument("spec_path", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="zarr store (created or resumed)")
@click.option("--workers", type=int, default=None,
              help="worker processes of a local dask cluster (default: one per core; 0: run in this process)")
@click.option("--scheduler", default=None, help="address or scheduler file of a running dask scheduler")
@click.option("--no-progress", is_flag=True, help="no progress bar")
def sweep_cmd(spec_path, out, workers, scheduler, no_progress):
    """Run or resume a sweep spec (TOML) into a zarr store; open it with xarray.open_zarr(OUT).

    Example: fastsim sweep sweeps/gemm_quick.toml --out quick.zarr --workers 2"""
    from .sweeping import sweep

    report = []
    try:
        sweep(spec_path, out, workers=workers, scheduler=scheduler, progress=not no_progress, report=report)
    except ConfigError as e:
        fail(e)
    click.echo(str(report[0]))



def _load_mesh_model(closed_forms_only: bool, runs: int, most: int = 2000):
    """The mesh model's module. Runs that need only closed forms (unlimited bandwidth, no DRAM
    detail, no traces) finish faster as plain Python than numba starts when there are at most
    `most` of them (docs/systolic.md), so the kernels load uncompiled, unless FASTSIM_JIT is set or
    they are loaded already (then nothing changes). The variable is read at import only and
    removed again, so no child process inherits it."""
    interpret = (closed_forms_only and runs <= most and "FASTSIM_JIT" not in os.environ
                 and "fastsim.kernels._jit" not in sys.modules)
    if interpret:
        os.environ["FASTSIM_JIT"] = "0"
    try:
        from .systolic import model
    finally:
        if interpret:
            del os.environ["FASTSIM_JIT"]
    return model


@main.command("systolic")
@click.option("-c", "config_path", required=True, type=click.Path(dir_okay=False), help="SCALE-Sim .cfg file")
@click.option("-t", "topology_path", required=True, type=click.Path(dir_okay=False),
              help="SCALE-Sim topology CSV (conv or GEMM form)")
@click.option("--dataflow", default=None, help="override: one or more of ws,is,os (comma separated)")
@click.option("--json", "as_json", is_flag=True)
@click.option("--dram-detail", is_flag=True,
              help="without a bandwidth limit also run SCALE-Sim's estimate buffers (exact DRAM writes, "
                   "access windows, peak rates; request-level cost)")
@click.option("--threads", default=None, type=click.IntRange(min=1),
              help="threads for the request-level buffer models (default: one per core)")
@click.option("--trace", "trace_path", default=None, type=click.Path(dir_okay=False),
              help="write a Perfetto per-layer fold timeline (open in ui.perfetto.dev)")
@click.option("--traces", "traces_dir", default=None, type=click.Path(file_okay=False),
              help="also write SCALE-Sim-format traces under DIR/<run name>[_<dataflow>]/layer<i>/ (large)")
def systolic_cmd(config_path, topology_path, dataflow, as_json, dram_detail, threads, trace_path, traces_dir):
    """Systolic PE-mesh timing of every layer: SCALE-Sim v3's numbers, compute in closed form and,
    with InterfaceBandwidth USER, its request-level buffer model for stalls and DRAM traffic.

    Example: fastsim systolic -c bench/scalesim/mesh32_os.cfg -t bench/scalesim/resnet50.csv --dataflow ws,os"""
    import dataclasses

    from .systolic.inputs import read_config, read_topology

    try:
        cfg = read_config(config_path)
        layers = read_topology(topology_path)
        flows = [f.strip() for f in dataflow.split(",")] if dataflow else [cfg.dataflow]
        closed_forms_only = not (cfg.bandwidth_limited or dram_detail or traces_dir)
        model = _load_mesh_model(closed_forms_only, len(layers) * len(flows))
        fold_kinds = model.MISMATCH
        m = model.mesh_metrics(layers, [dataclasses.replace(cfg, dataflow=f) for f in flows], dram_detail=dram_detail,
                         threads=threads or os.cpu_count() or 1)
        if traces_dir:
            from .systolic.traces import write_traces

            for f in flows:
                name = cfg.name if len(flows) == 1 else f"{cfg.name}_{f}"
                write_traces(layers, dataclasses.replace(cfg, dataflow=f, name=name), traces_dir)
    except ConfigError as e:
        fail(e)
    keys = ["compute_cycles", "stall_cycles", "total_cycles", "folds", "fill_drain_cycles_per_fold",
            "mapping_efficiency", "compute_utilization", "overall_utilization", "sram_ifmap_reads",
            "sram_filter_reads", "sram_ofmap_writes", "dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes",
            "avg_dram_words_per_cycle", "weight_reuse", "activation_reuse", "off_array_bytes_per_tera_op"]
    keys += [f"avg_dram_{op}_words_per_cycle" for op in ("ifmap", "filter", "ofmap")]
    if cfg.bandwidth_limited or dram_detail:
        keys += ["total_cycles_incl_prefetch"]
        keys += [f"dram_{op}_{edge}_cycle" for op in ("ifmap", "filter", "ofmap") for edge in ("start", "stop")]
        keys += [f"peak_dram_{op}_words_per_cycle" for op in ("ifmap", "filter", "ofmap")]
    rows = []
    for j, flow in enumerate(flows):
        for i, layer in enumerate(layers):
            row = {"layer": layer.name, "dataflow": flow, "rows": cfg.rows, "cols": cfg.cols}
            row.update({k: m[k][i, j].item() for k in keys})
            row["tile_mismatch"] = dict(zip(fold_kinds, m["tile_mismatch"][i, j].tolist()))
            row["stall_operand"] = str(m["stall_operand"][i, j])
            row["stall_cycles_by_operand"] = dict(zip(("ifmap", "filter", "ofmap"),
                                                      m["stall_cycles_by_operand"][i, j].tolist()))
            rows.append(row)
    if trace_path:
        from pathlib import Path

        from .trace import systolic_trace

        Path(trace_path).write_text(json.dumps(systolic_trace(rows)))
        click.echo(f"trace: {trace_path} (open in ui.perfetto.dev)", err=True)
    if as_json:
        click.echo(json.dumps({"config": dataclasses.asdict(cfg), "layers": rows}))
        return
    dram = ("unlimited DRAM bandwidth" if not cfg.bandwidth_limited else
            f"DRAM reads {cfg.ifmap_read_words_per_cycle}/{cfg.filter_read_words_per_cycle} (ifmap/filter), "
            f"writes {cfg.bandwidth_words_per_cycle} words/cycle")
    click.echo(f"{cfg.rows}x{cfg.cols} mesh, {dram}")
    click.echo(f"  {'layer':<16}{'df':<4}{'cycles':>15}{'stalls':>15}{'stalled by':>11}{'folds':>8}"
               f"{'map eff %':>11}{'util %':>9}")
    for row in rows:
        click.echo(f"  {row['layer']:<16}{row['dataflow']:<4}{row['total_cycles']:>15,}{row['stall_cycles']:>15,}"
                   f"{row['stall_operand'] or '-':>11}{row['folds']:>8,}{row['mapping_efficiency']:>11.1f}"
                   f"{row['overall_utilization']:>9.1f}")


@main.command("plot")
@click.argument("result", type=click.Path(exists=True))
@click.option("--kind", type=click.Choice(["sweep", "kv", "classes", "stalls", "roofline", "mismatch", "occupancy"]),
              default=None,
              help="figure kind (default: chosen from the result)")
@click.option("--var", default=None, help="sweep: the output to plot (default: the first)")
@click.option("--x", "x_axis", default=None, help="sweep: the axis along x (default: the first)")
@click.option("--y", "y_axis", default=None, help="sweep: a second axis (one line per value, or --heatmap)")
@click.option("--heatmap", is_flag=True, help="sweep: a heatmap over --x and --y")
@click.option("--arch", "arch_name", default=None, help="roofline: the arch (default: the run's)")
@click.option("--out", "out_path", default="figure.png", show_default=True, type=click.Path(dir_okay=False),
              help="PNG or SVG, by suffix")
def plot_cmd(result, kind, var, x_axis, y_axis, heatmap, arch_name, out_path):
    """A figure of a sweep's zarr store, a run's JSON or a run's trace: KV vs weight traffic, time by
    class and layer, stalls, roofline, any output over one or two sweep axes, systolic tile
    mismatch, occupancy of every core and DMA channel over time (a --trace file).

    Example: fastsim run --json llm > run.json && fastsim plot run.json --out classes.svg
    """
    from .plot import load_result, plot

    fig = plot(load_result(result), kind, var, x_axis, y_axis, _load_arch(arch_name) if arch_name else None, heatmap)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    click.echo(f"figure: {out_path}")


def _register_studies() -> None:
    from .cli_study import calibrate_cmd, optimize_cmd, study_group

    main.add_command(study_group)
    main.add_command(optimize_cmd)
    main.add_command(calibrate_cmd)


_register_studies()

if __name__ == "__main__":
    main()
