"""Measured bytes per weight of each tensor kind, read from a checkpoint's header alone.

Quantized checkpoints keep some tensors wider than others (embeddings and the LM head most often),
so one ``Precision.weight_bytes`` for every weight misstates the DDR traffic. This module reads the
header of a ``.safetensors`` file, a directory of ``.safetensors`` shards, or a llama.cpp ``.gguf``
file (never the tensor data) and sums, per tensor kind, the bytes stored and the logical weights
they hold.

Kinds are ``TENSOR_KINDS`` plus ``"vision"``:

- **vision**: vision towers and multimodal projectors (``vision_tower.*``, ``vision_model.*``,
  ``visual.*``, ``multi_modal_projector.*``, GGUF ``v.*`` / ``mm.*``) are reported under their own
  kind rather than refused: the simulator models text-only prompts, but a multimodal checkpoint
  should still be readable, and its text kinds are unaffected.
- **norm**: every ``*norm*`` tensor, and rope frequency factors (GGUF ``rope_freqs``, Hugging Face
  ``rotary_emb.inv_freq``): small per-channel vectors read beside the norms. They are counted
  (not dropped) so that the kinds' bytes add up to every tensor byte in the checkpoint.
- **ffn**: BERT's ``pooler.dense`` (a dense layer stored like the encoder's) and the dense layers of
  its masked-LM / next-sentence heads (``cls.predictions.transform``, ``cls.seq_relationship``);
  ``cls.predictions.decoder`` and ``cls.predictions.bias`` are **lm_head**.
- **lm_head**: only an explicit head tensor (``lm_head.*``, GGUF ``output.*``). With tied
  embeddings there is none, and the caller uses the embedding's bytes.

A tensor name that matches no rule is an error: nothing is silently dropped.

Packed safetensors layouts, recognised by name suffix:

- GPTQ / AWQ ``*.qweight`` (I32 words of ``bits``-bit values: ``32 / bits`` weights per word). The
  bits come from ``quantization_config.bits`` of a ``config.json`` beside the checkpoint (or
  ``bits`` of an AutoGPTQ ``quantize_config.json``); with neither, 4 bits is assumed, the
  common case. ``*.qzeros``, ``*.scales`` and ``*.g_idx`` count bytes only (0 weights).
- MXFP4 as openai/gpt-oss stores its experts: ``*_blocks`` (U8, two 4-bit values per byte) and
  ``*_scales`` (U8, bytes only).
- FP8 / int8 scale tensors (``*.weight_scale``, ``*.weight_scale_inv``, ``*.input_scale``,
  ``*.weight_zero_point``, ``*.input_zero_point``): bytes only.

Integer storage under any other name (bitsandbytes ``U8`` weights with their ``absmax`` /
``quant_map`` / ``SCB`` tensors, compressed-tensors ``weight_packed``, ...) is refused rather than
guessed. ``I8`` weights count one weight per element.
"""
from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..errors import ConfigError, Problems, shown

TENSOR_KINDS = ("embedding", "lm_head", "attention", "ffn", "router", "norm")
VISION_KIND = "vision"
ALL_KINDS = TENSOR_KINDS + (VISION_KIND,)

# Bits per element of each safetensors dtype (safetensors' Dtype enum, sub-byte float types included).
SAFETENSORS_DTYPE_BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
    "F8_E8M0": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}
