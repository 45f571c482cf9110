"""What the commands share: loading an arch, ending on an error, the size guard, and the option
groups several commands take (the GEMM and its pins, the LLM study's model, the ``run`` options
that may also follow the workload), and the option of each declared LLM study parameter
(``study_option``, from ``fastsim.llm.parameters``)."""
from __future__ import annotations

import sys

import click

from ..arch import load
from ..errors import ConfigError
from ..llm.parameters import BY_NAME, Parameter

# Sizes past which a run takes minutes or more here: the CLI asks for --yes (the API's hard limits
# are in the workload validators).
SOFT_LIMITS = {"gemm_macs": 1 << 36, "context": 1 << 17, "prompt": 1 << 14, "batch": 64}
MODEL_HELP = "a preset (fastsim models lists them) or a Hugging Face config.json"
STORED_WEIGHTS = (f"as the model stores them: its config.json's quantization_config (GPTQ/AWQ 4-bit int4, "
                  f"GPTQ 8-bit int8, fp8, gpt-oss's mxfp4), else {BY_NAME['weights'].default}; a given --weights "
                  "is a what-if of the whole model and wins")


def load_arch(name: str):
    """An arch preset or TOML file; a bad one is a usage error of ``--arch``."""
    try:
        return load(name)
    except (ValueError, ConfigError) as e:
        raise click.BadParameter(str(e), param_hint="--arch")


def fail(e: Exception) -> None:
    """End a command on bad input or a failed simulation: the message and exit status 2, or, under
    ``fastsim --debug``, the exception with its traceback."""
    if click.get_current_context().find_root().params.get("debug"):
        raise e
    click.echo(f"error: {error_text(e)}", err=True)
    sys.exit(2)


def error_text(e: Exception) -> str:
    """An error as the CLI prints it: a ConfigError of one problem on one line (the problem names
    the field, the value and what is allowed); several problems one per line."""
    if isinstance(e, ConfigError) and len(e.problems) == 1:
        return e.problems[0]
    return str(e)


def too_big(opts: dict, what: list[str]) -> None:
    """Refuse sizes past ``SOFT_LIMITS`` (``what`` says which and why) unless ``--yes`` was given."""
    if what and not opts.get("yes"):
        raise ConfigError([f"{w}; pass --yes (fastsim run --yes ...) to run it anyway" for w in what], "size guard")


