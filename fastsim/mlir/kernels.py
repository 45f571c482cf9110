"""Kernel costs: the cycles each external kernel (a ``func.call``) takes, from the user's TOML,
else fastsim's own cost model for kernels it recognises by name and shapes (``default_kernel_cost``),
and the documented per-op cost of inline code."""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, Problems

# Inline code in a core body (arith, memref, vector, math ops outside any func.call): one cycle per
# op, an assumption (a VLIW core issues several per cycle; a scalar loop's loads, adds and stores
# pipeline). Ops that only name values or reshape views take none.
INLINE_OP_CYCLES = 1
FREE_OPS = frozenset({
    "arith.constant", "arith.index_cast", "arith.index_castui", "memref.assume_alignment", "memref.subview",
    "memref.reinterpret_cast", "memref.collapse_shape", "memref.expand_shape", "memref.cast", "scf.yield",
    "aie.end", "aie.objectfifo.subview.access", "affine.yield", "memref.get_global", "llvm.mlir.undef",
})
INLINE_DIALECTS = ("arith.", "memref.", "vector.", "math.", "affine.load", "affine.store", "aievec.")


# the most cycles one kernel call may cost: the simulation's own cycle limit
# (``simulate_design(max_cycles=2**40)``), so that no sum of calls overflows the engine's int64 clock
MAX_KERNEL_CYCLES = 2**40


def load_kernel_costs(path: str | Path | None) -> dict:
    """``[kernels]`` of a TOML file: kernel name -> cycles per call (a whole number >= 1), or a
    table of cycles and the kernel's own lock operations (``KernelLocks``). The file
    holds that one table and nothing else: a key outside it or another table (``[kernel]``) is
    refused by name, never ignored. Every bad entry is reported at once."""
    if path is None:
        return {}
    p = Problems(f"kernel costs {path}")
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        p.add("file", str(path), f"must be a readable UTF-8 TOML file ({e})")
        p.raise_if_any()
    for key, value in data.items():
        if key == "kernels":
            continue
        if isinstance(value, dict):
            p.add(f"[{key}]", key, "not a table of kernel costs: the file holds one [kernels] table of "
                                   "kernel name = cycles")
        else:
            p.add(key, value, "a key outside [kernels]: give each cost under [kernels] as kernel name = cycles")
    if "kernels" not in data and not p.items:
        p.add("[kernels]", "missing", "the file must hold a [kernels] table of kernel name = cycles")
    try:
        table = data.get("kernels", {})
        costs, locks = checked_table(table, str(path))
    except ConfigError as e:
        p.items += e.problems
        costs, locks = {}, {}
    p.raise_if_any()
    return {name: ({"cycles": cycles, "acquire": [list(a) for a in locks[name].acquire],
                    "release": [list(r) for r in locks[name].release]} if name in locks else cycles)
            for name, cycles in costs.items()}


@dataclass(frozen=True)
class KernelLocks:
    """The locks a kernel acquires and releases itself (its C code calls ``acquire_greater_equal``
    and ``release`` on lock ids passed as arguments, which MLIR cannot show): (operand, value)
    pairs, operand the 0-based position among the ``func.call``'s operands. The acquires happen
    in order before the kernel's cycles, the releases in order after them."""

    acquire: tuple = ()
    release: tuple = ()


LOCK_KEYS = ("acquire", "release")


def kernel_costs(table: dict, source: str = "kernel costs") -> dict[str, int]:
    """Check a {name: cycles} table (``cycles`` may also be given as ``{cycles = N}``, with the
    kernel's own lock operations as ``acquire``/``release`` lists, ``KernelLocks``): whole numbers
    in 1..``MAX_KERNEL_CYCLES``; every problem at once. Returns the cycles."""
    return checked_table(table, source)[0]


def kernel_lock_uses(table: dict, source: str = "kernel costs") -> dict[str, KernelLocks]:
    """The ``KernelLocks`` of the table's entries that declare them (checked as ``kernel_costs``)."""
    return checked_table(table, source)[1]


