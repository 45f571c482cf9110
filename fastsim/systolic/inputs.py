"""SCALE-Sim inputs read unchanged: its ``.cfg`` configuration and its topology CSVs (conv and
GEMM forms), so SCALE-Sim users can point fastsim at their existing files."""
from __future__ import annotations

import configparser
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, Problems

DATAFLOWS = ("ws", "is", "os")


OPERANDS = ("ifmap", "filter", "ofmap")


@dataclass(frozen=True)
class Layer:
    """A convolution the way SCALE-Sim reads it; a GEMM is its M x K ifmap with one K-wide filter
    window. The mesh sees the GEMM it lowers to: ofmap pixels M, filters N, window K. The memory
    model needs the convolution itself: its addresses repeat across overlapping windows."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    num_filters: int
    stride_h: int = 1
    stride_w: int = 1

    @classmethod
    def gemm(cls, name, m, n, k):
        return cls(name, m, k, 1, k, 1, n)

    @classmethod
    def conv(cls, name, ifmap_h, ifmap_w, filter_h, filter_w, channels, num_filters, stride_h, stride_w=None):
        return cls(name, ifmap_h, ifmap_w, filter_h, filter_w, channels, num_filters, stride_h, stride_w or stride_h)

    @property
    def ofmap_h(self) -> int:
        return math.ceil((self.ifmap_h - self.filter_h + self.stride_h) / self.stride_h)

    @property
    def ofmap_w(self) -> int:
        return math.ceil((self.ifmap_w - self.filter_w + self.stride_w) / self.stride_w)

    @property
    def m(self) -> int:
        return self.ofmap_h * self.ofmap_w

    @property
    def n(self) -> int:
        return self.num_filters

    @property
    def k(self) -> int:
        return self.filter_h * self.filter_w * self.channels

    @property
    def ifmap_unique(self) -> int:
        """Distinct ifmap elements (conv: H*W*C, GEMM: M*K)."""
        return self.ifmap_h * self.ifmap_w * self.channels

    @property
    def geometry(self) -> tuple[int, int, int, int, int, int, int, int]:
        return (self.ifmap_h, self.ifmap_w, self.filter_h, self.filter_w, self.channels, self.num_filters,
                self.stride_h, self.stride_w)


@dataclass(frozen=True)
class MeshConfig:
    rows: int
    cols: int
    dataflow: str
    ifmap_sram_kb: int = 64
    filter_sram_kb: int = 64
    ofmap_sram_kb: int = 64
    # None: unlimited (SCALE-Sim "CALC"); else SCALE-Sim's USER-mode interfaces in words/cycle:
    # `Bandwidth` writes the ofmap, `[layout] Ifmap/FilterSRAMBankBandwidth` read the operands
    bandwidth_words_per_cycle: int | None = None
    ifmap_read_words_per_cycle: int = 10
    filter_read_words_per_cycle: int = 10
    word_bytes: int = 1
    name: str = "mesh"
    # SCALE-Sim's IfmapOffset / FilterOffset / OfmapOffset: only trace addresses depend on them
    address_offsets: tuple[int, int, int] = (0, 10_000_000, 20_000_000)

    @property
    def bandwidth_limited(self) -> bool:
        return self.bandwidth_words_per_cycle is not None

    @property
    def sram_words(self) -> tuple[int, int, int]:
        """(ifmap, filter, ofmap) SRAM sizes in words."""
        per_kb = 1024 // self.word_bytes
        return self.ifmap_sram_kb * per_kb, self.filter_sram_kb * per_kb, self.ofmap_sram_kb * per_kb

    def validate(self) -> "MeshConfig":
        p = Problems("systolic config")
        p.number("ArrayHeight", self.rows, integer=True, lo=1, hi=4096)
        p.number("ArrayWidth", self.cols, integer=True, lo=1, hi=4096)
        p.check(self.dataflow in DATAFLOWS, "Dataflow", self.dataflow, f"one of {DATAFLOWS}")
        for key, value in [("ifmapsramszkB", self.ifmap_sram_kb), ("filtersramszkB", self.filter_sram_kb),
                           ("ofmapsramszkB", self.ofmap_sram_kb)]:
            p.number(key, value, integer=True, lo=1, hi=2**24, unit="kB")
        if self.bandwidth_limited:
            for key, value in [("Bandwidth", self.bandwidth_words_per_cycle),
                               ("IfmapSRAMBankBandwidth", self.ifmap_read_words_per_cycle),
                               ("FilterSRAMBankBandwidth", self.filter_read_words_per_cycle)]:
                p.number(key, value, integer=True, lo=1, hi=2**24, unit="words/cycle")
        p.raise_if_any()
        return self


def read_config(path: str | Path) -> MeshConfig:
    """A SCALE-Sim .cfg file ([architecture_presets], [run_presets])."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError([f"{path}: no such config file"], "systolic config")
    cp = configparser.ConfigParser()
    try:
        cp.read_string(path.read_text(), str(path))
    except (OSError, UnicodeDecodeError, ValueError, configparser.Error) as e:  # NUL bytes: ValueError
        raise ConfigError([f"{path}: not a readable SCALE-Sim config ({type(e).__name__}: {e})"], "systolic config")
    p = Problems(str(path))
    arch = cp["architecture_presets"] if cp.has_section("architecture_presets") else {}
    for key in ("ArrayHeight", "ArrayWidth", "Dataflow"):
        p.check(key in arch, f"architecture_presets.{key}", "missing", "required")
    p.raise_if_any()
    user_bw = cp.get("run_presets", "InterfaceBandwidth", fallback="CALC").strip().upper() == "USER"
    layout = cp["layout"] if cp.has_section("layout") else {}

    def integer(section, key, default, most=2**31):
        try:
            value = int(str(section.get(key, default)).split(",")[0])
        except ValueError:
            p.add(key, section.get(key), "an integer")
            return default
        if abs(value) > most:
            p.add(key, value, f"at most {most:,} in magnitude")
            return default
        return value

    # SCALE-Sim features that change its numbers and are not modelled: refuse rather than differ
    for section, key in (("sparsity", "SparsitySupport"), ("run_presets", "UseRamulatorTrace"),
                         ("layout", "IfmapCustomLayout"), ("layout", "FilterCustomLayout")):
        value = cp.get(section, key, fallback="false").strip().lower()
        p.check(value in ("false", "0", "no", ""), f"{section}.{key}", value, "not supported by fastsim; set False")
    bw = integer(arch, "Bandwidth", 10) if user_bw else None
    offsets = (integer(arch, "IfmapOffset", 0), integer(arch, "FilterOffset", 10_000_000),
               integer(arch, "OfmapOffset", 20_000_000))
    config = MeshConfig(integer(arch, "ArrayHeight", 0, 4096), integer(arch, "ArrayWidth", 0, 4096),
                        arch["Dataflow"].strip(),
                        integer(arch, "IfmapSramSzkB", 64), integer(arch, "FilterSramSzkB", 64),
                        integer(arch, "OfmapSramSzkB", 64), bw,
                        integer(layout, "IfmapSRAMBankBandwidth", 10), integer(layout, "FilterSRAMBankBandwidth", 10),
                        name=cp.get("general", "run_name", fallback=path.stem), address_offsets=offsets)
    p.raise_if_any()
    return config.validate()


