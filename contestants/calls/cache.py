"""On-disk response cache: a re-run replays identical answers without calling the model.

The key hashes only what changes the output: the provider's identity (provider, model,
base_url, and for some providers how the answer is requested or which file is loaded) and
the request (messages, schema and its name, temperature, seed, max_tokens). Timeouts,
retries and keys do not change the answer and are left out. One JSON file per entry, written
atomically, so several processes can share a directory; a call about to be made holds the
entry's lock file (`lock_path`, see contestants.calls.coordinator) so that no two pay for
one answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contestants.calls.types import Completion, CompletionRequest


def request_key(identity: Mapping[str, Any], request: CompletionRequest) -> str:
    """sha256 (hex) of the canonical JSON of the provider identity and the request."""
    payload = {"identity": dict(identity), "request": request.model_dump(mode="json")}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseCache:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def lock_path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.lock"

    def get(self, key: str) -> Completion | None:
        """The stored completion, or None (absent, or unreadable: treated as a miss)."""
        try:
            return Completion.model_validate_json(self._path(key).read_bytes())
        except (OSError, ValidationError):
            return None

    def put(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(completion.model_dump_json())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