def checked_table(table: dict, source: str) -> tuple[dict[str, int], dict[str, KernelLocks]]:
    p = Problems(source)
    out, locks = {}, {}
    if not isinstance(table, dict):
        p.add("kernels", table, "must be a table of kernel name = cycles")
        p.raise_if_any()
    for name, value in table.items():
        field = f"kernels.{name}"
        if isinstance(value, dict):
            for key in sorted(set(value) - {"cycles", *LOCK_KEYS}):
                p.add(f"{field}.{key}", value[key], "unknown key: an entry's table holds cycles, and acquire "
                                                    "and release (the locks the kernel takes itself) only")
            uses = {key: _lock_list(p, f"{field}.{key}", value[key]) for key in LOCK_KEYS if key in value}
            if uses:
                locks[str(name)] = KernelLocks(**uses)
            if "cycles" not in value:
                p.add(f"{field}.cycles", "missing", "give the kernel's cycles per call")
                continue
            value, field = value["cycles"], f"{field}.cycles"
        if p.number(field, value, integer=True, lo=1, hi=MAX_KERNEL_CYCLES, unit="cycles per call"):
            out[str(name)] = int(value)
    p.raise_if_any()
    return out, locks


def _lock_list(p: Problems, field: str, value) -> tuple:
    """``[[operand, value], ...]`` checked: an operand position >= 0 and a lock value >= 1 each."""
    good = isinstance(value, (list, tuple)) and all(
        isinstance(e, (list, tuple)) and len(e) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                             for x in e) and e[0] >= 0 and e[1] >= 1
        for e in value)
    if not good:
        p.add(field, value, "a list of [operand, value] pairs: the call's 0-based operand that passes the lock "
                            "(>= 0) and the value the kernel acquires or releases (>= 1)")
        return ()
    return tuple((int(a), int(b)) for a, b in value)


@dataclass(frozen=True)
class DefaultCost:
    """A kernel cost fastsim guessed from a call's kernel name and memref shapes (no cost was
    given): the cycles per call and the rule, in words, that gave them."""

    kernel: str
    cycles: int
    rule: str


# A kernel is recognised by a word of its name (split at '_', lower case): matmul words first,
# then the vector-op kinds of ``Arch.vector_cycles_per_elem`` (fastsim.arch.VECTOR_KINDS).
MATMUL_WORDS = frozenset({"matmul", "mm", "gemm"})
MATVEC_WORDS = frozenset({"matvec", "mv", "gemv"})  # mlir-aie's mv.cc: matvec_{scalar,vectorized}_<in>_<out>
# mlir-aie's conv kernels (aie_kernels/aie2/conv2dk1_i8.cc, conv2dk3.cc, bottleneck/bn_conv2dk3_dw.cc):
# name word -> (kind, window r = s); a word "dw" makes a 3 x 3 one depthwise
CONV_WORDS = {"conv2dk1": ("pointwise", 1), "conv2dk3": ("dense", 3)}
VECTOR_WORDS = {
    "softmax": "softmax", "layernorm": "layer_norm", "rmsnorm": "norm", "gelu": "gelu", "silu": "silu_mul",
    "swiglu": "silu_mul", "rope": "rope",
    "passthrough": "elementwise", "passthroughline": "elementwise", "copy": "elementwise", "relu": "elementwise",
    "add": "elementwise", "sub": "elementwise", "mul": "elementwise", "eltwise": "elementwise",
    "scale": "elementwise", "zero": "elementwise",
}
# memref element type -> the matmul dtype key of Arch.macs_per_cycle
MATMUL_DTYPES = {"i8": "int8", "ui8": "int8", "si8": "int8", "i16": "int16", "si16": "int16", "bf16": "bf16"}


def _words(name: str) -> list[str]:
    words = [w for w in name.lower().split("_") if w]
    joined = name.lower()
    for two in ("layer_norm", "rms_norm", "matrix_multiplication"):
        if two in joined:
            words.append(two.replace("_", "") if "norm" in two else "matmul")
    return words


