"""Chooses, at import time, between a hot path's pure-Python reference and its compiled twin.

A few loops (v2 record decode, v0/v1 up-conversion, varints, the message and metadata record
frame decoders, the partition replay) have a Cython twin built by ``pip install``. Both implement
the same functions and pass the same tests; the pure one is the reference and the fallback when the
extension is absent (a wheel built without a compiler, a Spark executor that got only the Python
sources). ``KRAFTWERK_PURE=1`` forces the pure path, so CI runs the suite both ways;
:func:`implementations` says which one each module got.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

log = logging.getLogger(__name__)

#: set to anything but "" or "0" to use the pure-Python paths even when the extensions are built
PURE_ENV = "KRAFTWERK_PURE"

#: every compiled twin, by the pure module that uses it
TWINS = {
    "kraftwerk.image.delta": "kraftwerk.image._cdelta",
    "kraftwerk.protocol.codec": "kraftwerk.protocol._ccodec",
    "kraftwerk.protocol.frame": "kraftwerk.protocol._ccodec",
    "kraftwerk.records.batch": "kraftwerk.records._cbatch",
}


def pure_forced() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def compiled(module: str) -> ModuleType | None:
    """The compiled twin ``module``, or None when the pure path is forced or the twin is not built."""
    if pure_forced():
        return None
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        log.debug("%s is not built (%s); using the pure-Python path", module, exc)
        return None


def implementations() -> dict[str, str]:
    """``"compiled"`` or ``"pure"`` for each module that has a twin, as this process loaded them."""
    out: dict[str, str] = {}
    for pure_name in TWINS:
        module = importlib.import_module(pure_name)
        out[pure_name] = "compiled" if getattr(module, "NATIVE", None) is not None else "pure"
    return out
