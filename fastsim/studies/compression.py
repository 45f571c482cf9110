"""Compression measured on real tensors (method step 5, docs/studies.md): what each scheme really saves.

A ratio that no workload measured is a guess; this study reads real weights (``.safetensors``
through the ``safetensors`` numpy API, ``.npy``, ``.npz``) and dumped K/V tensors, and measures per
tensor and in total the bytes each scheme leaves:

- **zero-value compression (zvc)**, as the AIE-ML tile and mem-tile DMAs do it (AM020 "Sparsity":
  zeros are not sent over the streams; weights compressed offline move from DDR compressed and are
  decompressed by the S2MM channel or at the core's load). Format: one mask bit per byte, a 32-bit
  mask per 32-byte block followed by the block's non-zero bytes (UG1583 compressed loads). Rounding
  every compressed block up to whole 32-bit words is an assumption (DMAs move words). On dense
  bf16 data it costs bytes (the mask) rather than saving them; the study says so instead of
  assuming a ratio.
- **N:M structured sparsity** after magnitude pruning along the input dimension (asked for with
  ``prune=(n, m)``): the pruned tensor is then zero-value compressed; nominal ratio m / n.
- **int8 / int4 group quantization** (symmetric, one bf16 scale per ``group_size`` values along the
  input dimension): the stored size against bf16, nominal 2x / 4x; and each one zero-value
  compressed.

Every ``ratio`` is baseline bytes over the scheme's bytes, where the baseline is the dense tensor in
the representation the scheme starts from (``baseline`` coordinate). ``run_ratios`` turns the totals
into what ``fastsim run llm --compression measured.json`` applies to weight and KV streams.

A ratio is a property of the tensors measured, so the file records what they were
(``measured_on``: the model, named by ``model`` or by the ``config.json`` beside the weights, and
the weight matrices' shapes), and ``load_run_ratios`` refuses it for a model with another name or
with no weight of a measured shape: one model's ratios are not another's.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import xarray as xr

from ..dtypes import DTYPE_BYTES
from ..errors import ConfigError, Problems
from ..llm.model import WEIGHT_DTYPES, ModelConfig
from ..llm.presets import SOURCES
from . import report
from .declaration import Study
from .variables import StudyVariable as Output, build

BLOCK_BYTES = 32  # bytes covered by one 32-bit zero mask (UG1583 compressed load format)
MASK_BYTES = 4
DEFAULT_INCLUDE = r"^(?!.*embed).*"  # linear weights; embedding tables are looked up, not streamed


def read_tensors(path: str | Path, include: str = DEFAULT_INCLUDE, min_dims: int = 2) -> dict[str, np.ndarray]:
    """Float tensors of a ``.safetensors``, ``.npy`` or ``.npz`` file with at least ``min_dims``
    dimensions whose name matches ``include`` (a regular expression), in file order."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError([f"tensor file {str(path)!r}: no such file"], "compression")
    try:
        if path.suffix == ".safetensors":
            from safetensors.numpy import load_file

            tensors = load_file(str(path))
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                tensors = {k: z[k] for k in z.files}
        elif path.suffix == ".npy":
            tensors = {path.stem: np.load(path, allow_pickle=False)}
        else:
            raise ConfigError([f"tensor file {path.name!r}: suffix must be .safetensors, .npz or .npy"], "compression")
    except ConfigError:
        raise
    except Exception as e:  # a corrupt or foreign file: say which and why, no traceback
        raise ConfigError([f"tensor file {str(path)!r}: cannot be read ({type(e).__name__}: {e})"], "compression")
    try:
        pattern = re.compile(include)
    except re.error as e:
        raise ConfigError([f"include = {include!r}: not a regular expression ({e})"], "compression")
    out = {k: np.asarray(v, np.float32) for k, v in tensors.items()
           if v.ndim >= min_dims and np.issubdtype(v.dtype, np.floating) and pattern.search(k)}
    if not out:
        raise ConfigError([f"tensor file {str(path)!r}: no float tensor with >= {min_dims} dimensions matches "
                           f"include = {include!r}"], "compression")
    return out


# ---- representations ------------------------------------------------------------------------------


