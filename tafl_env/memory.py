"""How much memory a job may take: the guard that refuses a batch (or a search tree) too big for
this machine before it is allocated, with one line naming the size, instead of a ``MemoryError``
(or the kernel's out-of-memory killer) halfway through.

    >>> fits(1024, "a small batch")
    >>> try:
    ...     fits(1 << 62, "a batch of 2**62 bytes")
    ... except InvalidOptionError as exc:
    ...     print(str(exc).split(";")[0])
    a batch of 2**62 bytes needs about 4294967296.0 GiB
"""

from __future__ import annotations

import os

from .errors import InvalidOptionError

__all__ = ["available_bytes", "fits"]

GIB = 2**30


def available_bytes() -> int | None:
    """The memory this process may still allocate: Linux's ``MemAvailable`` (free memory plus the
    caches it can drop), else physical memory; ``None`` where neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def fits(nbytes: int, what: str) -> None:
    """Raise :class:`InvalidOptionError` naming ``what`` if ``nbytes`` exceed the memory available
    now (nothing is checked where that is not known)."""
    free = available_bytes()
    if free is not None and nbytes > free:
        raise InvalidOptionError(f"{what} needs about {nbytes / GIB:.1f} GiB; this machine has "
                                 f"{free / GIB:.1f} GiB available")
