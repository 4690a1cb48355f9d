"""Seeds derived from the one configured seed, one per random stream.

Two random choices that used the same seed would draw the same rows (the baseline subsample and
the first calibration draw were once identical); each stream gets its own seed instead, derived
from (seed, stream name) by numpy's SeedSequence, so streams are independent and reproducible.
"""

from __future__ import annotations

import zlib

import numpy as np

#: Every named stream; provenance records the seed each one got.
STREAMS = ("baseline_subsample", "calibration")


def derive_seed(seed: int, stream: str) -> int:
    """A 32-bit seed for `stream`, derived from `seed` (same inputs, same seed)."""
    key = zlib.crc32(stream.encode("utf-8"))
    return int(np.random.SeedSequence([int(seed), key]).generate_state(1)[0])


def derived_seeds(seed: int) -> dict[str, int]:
    """The seed of every named stream, for provenance."""
    return {name: derive_seed(seed, name) for name in STREAMS}