def bf16_bytes(x: np.ndarray) -> np.ndarray:
    """The tensor as bf16 (round to nearest even), as its raw little-endian bytes."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2").view(np.uint8).ravel()


def _groups(x: np.ndarray, group_size: int) -> np.ndarray:
    """Rows of ``group_size`` values along the last (input) dimension, zero-padded."""
    flat = x.reshape(-1, x.shape[-1])
    pad = (-flat.shape[1]) % group_size
    if pad:
        flat = np.pad(flat, ((0, 0), (0, pad)))
    return flat.reshape(-1, group_size)


def quantize(x: np.ndarray, bits: int, group_size: int) -> tuple[np.ndarray, int]:
    """Symmetric group quantization: (codes as stored bytes, number of groups). int4 codes are
    packed two per byte (low nibble first)."""
    g = _groups(x, group_size)
    top = 2 ** (bits - 1) - 1
    scale = np.abs(g).max(axis=1, keepdims=True) / top
    codes = np.clip(np.rint(np.divide(g, scale, out=np.zeros_like(g), where=scale > 0)), -top - 1, top).astype(np.int8)
    raw = codes.ravel().view(np.uint8)
    if bits == 4:
        nib = raw & 0x0F
        if nib.size % 2:
            nib = np.append(nib, np.uint8(0))
        raw = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)
    return raw, g.shape[0]


def prune(x: np.ndarray, n: int, m: int) -> np.ndarray:
    """N:M magnitude pruning along the last dimension: in every m consecutive values keep the n
    largest in magnitude."""
    g = _groups(x, m)
    drop = np.argsort(np.abs(g), axis=1, kind="stable")[:, :m - n]
    g = g.copy()
    np.put_along_axis(g, drop, 0.0, axis=1)
    flat = g.reshape(-1, x.reshape(-1, x.shape[-1]).shape[1] + (-x.shape[-1]) % m)[:, :x.shape[-1]]
    return flat.reshape(x.shape)


def zvc_bytes(raw: np.ndarray) -> int:
    """Bytes after zero-value compression: per 32-byte block a 32-bit mask and its non-zero bytes,
    rounded up to whole words (see the module docstring)."""
    pad = (-raw.size) % BLOCK_BYTES
    blocks = np.pad(raw, (0, pad)).reshape(-1, BLOCK_BYTES)
    kept = np.count_nonzero(blocks, axis=1)
    return int((-(-(MASK_BYTES + kept) // 4) * 4).sum())


# ---- the study ------------------------------------------------------------------------------------


def _schemes(x: np.ndarray, group_size: int, prune_nm) -> dict[str, tuple[str, float, float, float]]:
    """scheme -> (baseline, baseline bytes, scheme bytes, nominal ratio)."""
    scale_bytes = 2  # one bf16 scale per group
    dense = bf16_bytes(x)
    out = {"zvc bf16": ("bf16", dense.size, zvc_bytes(dense), dense.size / max(1, np.count_nonzero(dense)))}
    for bits in (8, 4):
        codes, groups = quantize(x, bits, group_size)
        stored = codes.size + groups * scale_bytes
        out[f"int{bits} g{group_size}"] = ("bf16", dense.size, stored, 16 / bits)
        out[f"zvc int{bits}"] = (f"int{bits}", stored, zvc_bytes(codes) + groups * scale_bytes,
                                 stored / max(1, np.count_nonzero(codes) + groups * scale_bytes))
    if prune_nm:
        n, m = prune_nm
        pruned = prune(x, n, m)
        sparse = bf16_bytes(pruned)
        out[f"{n}:{m} zvc bf16"] = ("bf16", dense.size, zvc_bytes(sparse), m / n)
        for bits in (8, 4):
            codes, groups = quantize(pruned, bits, group_size)
            stored = codes.size + groups * scale_bytes
            out[f"{n}:{m} zvc int{bits}"] = (f"int{bits}", stored, zvc_bytes(codes) + groups * scale_bytes, m / n)
    return out


def compression(weights: str | Path, kv: str | Path | None = None, group_size: int = 128,
                prune_nm: tuple[int, int] | None = None, include: str = DEFAULT_INCLUDE,
                model: str | None = None) -> xr.Dataset:
    """Measured compression of every weight tensor (and K/V tensor) under every scheme. ``model``
    names the model the weights are of (default: the ``config.json`` beside them, if any).

    Returns
    -------
    xarray.Dataset over (tensor, scheme): ``baseline_bytes``, ``bytes``, ``ratio``; per scheme
    ``nominal_ratio`` (zero-value schemes: what skipping every zero byte without masks would give),
    the ``baseline`` each scheme starts from, and totals per tensor kind (``total_ratio_weights``,
    ``total_ratio_kv`` and their nominal counterparts).
    """
    if group_size < 1:
        raise ConfigError([f"group_size = {group_size}: must be >= 1"], "compression")
    if prune_nm is not None and not (len(prune_nm) == 2 and 1 <= prune_nm[0] < prune_nm[1]):
        raise ConfigError([f"prune = {prune_nm}: N:M needs 1 <= N < M"], "compression")
    tensors = {("weights", k): v for k, v in read_tensors(weights, include).items()}
    if kv is not None:
        tensors.update({("kv", k): v for k, v in read_tensors(kv, ".", min_dims=1).items()})
    rows = {key: _schemes(x, group_size, prune_nm) for key, x in tensors.items()}
    first = next(iter(rows.values()))
    schemes = list(first)
    base, got, nominal = (np.array([[rows[t][s][i] for s in schemes] for t in rows], float) for i in (1, 2, 3))
    kinds = np.array([k for k, _ in rows])
    totals = {}
    for kind in ("weights", "kv"):
        sel = kinds == kind
        nan = np.full(len(schemes), np.nan)
        totals[f"total_ratio_{kind}"] = base[sel].sum(0) / got[sel].sum(0) if sel.any() else nan
        totals[f"total_nominal_ratio_{kind}"] = base[sel].sum(0) / (base[sel] / nominal[sel]).sum(0) if sel.any() else nan
    return build(OUTPUTS, {
        "baseline_bytes": base,
        "bytes": got,
        "ratio": base / got,
        "nominal_ratio": nominal,
        "elements": np.array([tensors[t].size for t in rows]),
        **totals,
    }, coords={"tensor": [name for _, name in rows], "tensor_kind": ("tensor", kinds),
               "scheme": schemes, "baseline": ("scheme", [first[s][0] for s in schemes])},
        attrs={"study": "compression", "weights_file": str(weights), "kv_file": str(kv or ""),
               "measured_model": model or _model_beside(Path(weights)),
               "measured_shapes": json.dumps(sorted({_pair(tensors[t].shape) for t in rows if t[0] == "weights"})),
               "group_size": group_size, "prune": "" if not prune_nm else f"{prune_nm[0]}:{prune_nm[1]}",
               "block_bytes": BLOCK_BYTES})


def _pair(shape) -> tuple[int, int]:
    """A weight matrix's last two dimensions, smaller first (a layout may store it transposed)."""
    return tuple(sorted(int(d) for d in shape[-2:]))