def with_options(options: list):
    """Apply click ``options`` to a command, in the order listed (first shown first in --help)."""
    def apply(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn
    return apply


def run_options_here(fn):
    """The ``run`` options (--arch, --json, --trace, --no-skip, --yes) accepted after the workload
    too (``fastsim run gemm --m 512 --json``); given there, they override the ones before it."""
    def setter(key, convert=lambda v: v):
        def callback(ctx, param, value):
            if value not in (None, False):
                ctx.obj[key] = convert(value)
        return callback

    return with_options([
        click.option("--arch", "arch_here", default=None, expose_value=False, callback=setter("arch", load_arch),
                     help="as fastsim run --arch"),
        click.option("--json", "json_here", is_flag=True, expose_value=False, callback=setter("json"),
                     help="as fastsim run --json"),
        click.option("--trace", "trace_here", default=None, type=click.Path(dir_okay=False), expose_value=False,
                     callback=setter("trace"), help="as fastsim run --trace"),
        click.option("--no-skip", "no_skip_here", is_flag=True, expose_value=False,
                     callback=setter("skip", lambda v: False), help="as fastsim run --no-skip"),
        click.option("--yes", "yes_here", is_flag=True, expose_value=False, callback=setter("yes"),
                     help="as fastsim run --yes"),
    ])(fn)


GEMM_SPLITS = ("2d", "2dt", "n", "m")  # fastsim.mapping.space.SPLITS (a test holds them equal; not imported: CLI start-up)


def gemm_options(fn):
    """Options shared by ``run gemm`` and ``map gemm``: the op and the pins of its search."""
    return with_options([
        click.option("--m", "m", default=2048, show_default=True, type=click.IntRange(min=1)),
        click.option("--k", "k", default=2048, show_default=True, type=click.IntRange(min=1)),
        click.option("--n", "n", default=2048, show_default=True, type=click.IntRange(min=1)),
        click.option("--dtype", default="bf16", show_default=True),
        click.option("--tile", default=None, help="pin the L1 tile m,k,n (default: searched)"),
        click.option("--l2", type=click.Choice(["none", "a", "b", "ab"]), default=None,
                     help="pin which operands mem tiles hold and re-send (default: searched)"),
        click.option("--split", type=click.Choice(GEMM_SPLITS), default=None,
                     help="pin how M and N split over the cores: 2d (columns split N, core rows M), 2dt (columns "
                          "split M, core rows N), n or m (every core its own slice of N or M) (default: searched)"),
        click.option("--k-panel", "k_panel", default=None, type=click.IntRange(min=1),
                     help="pin the L1 K tiles one mem-tile buffer of A and B stages (os; mlir-air's tile_k_l2 over "
                          "tile_k_l1; default 1: one L1 tile)"),
        click.option("--cols", default=None, type=click.IntRange(min=1), help="pin the columns used"),
        click.option("--dataflow", "gemm_dataflow", type=click.Choice(["os", "ws", "is"]), default=None,
                     help="pin the dataflow"),
        click.option("--efficiency", default=None, type=click.FloatRange(0, 1, min_open=True),
                     help="matmul kernel efficiency, fraction of the MAC array's peak (default: the arch's "
                          "measured one-core figure per datapath)"),
        click.option("--stream-split", type=click.Choice(BY_NAME["stream_split"].choices), default="auto",
                     show_default=True, help="how shared operands are streamed over columns (auto: searched; "
                     "the same values as run llm's)"),
        click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False, exists=True), default=None,
                     help="an as-built TOML with a [gemm] table (tile, cols, rows, split, dataflow, l2, "
                          "datapath, k_panel, c_buffers, cast_launch, codegen, row_major_ddr, k_split, stream_split, out_dtype, buffers; "
                          "docs/as_built.md): that design; the rest "
                          "searched"),
        click.option("--out-dtype", "out_dtype", default=None,
                     help="C's dtype in DDR (default: bf16 for bf16, int32 for int8; a design that requantizes "
                          "writes int8)"),
        click.option("--search-budget", "budget", default="exact", show_default=True, type=SEARCH_BUDGET,
                     help="candidates the mapping search simulates (at least its first batch: the best 6 and the "
                          "fixed whole_array mapping), best lower bound first, before it stops and reports its "
                          "optimality gap; exact: until its answer is proven the best of the space"),
    ])(fn)


class SearchBudget(click.ParamType):
    """"exact" -> None (search until proven); a whole number >= 1 -> that many candidates. A type,
    not a callback, so that defaults convert too (``run`` invokes ``run gemm`` with its defaults)."""

    name = "N|exact"

    def convert(self, value, param, ctx):
        if value in (None, "exact"):
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        if isinstance(value, str) and value.isdigit() and int(value) >= 1:
            return int(value)
        self.fail(f"{value!r}: a whole number of candidates >= 1, or exact", param, ctx)


SEARCH_BUDGET = SearchBudget()


def parse_tile(text):
    """"64,64,64" -> (64, 64, 64); "" or None -> None (searched)."""
    if not text:
        return None
    try:
        tile = tuple(int(x) for x in text.split(","))
    except ValueError:
        tile = ()
    if len(tile) != 3 or min(tile) < 1:
        raise click.BadParameter(f"{text!r}: expected three sizes m,k,n >= 1, e.g. 64,64,64", param_hint="--tile")
    return tile


def gemm_from(m, k, n, dtype, tile, l2, split, k_panel, cols, gemm_dataflow, efficiency, stream_split, overlay_path=None,
              budget=None, out_dtype=None):
    """The Gemm workload of ``gemm_options``' values (and an as-built file's [gemm] table)."""
    from ..workloads.gemm import Gemm, with_as_built

    t = parse_tile(tile) or (None, None, None)
    g = Gemm(m, k, n, dtype, *t, cols=cols, kernel_efficiency=efficiency,
             dataflow=gemm_dataflow, l2=None if l2 is None else ("" if l2 == "none" else l2), split=split, k_panel=k_panel,
             stream_split=None if stream_split == "auto" else stream_split, budget=budget, out_dtype=out_dtype)
    return with_as_built(g, overlay_path) if overlay_path else g