# dtypes that store one logical weight per element; integer dtypes besides I8 may hold packed data
# (F8_E8M0 is left out: it holds MX block scales, never weights)
PLAIN_WEIGHT_DTYPES = ("F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "F6_E2M3", "F6_E3M2", "F4", "I8")
MAX_HEADER_BYTES = 100_000_000  # safetensors refuses larger headers (its MAX_HEADER_SIZE)
GPTQ_BITS = (2, 3, 4, 8)
DEFAULT_GPTQ_BITS = 4
SHARD_INDEX = "model.safetensors.index.json"
SHARD_INDEX_KEYS = ("metadata", "weight_map")  # what transformers writes in a shard index
SAFETENSORS_ENTRY_KEYS = ("dtype", "shape", "data_offsets")  # a tensor's header entry (the format's spec)

_VISION_ROOTS = {"vision_tower", "vision_model", "visual", "multi_modal_projector", "v", "mm"}
_EMBEDDING_PARTS = {"embed_tokens", "embeddings", "token_embd", "position_embd", "token_types"}
_ROUTER_PARTS = {"router", "gate", "shared_expert_gate", "exp_probs_b"}
_ATTENTION_PARTS = {"self_attn", "attention", "attn"}
_FFN_PARTS = {"mlp", "block_sparse_moe", "feed_forward", "intermediate", "experts", "shared_expert",
              "shared_experts", "pooler"}
_BYTES_ONLY_SUFFIXES = (".qzeros", ".scales", ".g_idx", "_scales", ".weight_scale", ".weight_scale_inv",
                        ".input_scale", ".weight_zero_point", ".input_zero_point")
_BITSANDBYTES_PARTS = {"absmax", "quant_map", "nested_absmax", "nested_quant_map", "SCB", "weight_format"}
_KNOWN_PACKED = "known packed layouts: GPTQ/AWQ *.qweight (I32), MXFP4 *_blocks (U8)"


@dataclass(frozen=True)
class CheckpointBytes:
    """Stored bytes and logical weights of each tensor kind of one checkpoint (kinds absent from
    the checkpoint are absent from the dicts)."""

    path: str
    bytes_by_kind: dict[str, int]  # stored bytes, scales / zero points / packed data included
    params_by_kind: dict[str, int]  # logical weights (a packed int4 word holds 8; scales hold 0)
    dtypes_by_kind: dict[str, tuple[str, ...]]  # storage dtypes or GGUF quantization types, sorted

    def bytes_per_weight(self, kind: str) -> float:
        """Stored bytes per logical weight of ``kind`` (scales and zero points included)."""
        what = f"checkpoint {self.path}"
        if kind not in ALL_KINDS:
            raise ConfigError([f"kind = {shown(kind)}: must be one of {', '.join(ALL_KINDS)}"], what)
        if not self.params_by_kind.get(kind):
            held = ", ".join(k for k, n in self.params_by_kind.items() if n) or "none"
            tied = kind == "lm_head" and "embedding" in self.params_by_kind
            raise ConfigError([f"kind = {kind!r}: the checkpoint has no weights of this kind"
                               f"{' (tied embeddings: use embedding)' if tied else ''}; kinds held: {held}"], what)
        return self.bytes_by_kind[kind] / self.params_by_kind[kind]


class _Tensor(NamedTuple):
    file: str  # file name, as messages quote it
    name: str
    dtype: str
    numel: int  # elements stored (packed words for a packed layout)
    n_bytes: int


def tensor_kind(name: str) -> str | None:
    """The kind (one of ``ALL_KINDS``) of a Hugging Face or llama.cpp tensor name; None if no rule
    matches. Rules are tried in order: vision, norm, embedding, lm_head, router, attention, ffn."""
    parts = name.split(".")
    while len(parts) > 1 and parts[0] in ("model", "language_model"):
        parts = parts[1:]
    lower = [q.lower() for q in parts]
    if parts[0] in _VISION_ROOTS:
        return VISION_KIND
    if any("norm" in q or q in ("rope_freqs", "inv_freq") for q in lower):
        return "norm"
    if any(q in _EMBEDDING_PARTS for q in parts):
        return "embedding"
    if parts[0] in ("lm_head", "output") or parts[:3] in (["cls", "predictions", "decoder"],
                                                          ["cls", "predictions", "bias"]):
        return "lm_head"
    if any(q in _ROUTER_PARTS or q.startswith("ffn_gate_inp") for q in parts):
        return "router"
    if any(q in _ATTENTION_PARTS or q.startswith("attn_") for q in parts):
        return "attention"
    if any(q in _FFN_PARTS or q.startswith("ffn_") for q in parts):
        return "ffn"
    if parts[:2] in (["cls", "predictions"], ["cls", "seq_relationship"]) or ("encoder" in parts and "output" in parts):
        return "ffn"  # BERT's MLM transform / NSP head; encoder.layer.N.output.dense (its FFN down projection)
    return None


def read_checkpoint(path: str | os.PathLike) -> CheckpointBytes:
    """Bytes and weights per tensor kind of a ``.safetensors`` file, a directory of ``.safetensors``
    shards (every shard named by ``model.safetensors.index.json``, or every ``*.safetensors`` file
    without one) or a ``.gguf`` file, from the headers alone."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError([f"checkpoint = {shown(path)}: must be a path"], "checkpoint")
    path = Path(path)
    p = Problems(f"checkpoint {path}")
    if path.is_dir():
        tensors = _shard_tensors(path, p)
    elif not path.is_file():
        raise ConfigError([f"{path}: no such file or directory"], "checkpoint")
    elif path.suffix == ".safetensors":
        tensors = _safetensors_tensors(path, p)
    elif path.suffix == ".gguf":
        tensors = _gguf_tensors(path, p)
    else:
        raise ConfigError([f"{path.name}: suffix {path.suffix!r} must be .safetensors or .gguf (or a directory of "
                           f".safetensors shards)"], "checkpoint")
    p.raise_if_any()
    is_gguf = path.suffix == ".gguf"
    bits = _gptq_bits(path if path.is_dir() else path.parent, p) if any(
        t.name.endswith(".qweight") for t in tensors) else DEFAULT_GPTQ_BITS
    p.raise_if_any()
    return _tally(str(path), tensors, (lambda t: t.numel) if is_gguf else (lambda t: _params(t, bits, p)), p)


def _tally(path: str, tensors: list[_Tensor], params_of, p: Problems) -> CheckpointBytes:
    """Sum bytes and weights per kind; every unrecognised name and refused layout is reported."""
    n_bytes, params, dtypes = {}, {}, {}
    unknown = []
    for t in tensors:
        kind = tensor_kind(t.name)
        n = params_of(t)
        if kind is None:
            unknown.append(t)
            continue
        if n is None:
            continue
        n_bytes[kind] = n_bytes.get(kind, 0) + t.n_bytes
        params[kind] = params.get(kind, 0) + n
        dtypes.setdefault(kind, set()).add(t.dtype)
    for t in unknown[:10]:
        p.add(f"{t.file}: tensor name", t.name, f"matches no kind rule ({', '.join(ALL_KINDS)}; Hugging Face or "
                                                "llama.cpp names)")
    if len(unknown) > 10:
        p.add("unrecognised tensor names", len(unknown), "10 listed above; no tensor may be left without a kind")
    p.raise_if_any()
    order = [k for k in ALL_KINDS if k in n_bytes]
    return CheckpointBytes(path, {k: n_bytes[k] for k in order}, {k: params[k] for k in order},
                           {k: tuple(sorted(dtypes[k])) for k in order})


def _params(t: _Tensor, bits: int, p: Problems) -> int | None:
    """Logical weights a safetensors tensor holds; None (and a problem) for a layout refused."""
    field = f"{t.file}: tensor {t.name!r} dtype"
    if any(q in _BITSANDBYTES_PARTS or q.startswith("quant_state") for q in t.name.split(".")):
        p.add(field, t.dtype, f"bitsandbytes quantization state: not supported ({_KNOWN_PACKED})")
        return None
    if t.name.endswith(_BYTES_ONLY_SUFFIXES):
        return 0
    if t.name.endswith(".qweight"):
        ok = p.check(t.dtype in ("I32", "U32"), field, t.dtype, "must be I32 for a GPTQ/AWQ *.qweight")
        ok = ok and p.check(t.numel * 32 % bits == 0, f"{t.file}: tensor {t.name!r} elements", t.numel,
                            f"must hold whole {bits}-bit weights (32 x elements divisible by {bits})")
        return t.numel * 32 // bits if ok else None
    if t.name.endswith("_blocks"):
        if p.check(t.dtype == "U8", field, t.dtype, "must be U8 for MXFP4 *_blocks (two 4-bit values per byte)"):
            return t.numel * 2
        return None
    if p.check(t.dtype in PLAIN_WEIGHT_DTYPES, field, t.dtype,
               f"packed or non-weight storage this reader cannot identify ({_KNOWN_PACKED}; plain weights are "
               f"{', '.join(PLAIN_WEIGHT_DTYPES)})"):
        return t.numel
    return None


def _gptq_bits(folder: Path, p: Problems) -> int:
    """Bits per GPTQ/AWQ weight: ``quantization_config.bits`` of ``config.json``, else ``bits`` of
    ``quantize_config.json``, else 4."""
    for file, keys in ((folder / "config.json", ("quantization_config", "bits")),
                       (folder / "quantize_config.json", ("bits",))):
        if not file.is_file():
            continue
        cfg = _read_json(file, p)
        for key in keys[:-1]:
            cfg = cfg.get(key) if isinstance(cfg, dict) else None
        if not isinstance(cfg, dict) or keys[-1] not in cfg:
            continue
        bits = cfg[keys[-1]]
        if p.check(bits in GPTQ_BITS and not isinstance(bits, bool), f"{file.name}: {'.'.join(keys)}", bits,
                   f"must be one of {', '.join(map(str, GPTQ_BITS))}"):
            return bits
        return DEFAULT_GPTQ_BITS
    return DEFAULT_GPTQ_BITS


def _read_json(file: Path, p: Problems):
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        p.add(f"{file.name}", "unreadable", f"must be a JSON file ({type(e).__name__}: {e})")
        return None


def _shard_tensors(folder: Path, p: Problems) -> list[_Tensor]:
    """Every tensor of a directory's shards, checked against its index when there is one."""
    index = folder / SHARD_INDEX
    weight_map = None
    if index.is_file():
        doc = _read_json(index, p)
        if isinstance(doc, dict) and not p.unknown_keys(SHARD_INDEX, doc, SHARD_INDEX_KEYS):
            return []
        weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
        if doc is not None and not (isinstance(weight_map, dict) and all(
                isinstance(f, str) and f and Path(f).name == f for f in weight_map.values())):
            p.add(f"{SHARD_INDEX}: weight_map", weight_map,
                  "must map tensor names to shard file names in this directory")
            return []
        if weight_map is None:
            return []
        files = [folder / f for f in sorted(set(weight_map.values()))]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            p.add(f"{SHARD_INDEX}: shards", missing, "named in weight_map but not in the directory")
            return []
    else:
        files = sorted(folder.glob("*.safetensors"))
        if not files:
            p.add(f"{folder}", "no shards", "a checkpoint directory must hold *.safetensors files")
            return []
    tensors = [t for f in files for t in _safetensors_tensors(f, p)]
    seen = {}
    for t in tensors:
        if t.name in seen:
            p.add(f"{t.file}: tensor {t.name!r}", "duplicate", f"also stored in {seen[t.name]}")
        seen[t.name] = t.file
    if weight_map is not None and not p.items:
        for name, file in weight_map.items():
            p.check(seen.get(name) == file, f"{SHARD_INDEX}: tensor {name!r}", seen.get(name, "absent"),
                    f"weight_map says it is stored in {file}")
        unlisted = [n for n in seen if n not in weight_map]
        if unlisted:
            p.add(f"{SHARD_INDEX}: weight_map", unlisted[:10], f"{len(unlisted)} stored tensor(s) not listed")
    return tensors


def _safetensors_tensors(file: Path, p: Problems) -> list[_Tensor]:
    """Tensors of one safetensors file, from its header: an 8-byte little-endian u64 N, then N bytes
    of JSON ``{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}``."""
    header, data_bytes = _safetensors_header(file, p)
    if header is None:
        return []
    tensors, spans = [], []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        t = _safetensors_entry(file.name, name, entry, data_bytes, p)
        if t is not None:
            tensors.append(t[0])
            spans.append((t[1], t[0].n_bytes, name))
    end, last = 0, None
    for begin, n, name in sorted(spans):
        p.check(n == 0 or begin >= end, f"{file.name}: tensor {name!r} data_offsets", [begin, begin + n],
                f"must not overlap tensor {last!r} (which ends at {end})")
        if n:
            end, last = max(end, begin + n), name
    return tensors


def _safetensors_header(file: Path, p: Problems) -> tuple[dict | None, int]:
    """The header's JSON object and the size of the data section after it (None if unreadable)."""
    try:
        size = file.stat().st_size
        with file.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                p.add(f"{file.name}: header size", f"{size} bytes in file", "a safetensors file starts with an 8-byte "
                                                                          "little-endian header size")
                return None, 0
            (n,) = struct.unpack("<Q", head)
            if n > min(MAX_HEADER_BYTES, size - 8):
                p.add(f"{file.name}: header size", n, f"must be at most {min(MAX_HEADER_BYTES, size - 8)} bytes "
                                                      f"(the file holds {size})")
                return None, 0
            raw = f.read(n)
    except OSError as e:
        p.add(f"{file.name}", "unreadable", f"must be a readable file ({e})")
        return None, 0
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        p.add(f"{file.name}: header", raw[:40], f"must be UTF-8 JSON ({type(e).__name__}: {e})")
        return None, 0
    if not isinstance(header, dict):
        p.add(f"{file.name}: header", header, "must be a JSON object of tensor name -> {dtype, shape, data_offsets}")
        return None, 0
    return header, size - 8 - n


def _safetensors_entry(file: str, name: str, entry, data_bytes: int, p: Problems) -> tuple[_Tensor, int] | None:
    """One validated header entry and its first byte, or None (with problems) if invalid."""
    field = f"{file}: tensor {name!r}"
    if not isinstance(entry, dict):
        p.add(field, entry, "must be an object with dtype, shape and data_offsets")
        return None
    if not p.unknown_keys(field, entry, SAFETENSORS_ENTRY_KEYS):  # the format's three keys, no other
        return None
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    ok = p.check(dtype in SAFETENSORS_DTYPE_BITS, f"{field} dtype", dtype,
                 f"must be one of {', '.join(SAFETENSORS_DTYPE_BITS)}")
    ok &= p.check(isinstance(shape, list) and all(_is_count(d) for d in shape), f"{field} shape", shape,
                  "must be a list of integers >= 0")
    ok &= p.check(isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)
                  and offsets[0] <= offsets[1] <= data_bytes, f"{field} data_offsets", offsets,
                  f"must be [begin, end] with 0 <= begin <= end <= {data_bytes} (the data section's bytes)")
    if not ok:
        return None
    numel = math.prod(shape)
    bits = numel * SAFETENSORS_DTYPE_BITS[dtype]
    n_bytes = offsets[1] - offsets[0]
    if not p.check(bits % 8 == 0 and n_bytes * 8 == bits, f"{field} data_offsets", offsets,
                   f"must span shape {shape} x {dtype} = {bits / 8:g} bytes, not {n_bytes}"):
        return None
    return _Tensor(file, name, dtype, numel, n_bytes), offsets[0]


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _gguf_tensors(file: Path, p: Problems) -> list[_Tensor]:
    """Tensors of a GGUF file through ``gguf.GGUFReader`` (a memory map: the data is not read)."""
    try:
        with file.open("rb") as f:
            magic = f.read(4)
    except OSError as e:
        p.add(f"{file.name}", "unreadable", f"must be a readable file ({e})")
        return []
    if not p.check(magic == b"GGUF", f"{file.name}: magic", magic, "must be b'GGUF' (a llama.cpp GGUF file)"):
        return []
    from gguf import GGUFReader

    try:
        reader = GGUFReader(file)
        return [_Tensor(file.name, str(t.name), t.tensor_type.name, int(t.n_elements), int(t.n_bytes))
                for t in reader.tensors]
    except Exception as e:  # noqa: BLE001 - gguf raises ValueError, KeyError, IndexError, numpy errors on damage
        p.add(f"{file.name}", "unreadable",
              f"must be a valid GGUF file (truncated or damaged: {type(e).__name__}: {e})")
        return []
