"""One declaration per scalar LLM study parameter: its name, type, allowed values or range,
default, units and help. ``fastsim run llm``'s options, the sweep specs' LLM keys and their units,
and ``LlmStudy.validate``'s checks of these fields are all derived from ``PARAMETERS``, so a
parameter has one name, one value set and one type on the command line, in Python and in specs.

The name is the ``LlmStudy`` field (``weights``, ``kv`` and ``activations`` are ``LlmStudy``'s
arguments for ``Precision``'s fields, checked by ``Precision.validate``); the option is
``--name-with-dashes``.

Left out, and why:

- ``model``: an open set (a preset or a Hugging Face ``config.json``), checked by ``get_model``.
- ``fusion``: its values are a grammar (modes, group kinds joined by ``+``, ``KIND:pipeline``),
  checked by ``mapping.fusion.valid_fusion``, not a set a record can list.
- ``dataflow``, ``columns``, ``datapath``, ``tiles``, ``l2``, ``rows``, ``split``, ``buffers``, ``c_buffers``,
  ``k_panel``, ``host``, ``cast_launch``, ``dequant_launch``, ``codegen``: tables keyed by op class or op name, not
  scalars (specs take the dataflow and columns tables, spelled ``dataflow.CLASS``).
- ``noop`` and ``cuts``: lists (the CLI repeats ``--noop`` and parses ``--cuts 4,8``; specs take
  strings).
- ``routing``: a ``Routing`` (mode, seed, histogram), spelled ``routing``/``routing_seed`` in specs
  and ``--routing*`` on the CLI.
- ``precision``'s other fields (per-kind dtypes, ``group_size``, compression ratios, measured
  bytes): ``Precision``'s, reached through ``--tensor-dtype``, ``--checkpoint`` and
  ``--compression`` on the CLI and by name in specs.
- ``costs``: a ``VectorCosts`` table for the API only.
- ``new_tokens``, ``samples``, ``seed``, ``load``: options of a run (generation, latency), not of
  the study.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import Problems
from ..mapping.dispatch import DISPATCH_COMMANDS
from ..mapping.paths import STREAM_SPLITS
from .model import WEIGHT_DTYPES
from .transformer import REGIMES

# sizes beyond these take minutes to hours to simulate (a 10M-token context did not finish)
MAX_TOKENS = 1 << 20  # context and cached tokens
MAX_PROMPT = 1 << 17
MAX_BATCH = 256


@dataclass(frozen=True)
class Parameter:
    """One scalar study parameter: what it is called, what it takes and what it means."""

    name: str
    type: type  # int, float, bool or str
    default: object
    help: str
    choices: tuple[str, ...] = ()  # the allowed values of a str parameter
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    units: str = "1"  # CF-style units, as the sweep store writes them ("1": a count, ratio or name)
    unset: str = ""  # the word for None on the command line and in specs ("" when None is the default)

    def allowed(self) -> str:
        """The allowed values in words, as errors and ``--help`` say them."""
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if self.type is bool:
            return "true or false"
        span = f"{'(' if self.lo_open else '['}{_text(self.lo)}, {_text(self.hi)}]"
        units = "" if self.units == "1" else f" {self.units}"
        return f"{'an integer' if self.type is int else 'a number'} in {span}{units}"

    def check(self, p: Problems, value, where: str = "") -> bool:
        """Whether ``value`` is in the declared set; if not, a problem naming the parameter (or
        ``where``) and the allowed values goes into ``p``. None is allowed where it means something
        (an unset word, or a None default)."""
        field = where or self.name
        if value is None and (self.unset or self.default is None):
            return True
        if self.choices:
            return p.check(isinstance(value, str) and value in self.choices, field, value, self.allowed())
        if self.type is bool:
            return p.check(isinstance(value, bool), field, value, self.allowed())
        units = "" if self.units == "1" else self.units
        return p.number(field, value, integer=self.type is int, lo=self.lo, hi=self.hi, lo_open=self.lo_open,
                        unit=units + (f" (or {self.unset}; None in Python)" if self.unset else ""))


def _text(x) -> str:
    return "-inf" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


PARAMETERS = (
    Parameter("regime", str, "decode", "decode: one token per sequence against the cached context; prefill: "
              "the prompt; encode: an encoder's input", choices=REGIMES),
    Parameter("context", int, 4096, "decode: cached tokens", lo=0, hi=MAX_TOKENS, units="tokens"),
    Parameter("prompt", int, 2048, "prefill and encode: prompt tokens", lo=1, hi=MAX_PROMPT, units="tokens"),
    Parameter("prefill_context", int, 0, "prefill: tokens already cached before the prompt (chunked prefill)",
              lo=0, hi=MAX_TOKENS, units="tokens"),
    Parameter("batch", int, 1, "sequences run together", lo=1, hi=MAX_BATCH, units="sequences"),
    Parameter("weights", str, "int4", "every weight tensor's dtype unless a tensor kind says otherwise",
              choices=WEIGHT_DTYPES),
    Parameter("kv", str, "bf16", "the KV cache's dtype", choices=("bf16", "int8")),
    Parameter("activations", str, "bf16", "the activations' dtype", choices=("bf16", "int8")),
    Parameter("residency", str, "streamed", "static: weights preloaded once per dispatch (ws ops); streamed: "
              "read from DDR every pass", choices=("streamed", "static")),
    Parameter("kernel_efficiency", float, None, "matmul kernel efficiency, a fraction of the MAC array's peak; "
              "unset: the arch's measured one-core figure per datapath", lo=0.0, hi=1.0, lo_open=True),
    Parameter("stream_split", str, "auto", "how streamed tensors are shared among columns (auto: proportional "
              "for element-wise ops, searched for matmuls)", choices=("auto", *STREAM_SPLITS)),
    Parameter("causal_halving", bool, True, "prefill: causal attention's score and attention-times-V MACs cover "
              "only the keys each query sees"),
    Parameter("lm_head_last_only", bool, True, "prefill: the LM head runs on the last token only"),
    Parameter("row_major_ddr", bool, False, "the tensors lie row-major in DDR and are read in tile rows (a DDR "
              "cost per contiguous run); false: laid out as each design reads them (one run per BD)"),
    Parameter("resident_programs", bool, False, "each dispatch is one program whose mem-tile and core programs "
              "stay resident (a fused module): every op after the first re-runs on new operands (its shim tasks, "
              "on-chip sends, waits and chain starts) instead of being set up (its mem-tile BDs, locks and core "
              "parameters written too)"),
    Parameter("launches_reconfigure", bool, False, "each op is a launch of an ELF built with expanded load_pdis: "
              "the firmware reset and the array's configuration, core programs included, are written inline "
              "before its data moves (the arch's launch_reconfiguration_s per launch: an op, or a fusion group)"),
    Parameter("search_budget", int, 3, "candidates each matmul's mapping search simulates, best lower bound "
              "first; exact: until each op's mapping is proven the best of its space", lo=1, hi=100_000,
              units="candidates", unset="exact"),
    Parameter("dispatch_commands", str, "single", "how the host submits the pass's dispatches: single "
              "(each its own command and wait, Arch.dispatch_overhead_s) or chained (one run list: the first "
              "pays the round trip, each further one Arch.chained_dispatch_s)", choices=DISPATCH_COMMANDS),
)
BY_NAME = {p.name: p for p in PARAMETERS}
PRECISION_NAMES = ("weights", "kv", "activations")  # LlmStudy's arguments for Precision's fields


def study_checks(p: Problems, study) -> None:
    """The declared checks of an ``LlmStudy``'s own fields (``Precision.validate`` checks the
    precision names)."""
    for param in PARAMETERS:
        if param.name not in PRECISION_NAMES:
            param.check(p, getattr(study, param.name))


def from_words(params: dict) -> dict:
    """``params`` with each declared unset word (``search_budget = "exact"``) turned into None, as
    the command line and specs spell it."""
    return {k: None if k in BY_NAME and BY_NAME[k].unset and v == BY_NAME[k].unset else v
            for k, v in params.items()}
