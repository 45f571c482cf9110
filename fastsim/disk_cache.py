"""Mapping-search results kept on disk, so that the next process does not search again.

A search simulates its best candidates and takes most of an LLM run's time; a second
``fastsim run llm``, each sweep worker and each study process would otherwise redo every search of
the shapes it meets. Results are stored per code version: the directory name carries a hash of
every fastsim and kernel source file, so a changed simulator never reads an older simulator's
answers. Entries are pickles written atomically (a temporary file renamed into place), so
concurrent workers can share a directory; an unreadable entry counts as absent.

``FASTSIM_CACHE=0`` turns it off; ``FASTSIM_CACHE_DIR`` moves it (default ``~/.cache/fastsim``).
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import shutil
import time
from pathlib import Path

ENV_OFF = "FASTSIM_CACHE"
ENV_DIR = "FASTSIM_CACHE_DIR"
STALE_S = 7 * 24 * 3600  # other code versions' directories untouched this long are removed


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Hash of every source file of fastsim and its kernels."""
    import fastsim
    import fastsim.kernels

    h = hashlib.sha256()
    for root in (Path(fastsim.__file__).parent, Path(fastsim.kernels.__file__).parent):
        for path in sorted(root.rglob("*.py")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def directory() -> Path | None:
    """This code version's cache directory, or None when caching is off."""
    if os.environ.get(ENV_OFF, "1") == "0":
        return None
    base = Path(os.environ.get(ENV_DIR) or Path.home() / ".cache" / "fastsim")
    return base / f"v{code_version()}"


def _path(kind: str, key) -> Path | None:
    root = directory()
    if root is None:
        return None
    return root / kind / (hashlib.sha256(repr(key).encode()).hexdigest()[:32] + ".pkl")


def load(kind: str, key):
    """The stored value for ``key`` (its repr identifies it), or None."""
    path = _path(kind, key)
    if path is None or not path.exists():
        return None
    try:
        with open(path, "rb") as f:
            stored_key, value = pickle.load(f)
    except Exception:  # truncated, from an incompatible library version, unreadable: absent
        return None
    return value if stored_key == repr(key) else None


def save(kind: str, key, value) -> None:
    """Store ``value``; a cache that cannot be written (read-only home, full disk) is skipped."""
    path = _path(kind, key)
    if path is None:
        return
    try:
        fresh = not path.parent.parent.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            _remove_stale_versions(path.parent.parent)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            pickle.dump((repr(key), value), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return


def _remove_stale_versions(current: Path) -> None:
    now = time.time()
    for other in current.parent.glob("v*"):
        if other != current and other.is_dir() and now - other.stat().st_mtime > STALE_S:
            shutil.rmtree(other, ignore_errors=True)
