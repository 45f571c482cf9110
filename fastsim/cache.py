"""The one cache: answers fastsim reuses because the same inputs give the same bits.

Every entry is keyed by the content of what determines it: a region's key is a value made of
frozen dataclasses, tuples, strings and numbers (or a digest of arrays, for engine tables; three
memory-only regions name a graph by identity, their entries holding it), and
its ``repr`` is what identifies it on disk, inside a directory named by the code version (a hash
of every fastsim and kernel source file), so a changed simulator never reads an older one's
answers. Regions separate kinds of answers, each with its own memory bound; one may add a disk
tier with a codec that turns its values into JSON and plain arrays (never pickles):

===========  =======================================  ====================================  ============
region       holds                                    key                                   tiers
===========  =======================================  ====================================  ============
engine       a design's final state and outputs       its lowered tables' digest            memory, costly, disk
search       a mapping search's result                op, pins, arch, top, keep             memory, packed, disk
op           an op instance's evaluation result       placement, pins, arch, ablation       memory
hosting      how many stream parts each column hosts  parts, columns, rates, split          memory
vector       a vector op's design and lowered tables  the vector op, arch                   memory
structures   a shape's resolved mapping structures    extents, dtype, static B, arch, pins  memory
conv_search  a conv's mapping search result           the conv, pins, arch, budget          memory
sharing      a dispatch's kernels held to shared ones its ops, reloads, pins, ablation        memory
graph        an LLM forward pass's op graph           model, precision, pass                memory
judged       the kernels the plain run holds          graph, ops, cuts, plain run's pins    memory
fusion       a graph's fusion choice                  graph (identity), pins but cuts, arch memory
placement    a graph's ops placed                     graph (identity), groups, dispatch    memory
===========  =======================================  ====================================  ============

A region with a disk codec may also keep a *packed* tier in memory (``Region.packed_size``):
entries the live tier drops, kept as the codec writes them (``Cache`` says why).

A region may keep a second, *costly* tier in memory (``Region.costly_size``): entries its owner marks
costly when storing them (an engine run that stepped long) live there, where cheap entries never
evict them. A study simulates hundreds of small designs between two uses of one that took seconds
(the overlays and dataflow studies run the same large prefill candidates), and one plain LRU forgot
the large ones first.

``clear()`` empties every region's memory (and, with ``disk=True``, this code version's disk
tier). The disk tier is used when the settings in force allow it (``fastsim.settings``:
``cache``, ``cache_dir``; default ``$FASTSIM_CACHE`` (``0``: off) and ``$FASTSIM_CACHE_DIR``,
else ``~/.cache/fastsim``). Entries are written atomically (a temporary file renamed into place),
so concurrent processes can share a directory; an unreadable entry counts as absent.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

ENV_OFF = "FASTSIM_CACHE"
ENV_DIR = "FASTSIM_CACHE_DIR"
STALE_S = 7 * 24 * 3600  # other code versions' directories untouched this long are removed
SUFFIX = ".arrays"  # an entry file: its JSON part's length (8 bytes), the JSON, then the arrays' bytes
_ALIGN = 64  # each array starts at a multiple of this: its view is aligned for its dtype, as numba expects


@dataclass(frozen=True)
class Codec:
    """How a region's values go to disk: ``encode(value) -> (json-able, {name: array})`` and
    ``decode(json-able, arrays, context) -> value`` (``context``: what the caller passes to
    ``get``, e.g. the arch a design is rebuilt on)."""

    encode: Callable[[Any], tuple[Any, dict[str, np.ndarray]]]
    decode: Callable[[Any, dict[str, np.ndarray], Any], Any]


@dataclass(frozen=True)
class Region:
    name: str
    size: int  # entries kept in memory (least recently used dropped first)
    codec: Codec | None = None  # None: memory only
    costly_size: int = 0  # entries of the costly tier (``put(..., costly=True)``), apart from ``size``
    packed_size: int = 0  # entries the live tier drops kept packed by ``codec`` (``Cache`` docstring)


class Cache:
    """Regions of least-recently-used entries in memory, some with a disk tier (module docstring).

    A region with a codec may keep a *packed* tier in memory (``Region.packed_size``): an entry
    the live tier drops is kept as its codec writes it to disk (JSON text and plain arrays), and a
    hit unpacks it (``Codec.decode``, with the caller's context) back into the live tier; entries
    the costly tier drops are not packed. A search answer holds its design's object graph (about
    170 kB of BDs, buffers, locks); packed it is its engine numbers and ranked rows (about 15 kB),
    and the design is built again when it is read. Sweep workers kept 512 live answers, most of
    them never read again."""

    def __init__(self, regions: tuple[Region, ...] = ()):
        self._regions: dict[str, Region] = {}
        self._memory: dict[str, OrderedDict] = {}
        self._costly: dict[str, OrderedDict] = {}
        self._packed: dict[str, OrderedDict] = {}
        self._clears = 0  # ``clear`` calls so far: an entry packed across one is not kept
        self._lock = threading.Lock()
        for r in regions:
            self.add_region(r)

    def add_region(self, region: Region) -> None:
        """Declare a region (a layer that owns a kind of answer declares it; again is a no-op
        when it is the same declaration)."""
        with self._lock:
            known = self._regions.get(region.name)
            if known is not None and known != region:
                raise ValueError(f"cache region {region.name!r} declared twice differently")
            if region.packed_size and region.codec is None:
                raise ValueError(f"cache region {region.name!r}: a packed tier needs a codec")
            self._regions[region.name] = region
            self._memory.setdefault(region.name, OrderedDict())
            self._costly.setdefault(region.name, OrderedDict())
            self._packed.setdefault(region.name, OrderedDict())

    def get(self, region: str, key, context=None):
        """The entry for ``key`` or None: memory first (live, costly, then packed), then the
        region's disk tier."""
        with self._lock:
            for memory in (self._memory[region], self._costly[region]):
                value = memory.get(key)
                if value is not None:
                    memory.move_to_end(key)
                    return value
            packed = self._packed[region].get(key)  # left there until the value is live again
        codec = self._regions[region].codec
        if codec is None:
            return None
        value = _unpack(packed, codec, context) if packed is not None else None
        if value is None and packed is not None:
            with self._lock:
                self._packed[region].pop(key, None)  # unreadable: absent
        if value is None:
            value = _load(region, key, codec, context)
        if value is not None:
            self._remember(region, key, value)
        return value

    def put(self, region: str, key, value, disk: bool = True, costly: bool = False) -> None:
        """Keep ``value`` in memory (``costly``: in the region's costly tier, where it has one) and,
        where the region has a disk tier, on disk."""
        self._remember(region, key, value, costly)
        codec = self._regions[region].codec
        if disk and codec is not None:
            _save(region, key, value, codec)

    def _remember(self, region: str, key, value, costly: bool = False) -> None:
        declared = self._regions[region]
        live = not (costly and declared.costly_size)  # the costly tier's dropped entries are not packed
        memory, size = self._memory[region], declared.size
        if not live:
            memory, size = self._costly[region], declared.costly_size
        dropped = []
        with self._lock:
            memory[key] = value
            memory.move_to_end(key)
            self._packed[region].pop(key, None)  # live again: one tier holds it
            while len(memory) > size:
                dropped.append(memory.popitem(last=False))
            clears = self._clears
        if declared.packed_size and live:
            self._pack(declared, dropped, clears)

    def _pack(self, region: Region, dropped: list, clears: int) -> None:
        """Keep the entries the live tier dropped packed. An entry the codec cannot write (a
        search answer without its engine run) is let go: a cache never fails the computation.
        One made live again meanwhile, or dropped before a ``clear``, is not packed."""
        for key, value in dropped:
            try:
                plain, arrays = region.codec.encode(value)
                packed = (json.dumps(plain), {name: np.array(a) for name, a in arrays.items()})
            except Exception:
                continue
            with self._lock:
                if self._clears != clears or key in self._memory[region.name]:
                    continue
                tier = self._packed[region.name]
                tier[key] = packed
                tier.move_to_end(key)
                while len(tier) > region.packed_size:
                    tier.popitem(last=False)

    def size(self, region: str) -> int:
        """Entries of ``region`` in memory (packed ones too)."""
        with self._lock:
            return len(self._memory[region]) + len(self._costly[region]) + len(self._packed[region])

    def clear(self, *regions: str, disk: bool = False) -> None:
        """Forget the entries of ``regions`` (default: all) in memory (they are exact: this only
        frees memory or makes a benchmark start cold) and, with ``disk``, their disk tiers."""
        names = regions or tuple(self._regions)
        unknown = sorted(set(names) - set(self._regions))
        if unknown:
            raise ValueError(f"cache regions {unknown}: not regions of the cache (one of {sorted(self._regions)})")
        with self._lock:
            self._clears += 1
            for name in names:
                self._memory[name].clear()
                self._costly[name].clear()
                self._packed[name].clear()
        root = directory()
        if disk and root is not None:
            for name in names:
                shutil.rmtree(root / name, ignore_errors=True)