class Unsettable(click.ParamType):
    """A declared parameter whose unset word (``exact``) means None; any other value is converted
    by the parameter's type and range-checked by the study, so the CLI and the API say the same."""

    def __init__(self, param: Parameter):
        self.param, self.name = param, f"N|{param.unset}"

    def convert(self, value, param, ctx):
        if value in (None, self.param.unset):
            return None
        try:
            return self.param.type(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r}: {self.param.allowed()}, or {self.param.unset}", param, ctx)


def option_flag(name: str) -> str:
    """The command-line flag of a study parameter or layout fact: ``row_major_ddr`` -> ``--row-major-ddr``."""
    return "--" + name.replace("_", "-")


def study_option(name: str, *, extra_choices: tuple[str, ...] = (), more_help: str = "", unset_means: str = ""):
    """The click option of a declared LLM study parameter (``fastsim.llm.parameters``): named
    ``--name-with-dashes``, with its type, choices (and ``extra_choices`` a command adds), default
    and help. Ranges are stated in the help and checked by ``LlmStudy.validate``, so a value out of
    range gets the one message the API gives too. ``unset_means``: the option's default is None
    (not the declared default), which the study reads as this, said in --help."""
    p = BY_NAME[name]
    flag = option_flag(name)
    text = p.help + (f"; {more_help}" if more_help else "")
    if unset_means:
        return click.option(flag, name, type=click.Choice([*p.choices, *extra_choices]), default=None,
                            help=f"{text} (default: {unset_means})")
    if p.type is bool:
        return click.option(f"{flag}/--no-{flag[2:]}", name, default=p.default, show_default=True, help=text)
    if p.choices:
        kind = click.Choice([*p.choices, *extra_choices])
    else:
        kind = Unsettable(p) if p.unset else {int: click.INT, float: click.FLOAT}[p.type]
        text += f" ({p.allowed()})"
    default = p.unset if p.unset and p.default is None else p.default
    return click.option(flag, name, type=kind, default=default, show_default=p.default is not None, help=text)


def model_options(fn, several: bool = False, regimes: bool = True):
    """What every LLM study takes: the model (``several``: repeatable, into ``models``), its
    precision, the arch and (``regimes``) the regimes."""
    model = (click.option("--model", "models", multiple=True, default=("llama-3.2-1b",), show_default=True,
                          help=MODEL_HELP + " (repeatable: one section per model and a comparison)")
             if several else click.option("--model", default="llama-3.2-1b", show_default=True, help=MODEL_HELP))
    regime = [click.option("--regime", "regimes", multiple=True,
                           help="decode:CONTEXT, prefill:PROMPT, optionally :BATCH (repeatable; default "
                                "decode:4096 and prefill:1024)")] if regimes else []
    return with_options([
        model,
        study_option("weights", unset_means=STORED_WEIGHTS),
        study_option("kv"),
        study_option("activations"),
        click.option("--arch", "arch_name", default="npu2", show_default=True,
                     help="a preset (npu1, npu2) or part (phoenix, hawk_point, strix, strix_halo, krackan), NAME[:mode][:cols=N] "
              "(e.g. strix:turbo, strix:cols=4), or a TOML file with an [arch] table"),
        *regime,
        click.option("--json", "as_json", is_flag=True, help="print the Dataset as JSON (xarray to_dict)"),
        click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
                     help="write <study>.md and <study>.png into this directory"),
    ])(fn)


def several_models_options(fn):
    """``model_options`` with a repeatable ``--model`` (into ``models``)."""
    return model_options(fn, several=True)


def base_study(model, weights, kv, activations):
    """The LlmStudy of ``model_options``' model and precision: ``weights`` None (no --weights) is
    the model's stored precision (``STORED_WEIGHTS``, ``LlmStudy``'s precision None)."""
    from ..llm import LlmStudy

    return LlmStudy(model=model, weights=weights, kv=kv, activations=activations)