def read_topology(path: str | Path) -> list[Layer]:
    """SCALE-Sim topology CSV: conv form (name, ifmap h, w, filter h, w, channels, filters,
    stride[, sparsity]) or GEMM form (name, M, N, K[, sparsity]), detected from the header."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError([f"{path}: no such topology file"], "topology")
    try:
        lines = [ln.strip() for ln in path.read_text().splitlines() if ln.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError([f"{path}: cannot be read as text ({e})"], "topology")
    if len(lines) < 2:
        raise ConfigError([f"{path}: needs a header line and at least one layer"], "topology")
    header = [h.strip().lower() for h in lines[0].split(",")]
    gemm = len(header) >= 4 and header[1:4] == ["m", "n", "k"]
    layers, p = [], Problems(str(path))
    for i, line in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in line.split(",")]
        if not cells[0]:
            continue  # SCALE-Sim's own files contain separator rows of bare commas
        cells = [c for c in cells if c != ""]
        try:
            if gemm:
                name, m, n, k = cells[0], int(cells[1]), int(cells[2]), int(cells[3])
                layers.append(Layer.gemm(name, m, n, k))
            else:
                name, vals = cells[0], [int(x) for x in cells[1:8]]
                if len(vals) < 7:
                    raise ValueError("needs 7 numbers")
                layers.append(Layer.conv(name, *vals))
        except (ValueError, IndexError) as e:
            p.add(f"line {i}", line, f"expected {'name, M, N, K' if gemm else 'name + 7 integers'} ({e})")
    for layer in layers:
        sizes = (layer.ifmap_h, layer.ifmap_w, layer.filter_h, layer.filter_w, layer.channels, layer.num_filters,
                 layer.stride_h, layer.stride_w)
        if not p.check(all(1 <= x <= 2**24 for x in sizes), f"layer {layer.name}", sizes,
                       "sizes and strides must be in 1..2**24"):
            continue
        p.check(min(layer.m, layer.n, layer.k) >= 1, f"layer {layer.name}", (layer.m, layer.n, layer.k),
                "dimensions must be >= 1 (filter larger than ifmap?)")
    if not layers and not p.items:
        p.add("layers", 0, "at least one layer")
    p.raise_if_any()
    return layers
