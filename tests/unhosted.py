"""A tournament file's twin whose merchants all play in their matches' process, for the
reference runs of the tests of crashes and clusters (tests/tournaments): a merchant's results
do not depend on where it plays, and the twin's run starts no actor for it (a process, and a
second or two of CPU, each)."""

from __future__ import annotations

import re
from pathlib import Path


def unhosted(config: Path) -> Path:
    """A copy of the tournament file `config` beside it, each contestant with params given
    `isolate: false`."""
    copy = config.with_name(f"unhosted_{config.name}")
    copy.write_text(re.sub(r"(params: \{[^{}]*\})\}", r"\1, isolate: false}", config.read_text()))
    return copy
