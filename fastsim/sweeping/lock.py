"""One writer per sweep store: a lock file beside the store names its host and pid.

Two sweeps started on one store would both create it or both compute every pending chunk; the
second one is refused instead, with who holds the store. A lock left by a writer that died is
taken over: on the same host when its pid no longer runs, on another host when it has not been
refreshed for ``stale_after_s`` (the writer refreshes it after every task). Taking over renames
the stale file first, an atomic step only one contender can win.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path

from ..errors import ConfigError

STALE_AFTER_S = 3600.0


def lock_path(store: str | Path) -> Path:
    return Path(str(store).rstrip("/") + ".lock")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class StoreLock:
    """``with StoreLock(out): ...`` holds the store for this process (see the module docstring)."""

    def __init__(self, store: str | Path, stale_after_s: float = STALE_AFTER_S):
        self.path = lock_path(store)
        self.stale_after_s = stale_after_s
        self.owner = {"host": socket.gethostname(), "pid": os.getpid(), "token": uuid.uuid4().hex,
                      "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self.took_over: dict | None = None

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            json.dump(self.owner, f)
        return True

    def _holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}  # unreadable: a writer died while writing it

    def _stale(self, holder: dict) -> bool:
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return True
        if not holder:
            return age > 5.0  # a half-written lock older than a few seconds
        if holder.get("host") == self.owner["host"] and isinstance(holder.get("pid"), int):
            return not _alive(holder["pid"])
        return age > self.stale_after_s

    def acquire(self) -> "StoreLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            if self._create():
                return self
            holder = self._holder()
            if holder is None:
                continue  # released meanwhile: try again
            if not self._stale(holder):
                raise ConfigError([
                    f"{self.path.with_suffix('')} is being written by pid {holder.get('pid')} on "
                    f"{holder.get('host')} since {holder.get('since')}; wait for it to finish, or delete "
                    f"{self.path} if that process is gone"], "sweep store")
            grave = self.path.with_name(f"{self.path.name}.stale-{self.owner['token']}")
            try:
                os.rename(self.path, grave)  # only one contender wins this
            except FileNotFoundError:
                continue
            grave.unlink(missing_ok=True)
            self.took_over = holder
        raise ConfigError([f"could not lock {self.path}: another writer keeps taking it"], "sweep store")

    def refresh(self) -> None:
        """Heartbeat: a lock refreshed recently is never taken over from another host."""
        try:
            os.utime(self.path)
        except FileNotFoundError:
            pass

    def release(self) -> None:
        if (self._holder() or {}).get("token") == self.owner["token"]:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> "StoreLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
