"""Python's garbage collector kept out of the way of matches.

A match allocates many small objects that live to its end (day records, operations,
results), and every full collection rescans all of them and the whole heap of imported
modules: about a fifth of an instant match's time.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Iterator


@functools.cache
def freeze_startup_heap() -> None:
    """Once per process: exempt every object alive now (the imported modules of numpy,
    pydantic, Ray, ...) from garbage collection with gc.freeze().

    Frozen objects are still freed when no longer referenced; only cycles among them are
    never collected. There is no gc.collect() first: it would cost a tenth of a second, more
    than a short match, to reclaim a few cycles left over from importing."""
    gc.freeze()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside: matches played side by side, their scoring, pickling and
    unpickling would otherwise trigger collections that rescan everything they made. The few
    cycles made meanwhile are collected after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