CACHE = Cache((Region("op", 2048),))  # fastsim.result_cache declares "engine"


def clear(*regions: str, disk: bool = False) -> None:
    """Forget what fastsim cached: every region, or those named (``Cache.clear``)."""
    CACHE.clear(*regions, disk=disk)


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Hash of every source file of fastsim and its kernels."""
    import fastsim.kernels

    h = hashlib.sha256()
    for root in (Path(__file__).parent, Path(fastsim.kernels.__file__).parent):
        for path in sorted(root.rglob("*.py")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def directory() -> Path | None:
    """This code version's disk directory, or None when the disk tier is off."""
    from .settings import current

    chosen = current()
    on = chosen.cache if chosen.cache is not None else os.environ.get(ENV_OFF, "1") != "0"
    if not on:
        return None
    base = Path(chosen.cache_dir or os.environ.get(ENV_DIR) or Path.home() / ".cache" / "fastsim")
    return base / f"v{code_version()}"


def _path(region: str, key) -> tuple[Path, str] | None:
    root = directory()
    if root is None:
        return None
    text = repr(key)
    return root / region / (hashlib.sha256(text.encode()).hexdigest()[:32] + SUFFIX), text


def _unpack(packed: tuple[str, dict], codec: Codec, context):
    """A packed entry (``Cache._pack``) decoded, or None where it cannot be (as an unreadable disk
    entry: absent). The arrays are copied: a caller may write to what it is given."""
    try:
        return codec.decode(json.loads(packed[0]), {name: a.copy() for name, a in packed[1].items()}, context)
    except Exception:
        return None


