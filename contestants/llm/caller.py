"""A language-model merchant's calls to its model, in either mode: each request sent (to the
rehearsal in its place, in a rehearsal), asked again shorter where the server refuses it as too
long, and recorded, as a call (its usage, cost and latency) and as steps of the transcript."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from common.model_calls import CallPurpose, ModelCall, TranscriptStep
from contestants.calls.types import Completion, CompletionRequest, Message, Tool
from contestants.llm.errors import ProviderError
from contestants.llm.params import LLMParams
from contestants.llm.providers import Provider
from contestants.llm.rehearsal import Rehearsal
from contestants.llm.too_long import TooLong

Asking = Callable[[], tuple[CompletionRequest, str]]
"""Makes a call's request, fitted to the window as it is now known, and gives the versions of
the templates its prompt is made of."""


class Caller:
    """Sends a merchant's requests and keeps what they cost and said. `seed` is the match's
    (`reset`), `deadline` the turn's (Contestant.begin_turn)."""

    def __init__(self, params: LLMParams, provider: Provider, rehearsal: Rehearsal | None):
        self.params, self.provider = params, provider
        # what answers its requests, and stops the run (or the rehearsal) where they cannot be
        # made: its provider, or the rehearsal in its place
        self.answering: Provider | Rehearsal = provider if rehearsal is None else rehearsal
        self.deadline: float | None = None
        self.seed = 0
        self.calls: list[ModelCall] = []
        self.transcript: list[TranscriptStep] = []
        self._heard: tuple[Message, ...] = ()  # the conversation as the last call left it
        self._steps: Counter[int] = Counter()  # the calls kept of each day

    def reset(self, seed: int) -> None:
        """A new match: its seed, and no call yet."""
        self.seed = seed
        self.calls, self.transcript, self._heard = [], [], ()
        self._steps = Counter()

    def request(
        self, messages: tuple[Message, ...], schema: dict | None, name: str, tools: tuple[Tool, ...] = ()
    ) -> CompletionRequest:
        """A request of `messages` under the match's seed (see `completion_request`)."""
        return completion_request(self.params, messages, schema, name, self.seed, tools)

    def window(self) -> int | None:
        """The tokens a call may hold: `context_tokens` where given, the model's context where
        the provider knows it or a refusal named it, the smallest of those; None: not known."""
        return self.provider.window(self.params.context_tokens)

    def fits(self, request: CompletionRequest, window: int | None) -> bool:
        """Whether the request and its longest answer fit the window (counted as the model
        counts at most: see Provider.most_prompt_tokens)."""
        return window is None or self.provider.most_prompt_tokens(request) + self.params.max_tokens <= window

    def cannot_fit(self, request: CompletionRequest, window: int, what: str) -> Exception:
        """What to raise where even the smallest `request` cannot fit the window with the answer's
        max_tokens: it stops the run (Provider.stop), saying what did not fit."""
        return self.answering.stop(
            request,
            f"{what} come to {self.provider.most_prompt_tokens(request):,} tokens as its model counts "
            f"them, which with max_tokens {self.params.max_tokens:,} do not fit its window of "
            f"{window:,} tokens: give it a larger window or a smaller max_tokens",
        )

    def call(
        self, purpose: CallPurpose, day: int, asking: Asking, heard: bool = True
    ) -> tuple[Completion, CompletionRequest]:
        """The provider's answer to the request `asking` makes (with the versions of the
        templates its prompt is made of), recorded as a call and in the transcript, and that
        request; `heard`: the request continues the conversation (a compaction's stands aside
        from it). A request the server refuses as too long is not sent again: the refusal is
        kept in the transcript, the provider counts tighter from what the server said
        (Provider.learn), so that the refused request no longer fits as counted, and `asking`
        makes the request again, fitted to the window (compacted, trimmed), or stops the run
        where even the smallest would not fit."""
        request, templates = asking()
        while True:
            try:
                completion = self.answering.complete(request, self.deadline)
                break
            except ProviderError as exc:
                if exc.too_long is None:
                    raise
                self._refused(purpose, day, request, exc.too_long, exc.detail)
            again, templates = asking()
            if again == request:  # never sent again: it would be refused again, and again
                raise self.answering.stop(
                    request,
                    f"its {purpose} request, refused by the server as too long, was made again unchanged "
                    "(arena's count of it did not tighten): a fault of arena's",
                )
            request = again
        self.calls.append(self._call_of(purpose, day, completion, templates))
        self._record(purpose, day, request.messages, completion.turn(), heard)
        return completion, request

    def heard_results(self, results: tuple[Message, ...]) -> None:
        """The results of the last call's tool calls, kept with it."""
        self.transcript[-1] = self.transcript[-1].model_copy(update={"results": results})
        self._heard = (*self._heard, *results)

    def _call_of(self, purpose: CallPurpose, day: int, completion: Completion, templates: str) -> ModelCall:
        """The call as recorded: its purpose, model, usage, cost and the templates' versions."""
        return ModelCall(
            day=day,
            purpose=purpose,
            model=self.params.model,
            **completion.usage.model_dump(),
            **completion.model_dump(
                include={
                    "latency",
                    "attempts",
                    "cost",
                    "cached",
                    "request_hash",
                    "served_model",
                    "fingerprint",
                    "temperature",
                    "top_p",
                    "seed",
                }
            ),
            prompt_version=templates,
        )

    def _refused(
        self, purpose: CallPurpose, day: int, request: CompletionRequest, said: TooLong, detail: str
    ) -> None:
        """Learn from the server's refusal of `request` as too long (`said`, in its words
        `detail`; Provider.learn), and keep it in the transcript: the server's words, and the
        request as now counted."""
        window = self.provider.learn(said, request, self.window())
        self._steps[day] += 1
        told = (
            f"{detail} (counted again, the request is {self.provider.most_prompt_tokens(request):,} "
            f"tokens and max_tokens {self.params.max_tokens:,} for a window of {window:,}: it is asked "
            "again, shorter)"
        )
        sent = _new_turns(self._heard, request.messages)
        self.transcript.append(
            TranscriptStep(
                day=day, step=self._steps[day], purpose=purpose, sent=sent, answer=None, refused=told
            )
        )

    def _record(
        self, purpose: CallPurpose, day: int, messages: tuple[Message, ...], answer: Message, heard: bool
    ) -> None:
        """Keep what the call said and heard (common.model_calls.TranscriptStep)."""
        self._steps[day] += 1
        step = self._steps[day]
        kept = answer.model_copy(update={"carried": ()})
        sent = _new_turns(self._heard, messages)
        self.transcript.append(TranscriptStep(day=day, step=step, purpose=purpose, sent=sent, answer=kept))
        if heard:
            self._heard = (*messages, answer)


def completion_request(
    params: LLMParams,
    messages: tuple[Message, ...],
    schema: dict | None,
    name: str,
    seed: int | None,
    tools: tuple[Tool, ...] = (),
) -> CompletionRequest:
    """A request of `messages` for an answer to `schema` or, without one, with `tools`."""
    return CompletionRequest(
        messages=messages,
        json_schema=schema,
        tools=tools,
        schema_name=name,
        temperature=params.temperature,
        top_p=params.top_p,
        seed=seed,
        max_tokens=params.max_tokens,
    )


def _new_turns(heard: tuple[Message, ...], messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The turns of a request that the conversation so far (`heard`: the last request, its
    answer and its tools' results) did not hold: those after the last of `heard` where the
    request repeats it (older turns may have been left out; a turn repeats another if it says
    the same: memory keeps an answer without its reasoning), or else all but a system prompt
    that is the same as before."""

    def said(m: Message) -> tuple[Any, ...]:
        return m.role, m.content, m.tool_calls, m.tool_call_id

    if heard:
        last = said(heard[-1])
        for k in range(len(messages) - 1, -1, -1):
            if said(messages[k]) == last:
                return messages[k + 1 :]
        if messages[0] == heard[0]:
            return messages[1:]
    return messages