def _model_beside(weights: Path) -> str:
    """The model a ``config.json`` beside the weights names (as ``get_model`` names it), or ""."""
    try:
        cfg = json.loads((weights.parent / "config.json").read_text())
    except (OSError, ValueError):
        return ""
    return str(cfg.get("_name_or_path") or weights.parent.name) if isinstance(cfg, dict) else ""


def _names(name: str) -> set[str]:
    """A model's names as compared: the last part of a Hugging Face repo, lower case; a preset
    also by its source repo."""
    def short(n):
        return n.split(" ")[0].rstrip("/").split("/")[-1].lower()
    return {short(name)} | ({short(SOURCES[name])} if name in SOURCES else set())


def _shape_pairs(model: ModelConfig) -> set[tuple[int, int]]:
    """Every weight matrix shape of ``model`` (last two dimensions, smaller first)."""
    h, hd, f = model.hidden_size, model.head_dim, model.ffn_size
    dims = [(h, model.num_heads * hd), (h, model.num_kv_heads * hd), (h, (model.num_heads + 2 * model.num_kv_heads) * hd),
            (h, f), (h, 2 * f), (h, h), (h, model.vocab_size), (h, model.positions), (h, model.token_types)]
    if model.experts is not None:
        e = model.experts
        dims += [(h, e.ffn_size), (h, 2 * e.ffn_size), (h, e.count), (h, e.shared_ffn_size), (h, 2 * e.shared_ffn_size)]
    return {tuple(sorted(d)) for d in dims}


def check_measured_on(ratios: dict, model: ModelConfig, path: str | Path) -> None:
    """Refuse ratios measured on another model's tensors than ``model``'s (module docstring)."""
    on = ratios.get("measured_on")
    what = f"compression file {path}"
    if not isinstance(on, dict) or not isinstance(on.get("shapes"), list):
        raise ConfigError([f"measured_on = {on!r}: the file does not say which model's tensors it measured, so its "
                           f"ratios cannot be applied to {model.name}; measure again with fastsim study compression "
                           "--out"], what)
    problems = []
    if on.get("model") and not _names(str(on["model"])) & _names(model.name):
        problems.append(f"measured_on.model = {on['model']!r}: ratios measured on that model's weights are not "
                        f"{model.name}'s; measure {model.name}'s own with fastsim study compression")
    have = _shape_pairs(model)
    foreign = [tuple(pair) for pair in on["shapes"] if tuple(pair) not in have]
    if foreign:
        problems.append(f"measured_on.shapes: {model.name} has no weight of shape {', '.join(map(str, foreign[:3]))}"
                        f"{' ...' if len(foreign) > 3 else ''}: ratios measured on another model's weights "
                        f"({on.get('weights_file', '?')}); measure {model.name}'s own")
    if problems:
        raise ConfigError(problems, what)