def _load(region: str, key, codec: Codec, context):
    where = _path(region, key)
    if where is None or not where[0].exists():
        return None
    path, text = where
    try:
        stored, arrays = _read_entry(path)
        if stored["key"] != text:
            return None
        return codec.decode(stored["value"], arrays, context)
    except Exception:  # truncated, from another library version, unreadable: absent
        return None


def _aligned(n: int) -> int:
    """``n`` bytes rounded up to the next array start."""
    return -(-n // _ALIGN) * _ALIGN


def _write_entry(path: Path, plain: dict, arrays: dict[str, np.ndarray]) -> None:
    """One file: JSON (the key, the value's plain part, each array's dtype, shape and place) and
    the arrays' raw bytes. A search entry's small arrays take a quarter of ``np.savez``'s time to
    write and an eighth of ``np.load``'s to read. No pickle: arrays of objects or records are
    refused (the entry is then not stored)."""
    places, blobs, offset = [], [], 0
    for name, a in arrays.items():
        a = np.asarray(a)  # tobytes() writes C order whatever the layout (ascontiguousarray makes 0-d 1-d)
        if a.dtype.hasobject or a.dtype.names is not None:
            raise TypeError(f"array {name!r}: only plain numbers and strings are stored")
        places.append([name, a.dtype.str, list(a.shape), offset])
        blobs.append(a.tobytes() + bytes(_aligned(a.nbytes) - a.nbytes))
        offset += len(blobs[-1])
    head = json.dumps({**plain, "arrays": places}).encode()
    with open(path, "wb") as f:
        f.write(len(head).to_bytes(8, "little") + head + bytes(_aligned(8 + len(head)) - 8 - len(head)))
        f.writelines(blobs)


def _read_entry(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """``_write_entry``'s JSON and arrays (writable, aligned views of one buffer read at once)."""
    data = np.fromfile(path, np.uint8)
    size = int.from_bytes(data[:8].tobytes(), "little")
    head = json.loads(data[8:8 + size].tobytes())
    start = _aligned(8 + size)
    arrays = {}
    for name, dtype, shape, offset in head.pop("arrays"):
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        at = start + offset
        arrays[name] = data[at:at + count * dtype.itemsize].view(dtype).reshape(shape)
    return head, arrays


def _save(region: str, key, value, codec: Codec) -> None:
    """Store ``value``; a disk tier that cannot be written (read-only home, full disk) is skipped."""
    where = _path(region, key)
    if where is None:
        return
    path, text = where
    try:
        plain, arrays = codec.encode(value)
        fresh = not path.parent.parent.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            _remove_stale_versions(path.parent.parent)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        _write_entry(tmp, {"key": text, "value": plain}, arrays)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError, AttributeError):  # cannot be stored: computed next time
        return


CLAIM_STALE_S = 3600  # a claim older than this is ignored (its process may be on another host, or its pid reused)


def claim(region: str, key) -> bool | None:
    """Try to become the one process that computes ``key`` of ``region`` now (a claim file beside
    where its entry will be stored): True: claimed (compute, store, then ``release``); False: a
    live process holds it (``wait_for`` its entry); None: no disk tier, so nothing is shared.
    Processes sharing a cache directory (a run's workers, a sweep's) thus compute a large answer
    once instead of each computing it at the same time."""
    where = _path(region, key)
    if where is None:
        return None
    path = where[0].with_suffix(".claim")
    for _ in range(2):  # a second try after removing a dead holder's claim
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if _holder_alive(path):
                return False
            path.unlink(missing_ok=True)
            continue
        except OSError:  # cannot be written (read-only directory): compute alone
            return None
        with os.fdopen(fd, "w") as f:
            f.write(f"{socket.gethostname()} {os.getpid()}")
        return True
    return None


def release(region: str, key) -> None:
    """Give up a claim (after storing the entry, or after failing to)."""
    where = _path(region, key)
    if where is not None:
        where[0].with_suffix(".claim").unlink(missing_ok=True)


def wait_for(region: str, key, context=None, poll_s: float = 0.02):
    """The entry another process claimed, once it is stored; None when its holder released the
    claim without storing one (an entry not worth storing, a failure) or died: compute it then."""
    where = _path(region, key)
    if where is None:
        return CACHE.get(region, key, context)
    path = where[0].with_suffix(".claim")
    while True:
        value = CACHE.get(region, key, context)
        if value is not None:
            return value
        if not (path.exists() and _holder_alive(path)):
            return CACHE.get(region, key, context)
        time.sleep(poll_s)


def _holder_alive(path: Path) -> bool:
    """Whether the process named in a claim file may still be computing: the claim is younger than
    ``CLAIM_STALE_S`` and, on this host, its pid exists (another host's cannot be checked)."""
    try:
        host, pid = path.read_text().split()
        if time.time() - path.stat().st_mtime >= CLAIM_STALE_S:
            return False
        if host != socket.gethostname():
            return True
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError):  # vanished, or half written by its holder this instant
        return path.exists()
    return True


def _remove_stale_versions(current: Path) -> None:
    now = time.time()
    for other in current.parent.glob("v*"):
        if other != current and other.is_dir() and now - other.stat().st_mtime > STALE_S:
            shutil.rmtree(other, ignore_errors=True)