def default_kernel_cost(name: str, memrefs, arch, layouts=()) -> tuple[DefaultCost | None, str]:
    """fastsim's own cost of a call to ``name`` with memref arguments ``memrefs`` ([(shape, element
    type)], as ``values.call_memrefs`` reads them) on ``arch``: (the cost, "") when the kernel is
    one fastsim recognises, else (None, why not). Rules (docs/mlir.md "Kernel costs"):

    - matmul (a name word ``matmul``, ``mm``, ``gemm``), the first three memrefs A, B, C:
      m, k, n from their element counts (m k, k n, m n: any layout); per call the mapper's core
      cycles (``fastsim.mapping.plan``): ``fastsim.cost.matmul_cycles`` on the datapath whose
      microkernel shape the blocks of A and B in local memory show (``layouts``: per operand, the
      ``dimensionsToStream`` it arrived in; ``tiled_datapath``), else on the fastest datapath of
      A's dtype, at least the A and B loads, plus the C tile's load and store and the datapath's
      conversion of A and B;
    - vector ops (``VECTOR_WORDS``: element-wise passthrough, copy, add, mul, scale, relu, zero;
      softmax, norms, gelu, silu, rope): the largest memref's elements times the arch's cycles per
      element of that kind (``Arch.vector_cost``)."""
    words = _words(name)
    if any(w in MATMUL_WORDS for w in words):
        return _matmul(name, memrefs, arch, layouts if len(layouts) == len(memrefs) else ())
    if any(w in MATVEC_WORDS for w in words):
        return _matvec(name, memrefs, arch)
    if any(w in CONV_WORDS for w in words):
        return _conv(name, words, memrefs, arch)
    kind = next((VECTOR_WORDS[w] for w in words if w in VECTOR_WORDS), None)
    if kind is None:
        return None, "not a kernel fastsim recognises by its name"
    if not memrefs:
        return None, f"a {kind} kernel by its name, but its call passes no memref of known shape"
    elements = max(math.prod(shape) for shape, _ in memrefs)
    per_elem = arch.vector_cost(kind)
    cycles = max(1, math.ceil(elements * per_elem))
    return DefaultCost(name, cycles, f"{kind}: {elements} elements x {per_elem:g} cycles per element "
                                     f"({arch.name} vector_cycles_per_elem.{kind})"), ""