RATIO_KEYS = ("source", "kv_source", "measured_on", "weight_compression", "kv_compression")
MEASURED_ON_KEYS = ("model", "weights_file", "shapes")
RATIO_DTYPES = tuple(dict.fromkeys((*WEIGHT_DTYPES, *DTYPE_BYTES)))  # a stored weight or KV dtype


def run_ratios(ds: xr.Dataset) -> dict:
    """What a run applies: per stored dtype, the measured zero-value compression of weight and KV
    streams (the pruned variant when the study pruned). A designer switches compression on only
    where it saves bytes, so a ratio below 1 (dense data: the masks cost more) applies as 1.0, as
    does a dtype nothing measured."""
    pruned = ds.attrs.get("prune", "")
    out = {"source": ds.attrs.get("weights_file", ""), "kv_source": ds.attrs.get("kv_file", ""),
           "measured_on": {"model": ds.attrs.get("measured_model", ""), "weights_file": ds.attrs.get("weights_file", ""),
                           "shapes": json.loads(ds.attrs.get("measured_shapes", "[]"))},
           "weight_compression": {}, "kv_compression": {}}
    for kind, key in (("weights", "weight_compression"), ("kv", "kv_compression")):
        total = ds[f"total_ratio_{kind}"]
        for dtype in ("bf16", "int8", "int4"):
            scheme = f"{pruned} zvc {dtype}" if pruned and f"{pruned} zvc {dtype}" in ds.scheme else f"zvc {dtype}"
            value = float(total.sel(scheme=scheme)) if scheme in ds.scheme else float("nan")
            out[key][dtype] = max(1.0, value) if np.isfinite(value) else 1.0
    return out


def load_run_ratios(path: str | Path, model: ModelConfig | None = None) -> dict:
    """A ``measured.json`` written by ``fastsim study compression --out``, checked (and, given
    ``model``, refused unless it was measured on that model's tensors: ``check_measured_on``)."""
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ConfigError([f"compression file {str(path)!r}: cannot be read as JSON ({e})"], "compression")
    p = Problems(f"compression file {path}")
    if isinstance(d, dict):  # what run_ratios writes, and no other key: a typo is refused, never ignored
        p.unknown_keys("", d, RATIO_KEYS)
        if isinstance(d.get("measured_on"), dict):
            p.unknown_keys("measured_on", d["measured_on"], MEASURED_ON_KEYS)
    for key in ("weight_compression", "kv_compression"):
        table = d.get(key) if isinstance(d, dict) else None
        if not isinstance(table, dict):
            p.items.append(f"{key}: missing (a table dtype -> ratio)")
            continue
        p.unknown_keys(key, table, RATIO_DTYPES)
        for dtype, r in table.items():
            if not isinstance(r, (int, float)) or not 0 < r < 1e6:
                p.items.append(f"{key}.{dtype} = {r!r}: must be a ratio > 0")
    p.raise_if_any()
    if model is not None:
        check_measured_on(d, model, path)
    return d


# its outputs: dims, units and description of every variable its Dataset holds
OUTPUTS = {
    "baseline_bytes": Output(("tensor", "scheme"), "bytes", "the dense tensor in the scheme's baseline representation"),
    "bytes": Output(("tensor", "scheme"), "bytes", "bytes the scheme stores and streams"),
    "ratio": Output(("tensor", "scheme"), "1", "measured ratio: baseline bytes / scheme bytes"),
    "nominal_ratio": Output(("tensor", "scheme"), "1",
        "the scheme's nominal ratio (N:M: M/N; int8/int4: 2/4 against bf16; zero-value: skipping every zero "
        "byte without masks)"),
    "elements": Output(("tensor",), "1", "values in the tensor"),
    "total_ratio_weights": Output(("scheme",), "1", "measured ratio over all weight tensors"),
    "total_nominal_ratio_weights": Output(("scheme",), "1", "nominal ratio over all weight tensors"),
    "total_ratio_kv": Output(("scheme",), "1", "measured ratio over all K/V tensors (NaN: none given)"),
    "total_nominal_ratio_kv": Output(("scheme",), "1", "nominal ratio over all K/V tensors"),
}


STUDY = Study("compression", compression, OUTPUTS, report.compression_markdown, report.compression_figure)
