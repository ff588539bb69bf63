"""A request refused as longer than the model's window, recognised in each server's words, with
the window and the count of the prompt the words give.

The wordings, from the servers' own sources and from what their users quote:

- OpenAI (code `context_length_exceeded`; DeepSeek and Groq send the same): "This model's
  maximum context length is 8000 tokens. However, your messages resulted in 8213 tokens." or
  "... you requested 8500 tokens (8100 in the messages, 400 in the completion)."; its Responses
  API gives no numbers: "Your input exceeds the context window of this model."
- Anthropic: "prompt is too long: 208310 tokens > 200000 maximum", and "input length and
  `max_tokens` exceed context limit: 189136 + 20000 > 204648, ...".
- vLLM, over its versions: "... maximum context length is 4096 tokens. However, your request has
  5000 input tokens.", "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's
  maximum context length is 4096 tokens and your request has 3500 input tokens (...)", "You
  passed 3097 input tokens and requested 1000 output tokens. However, the model's context length
  is only 4096 tokens, ...", "The decoder prompt (length 5000) is longer than the maximum model
  length of 4096.", and today's "... maximum context length is 32768 tokens. However, you
  requested 1000 output tokens and your prompt contains at least 31769 input tokens, ...". vLLM
  stops counting a prompt one token past what fits, so its count is then a lower bound.
- llama.cpp's server (type `exceed_context_size_error`, with `n_prompt_tokens` and `n_ctx` in
  the error): "request (9412 tokens) exceeds the available context size (8192 tokens), try
  increasing it"; older builds "the request exceeds the available context size, try
  increasing it", and "input (9412 tokens) is larger than the max context size (8192 tokens)".
- Other OpenAI-compatible services: OpenRouter's "This endpoint's maximum context length is
  32768 tokens. However, you requested about 42832 tokens (42832 of text input).", Mistral's
  "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum
  context length", Gemini's "The input token count (1048577) exceeds the maximum number of
  tokens allowed (1048576).", xAI's "This model's maximum prompt length is 131072 but the
  request contains 150000 tokens.", Bedrock's "Input is too long for requested model.", and
  Text Generation Inference's (Together's too): "`inputs` tokens + `max_new_tokens` must be <=
  4096. Given: 4000 `inputs` tokens and 1000 `max_new_tokens`", "`inputs` must have less than
  4096 tokens. Given: 5000".

Any other 400 (or 413, 422) whose message says a context, prompt or input was too long, or a
maximum length exceeded, counts too, without numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
STATUSES = frozenset({400, 413, 422})
SAYS = re.compile(
    r"context (?:length|window|size|limit)|maximum (?:model|prompt) length|prompt is too long"
    r"|input is too long|maximum number of tokens allowed|too large for model with"
    r"|`inputs` tokens \+ `max_new_tokens` must be|`inputs` must have less than"
    r"|exceed(?:s|ed)? (?:the )?max(?:imum)? (?:\w+ )?length|max(?:imum)? (?:\w+ )?length (?:is )?exceeded",
    re.IGNORECASE,
)
WINDOW = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"maximum context length(?: is|:) (\d+)",
        r"context length is only (\d+)",
        r"context size \((\d+) tokens\)",
        r"maximum (?:model|prompt) length (?:of|is) (\d+)",
        r"tokens > (\d+) maximum",
        r"context limit: \d+ \+ \d+ > (\d+)",
        r"maximum number of tokens allowed \((\d+)\)",
        r"with (\d+) maximum context length",
        r"`max_new_tokens` must be <= (\d+)",
        r"must have less than (\d+) tokens",
    )
]
PROMPT = [  # each holds the count as `prompt`, and `least` where the words can say "at least"
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"(?P<prompt>\d+) in the messages",
        r"messages resulted in (?P<prompt>\d+) tokens",
        r"request has (?P<prompt>\d+) input tokens",
        r"prompt contains (?P<least>at least )?(?P<prompt>\d+) input tokens",
        r"you passed (?P<prompt>\d+) input tokens",
        r"prompt is too long: (?P<prompt>\d+)",
        r"context limit: (?P<prompt>\d+) \+",
        r"(?:request|input) \((?P<prompt>\d+) tokens\)",
        r"prompt \(length (?P<prompt>\d+)\)",
        r"(?P<prompt>\d+) of text input",
        r"input token count \((?P<prompt>\d+)\)",
        r"(?:prompt|request) contains (?P<prompt>\d+) tokens",
        r"Given: (?P<prompt>\d+)",
    )
]


@dataclass(frozen=True, slots=True)
class TooLong:
    """A refusal of a request as longer than the model's window, in what the server said: its
    window and its count of the request's prompt, where its words give them; `at_least`: that
    count is a lower bound (the server stopped counting there)."""

    window: int | None = None
    prompt: int | None = None
    at_least: bool = False


def too_long(status: int | None, message: str, code: str | None, error: Any = None) -> TooLong | None:
    """What a refusal says of a request too long for the model's window (`error`: the error
    object of the body, where llama.cpp's server puts its counts), or None if it says no such
    thing."""
    if code not in CODES and not (status in STATUSES and SAYS.search(message)):
        return None
    fields = error if isinstance(error, dict) else {}
    window = _number(fields.get("n_ctx")) or _first(WINDOW, message)
    prompt = _number(fields.get("n_prompt_tokens"))
    if prompt is not None:
        return TooLong(window, prompt)
    found = _search(PROMPT, message)
    if found is None:
        return TooLong(window)
    return TooLong(window, int(found["prompt"]), bool(found.groupdict().get("least")))


def _search(patterns: list[re.Pattern[str]], text: str) -> re.Match[str] | None:
    """The match of the first of `patterns` found in `text`."""
    return next((m for m in (p.search(text) for p in patterns) if m is not None), None)


def _first(patterns: list[re.Pattern[str]], text: str) -> int | None:
    found = _search(patterns, text)
    return int(found.group(1)) if found is not None else None


def _number(value: Any) -> int | None:
    """A count the server gave as a field: a positive whole number, or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