def matmul_shape(name: str, memrefs) -> tuple[int, int, int] | None:
    """(m, k, n) of a call to a kernel named as a matmul (``MATMUL_WORDS``) whose first three
    memrefs are A (m k elements), B (k n) and C (m n), in any layout; None otherwise."""
    if not any(w in MATMUL_WORDS for w in _words(name)) or len(memrefs) < 3:
        return None
    a, b, c = (math.prod(shape) for shape, _ in memrefs[:3])
    if not a * b * c:
        return None
    m, k, n = (math.isqrt(x * y // z) for x, y, z in ((a, c, b), (a, b, c), (b, c, a)))
    return (m, k, n) if (m * k, k * n, m * n) == (a, b, c) and m * k * n else None


def _matvec(name: str, memrefs, arch) -> tuple[DefaultCost | None, str]:
    """mlir-aie's ``mv.cc`` (``matvec_vectorized_i16_i32(A, b, c)``): A of m x k, b of k, c of m,
    one matrix-vector product: the kernel model's call for one row of activations against a k x m
    matrix (``fastsim.cost.matmul_cycles(1, k, m)``, which takes its GEMV form, modelled on
    ``mv.cc``, where that is cheaper)."""
    from ..cost import kernel_modelled, matmul_cycles

    if len(memrefs) < 3:
        return None, f"a matrix-vector kernel by its name, but its call passes {len(memrefs)} memrefs of known " \
                     "shape (needs A, b, c)"
    (sa, ta), (sb, _), (sc, tc) = memrefs[:3]
    a, k, m = math.prod(sa), math.prod(sb), math.prod(sc)
    if a != m * k or not a:
        return None, f"a matrix-vector kernel by its name, but A, b, c of {a}, {k}, {m} elements are no m x k, k, m"
    dtype = MATMUL_DTYPES.get(ta)
    options = dict(arch.datapath_options(dtype)) if dtype else {}
    key = max(options, key=lambda x: arch.macs_per_cycle[x]) if options else None
    if key is None or not kernel_modelled(arch, key):
        return None, f"a matrix-vector kernel of {ta} by its name, but {arch.name}'s kernel model has no datapath for it"
    from .values import element_bits

    cycles = matmul_cycles(1, k, m, key, arch, arch.efficiency(key), conv_cycles_per_elem=options[key],
                           c_bytes=element_bits(tc) / 8)
    return DefaultCost(name, cycles, f"matrix-vector {m}x{k} {dtype}: fastsim.cost.matmul_cycles(1, {k}, {m}) "
                                     f"{cycles} on the {key} datapath, the kernel model (docs/kernel_model.md)"), ""


def _conv_shape(kind: str, r: int, memrefs) -> tuple[int, int, int] | None:
    """(pixels, input channels, output channels) of a conv call's memrefs: ``r`` input lines of
    W x Cin, weights (r r Cin Cout; r r C depthwise), output W x Cout; None when they are not."""
    lines, (sw, _), (so, _) = memrefs[:r], memrefs[r], memrefs[r + 1]
    a, w, c = math.prod(lines[0][0]), math.prod(sw), math.prod(so)
    if any(math.prod(shape) != a for shape, _ in lines) or not a * w * c or w % (r * r):
        return None
    if kind == "depthwise":  # a = W C, w = r r C, c = W C
        ch = w // (r * r)
        return (a // ch, ch, ch) if a % ch == 0 and c == a else None
    pair = w // (r * r)  # Cin Cout
    width = math.isqrt(a * c // pair) if a * c % pair == 0 else 0
    if not width or a % width or c % width or (a // width) * (c // width) != pair:
        return None
    return width, a // width, c // width


def _conv(name: str, words: list[str], memrefs, arch) -> tuple[DefaultCost | None, str]:
    """mlir-aie's conv kernels: ``conv2dk1_i8(input W x Cin, weights Cin Cout, output W x Cout,
    ...scalars)`` and ``conv2dk3_ui8(line0, line1, line2, weights 9 Cin Cout, output, ...)`` (a word
    ``dw``: depthwise, weights 9 C): the kernel model's conv call (``fastsim.kernel_model.conv``),
    with the arch's calibration, as the conv mapper prices its calls (``mapping.conv_plan``)."""
    from ..kernel_model import conv as KC, matmul as KM

    word = next(w for w in words if w in CONV_WORDS)
    kind, r = CONV_WORDS[word]
    kind = "depthwise" if "dw" in words and r > 1 else kind
    extra = [w for w in words if w in ("skip", "init", "relu", "bn", "put", "get")]
    if extra or len(memrefs) != r + 2:
        return None, (f"a {word} kernel by its name, but " + (f"a {extra[0]} variant" if extra else
                      f"its call passes {len(memrefs)} memrefs (it takes {r} input line(s), weights and output)"))
    shape = _conv_shape(kind, r, memrefs)
    if shape is None:
        return None, f"a {word} kernel by its name, but its memrefs are no input lines, weights and output of one shape"
    pixels, cin, cout = shape
    options = dict(arch.datapath_options(MATMUL_DTYPES.get(memrefs[0][1], "")))
    key = max(options, key=lambda x: arch.macs_per_cycle[x]) if options else None
    if key is None or KM.micro_kernel(arch, key) is None or KC.conv_units(arch) is None:
        return None, f"a {word} kernel of {memrefs[0][1]}, but {arch.name}'s kernel model has no conv for it"
    from .values import element_bits

    tuning = KM.Tuning(arch.efficiency(key), float(arch.call_cycles(key)), float(arch.block_cycles(key)))
    cycles = max(1, math.ceil(float(KC.conv_call_cycles(arch, key, kind, pixels, cin, cout, r, r, tuning=tuning,
                                                        conv_cycles_per_elem=options[key],
                                                        out_bytes=element_bits(memrefs[r + 1][1]) / 8))))
    return DefaultCost(name, cycles, f"{kind} conv {r}x{r}, {pixels} pixels x {cin} -> {cout} channels on the {key} "
                                     f"datapath: the kernel model's conv call {cycles} (docs/kernel_model.md)"), ""


def _block(layout: tuple, shape: tuple) -> tuple[int, int] | None:
    """(rows, columns) of the blocks a ``dimensionsToStream`` layout (outermost first) writes a
    row-major ``shape`` in: a contiguous innermost run, rows one matrix row apart; None otherwise."""
    if len(layout) < 2 or len(shape) != 2 or layout[-1][1] != 1 or layout[-2][1] != shape[-1]:
        return None
    return layout[-2][0], layout[-1][0]


def tiled_datapath(options: dict, arch, memrefs, layouts) -> tuple[str, tuple] | None:
    """The datapath of ``options`` whose microkernel shape (r, s, t) the call's A and B show: A in
    r x s blocks and B in s x t blocks (mlir-aie's matmul designs tile both operands to the mmul
    shape of the kernel they were built for: on npu2, 4x8x8 for native bf16, 8x8x8 for bf16
    emulated on bfp16). None when the layouts do not show one shape, or no datapath has it."""
    if len(layouts) < 2:
        return None
    a, b = _block(layouts[0], memrefs[0][0]), _block(layouts[1], memrefs[1][0])
    if a is None or b is None or a[1] != b[0]:
        return None
    shape = (a[0], a[1], b[1])
    found = [key for key in options if tuple(arch.mmul_shapes.get(key, ())) == shape]
    return (found[0], shape) if len(found) == 1 else None


def _matmul(name: str, memrefs, arch, layouts=()) -> tuple[DefaultCost | None, str]:
    from ..cost import kernel_modelled, matmul_cycles

    if len(memrefs) < 3:
        return None, f"a matmul by its name, but its call passes {len(memrefs)} memrefs of known shape (needs A, B, C)"
    (sa, ta), (sb, tb), (sc, _) = memrefs[:3]
    a, b, c = math.prod(sa), math.prod(sb), math.prod(sc)
    if matmul_shape(name, memrefs) is None:
        return None, f"a matmul by its name, but A, B, C of {a}, {b}, {c} elements are no m x k, k x n, m x n"
    m, k, n = matmul_shape(name, memrefs)
    dtype = "int8xint4" if MATMUL_DTYPES.get(ta) == "int8" and tb == "i4" else MATMUL_DTYPES.get(ta)
    options = dict(arch.datapath_options(dtype)) if dtype else {}
    if not options:
        return None, f"a matmul of {ta} by its name, but {arch.name} has no MAC rate for it " \
                     f"(rates: {sorted(arch.macs_per_cycle)})"
    tiled = tiled_datapath(options, arch, memrefs, layouts)
    key = tiled[0] if tiled else max(options, key=lambda x: arch.macs_per_cycle[x])  # else the mapper's default
    on = (f"on the {key} datapath (A and B reach the core in {tiled[1][0]}x{tiled[1][1]} and "
          f"{tiled[1][1]}x{tiled[1][2]} blocks: its {'x'.join(map(str, tiled[1]))} microkernel)" if tiled
          else f"on the {key} datapath")
    from .values import element_bits

    a_bytes, b_bytes, c_bytes = (math.prod(s) * element_bits(t) // 8 for s, t in memrefs[:3])
    if kernel_modelled(arch, key):  # the kernel model prices the loads, C moves and conversion itself
        cycles = matmul_cycles(m, k, n, key, arch, arch.efficiency(key), conv_cycles_per_elem=options[key],
                               c_bytes=c_bytes / (m * n))
        return DefaultCost(name, cycles, f"matmul {m}x{k}x{n} {dtype} {on}: fastsim.cost.matmul_cycles "
                                         f"{cycles}, the kernel model (A, B, C moves and conversion inside; "
                                         f"docs/kernel_model.md)"), ""
    load, store = arch.core_load_bytes_per_cycle, arch.core_store_bytes_per_cycle
    core = matmul_cycles(m, k, n, key, arch, arch.efficiency(key))
    loads = math.ceil((a_bytes + b_bytes) / load)
    conv = math.ceil((m * k + k * n) * options[key])
    cycles = max(core, loads) + math.ceil(c_bytes / load) + math.ceil(c_bytes / store) + conv
    return DefaultCost(name, cycles, f"matmul {m}x{k}x{n} {dtype} {on}: fastsim.cost.matmul_cycles "
                                     f"{core} (A, B loads {loads}) + C load and store "
                                     f"{math.ceil(c_bytes / load) + math.ceil(c_bytes / store)}"
                                     + (f" + conversion {conv}" if conv else "")), ""
