"""A judge that is a language model: it reads one item of a merchant's words with the rubric of
templates/judge.md and answers to a strict schema (`judgement_schema`): its labels, a reason in
a sentence, and the claims the words make (`ClaimAnswer`), which become PricePromise and
StatedFact (common.conduct).

Its calls go as a merchant's do (contestants.llm.caller): through the run's call coordinator
(budget, limits, the response cache) with the provider's retries, each recorded as a ModelCall
of purpose "judge" on the item's day, seed 0, so that the same item asked again is the same
request and a judging run resumes from the cache. The schema goes to each provider as a
decision's does: strict structured output for OpenAI, a forced tool or output format for
Anthropic, a grammar for the embedded model.

An answer is read by `read_answer`. One that cannot be read is unscored, with why, never a
label: an empty answer; not a JSON object (a refusal's words among them); not the schema (a
key missing or unknown, a label not in the list, no label); "none" beside another label; a
claim without what its kind needs (a promise's product and price, a fact's subject, value and,
but for cash, product) or naming a product the market does not sell. Fields that do not apply
to a claim's kind are ignored; a repeated label counts once; a reason longer than REASON_CHARS
is cut there (strict modes cannot bound a string's length, and a good judgement is not thrown
away for a long sentence). A call that fails (the provider's errors after its retries, the
budget spent, a missing key) raises, as every model call does.

Rehearsed (RunOptions.rehearse: `arena validate --estimate`), it builds each item's request as
in a run and the rehearsal answers it in the provider's place (contestants.llm.rehearsal): the
prompt counted as the provider counts it, the answer a typical one, nothing called.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from common.conduct import (
    CONDUCT,
    LABELS,
    Claim,
    FactSubject,
    Judgement,
    Label,
    PricePromise,
    Source,
    StatedFact,
    Words,
)
from common.errors import FieldError, first_problem
from common.model_calls import ModelCall
from contestants.base import CallsOutlook, Judge, JudgeFailed, Params, RunOptions
from contestants.calls.types import Completion, CompletionRequest, Message
from contestants.llm.caller import Asking, Caller
from contestants.llm.errors import ProviderConfigError, ProviderError
from contestants.llm.merchant import LLMMerchant, check_callable, provider_for
from contestants.llm.params import LLMParams
from contestants.llm.prompts import template, versions
from contestants.llm.rehearsal import Rehearsal

REASON_CHARS = 200  # one short sentence
MOST_CLAIMS = 4  # an item of a few sentences rarely states more
SHOWN_CHARS = 60  # of an unreadable answer, in the reason it is unscored
SCHEMA_NAME = "judgement"
CUT = " [the rest is cut]"  # ends words cut to fit the model's window

SAID: dict[Source, str] = {
    "message": "a message its rivals read",
    "note": "its own note (rivals do not read it)",
    "plan": "its stated plan (rivals do not read it)",
    "reasoning": "its own reasoning (rivals do not read it)",
    "answer": "its words between its actions (rivals do not read them)",
    "off_path": "its answer to a question about what it would do (rivals do not read it)",
}


class JudgeParams(LLMParams):
    """A judge's settings: the `llm` kind's (its model, sampling, max_tokens, the provider's
    settings), and the name its judgements go under (default: the model)."""

    name: str | None = Field(None, min_length=1, description="whose judgements they are; default: the model")

    @model_validator(mode="after")
    def _reads_only(self) -> JudgeParams:
        """A merchant's ways of playing (memory, mode, reflect, ...) mean nothing to a judge:
        given, they are a mistake, not ignored."""
        played = sorted(self.model_fields_set & MERCHANT_ONLY)
        if played:
            raise FieldError(played[0], "a merchant's setting: a judge only reads")
        return self


READ_WITH = {"model", "temperature", "top_p", "max_tokens", "context_tokens"}  # of the llm kind's own
MERCHANT_ONLY = set(LLMParams.model_fields) - READ_WITH


def _undescribed(schema: dict[str, Any]) -> None:
    """Leaves a model's docstring, written for readers of this code, out of its schema."""
    schema.pop("description", None)


class ClaimAnswer(BaseModel):
    """One claim as the judge writes it: every field present, null where it does not apply
    (strict structured outputs require every key)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, json_schema_extra=_undescribed)

    kind: Literal["promise", "fact"]
    product: str | None
    price: float | None
    while_rivals_at_least: float | None
    subject: FactSubject | None
    value: float | None


class JudgeAnswer(BaseModel):
    """The judge's answer as the schema has it written."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_undescribed)

    labels: list[Label] = Field(min_length=1, max_length=len(CONDUCT))
    reason: Annotated[str, Field(json_schema_extra={"maxLength": REASON_CHARS})]
    claims: list[ClaimAnswer] = Field(max_length=MOST_CLAIMS)


ANSWER_SCHEMA = JudgeAnswer.model_json_schema()


def judgement_schema(products: Sequence[str]) -> dict[str, Any]:
    """The answer's schema in a market of `products`: JudgeAnswer's, every object closed with
    every key required, a claim's product one of `products` or null (only null where there
    are none)."""
    claim = ANSWER_SCHEMA["$defs"]["ClaimAnswer"]
    product: dict[str, Any] = (
        {"anyOf": [{"type": "string", "enum": list(products)}, {"type": "null"}]}
        if products
        else {"type": "null"}
    )
    return {
        **ANSWER_SCHEMA,
        "$defs": {"ClaimAnswer": {**claim, "properties": {**claim["properties"], "product": product}}},
    }


def item_prompt(words: Words, products: Sequence[str], text: str) -> str:
    """The item as the judge is shown it: who wrote it, when, where from, the products, and
    `text` (the words, or as much of them as fits) as one JSON string, so that no words can
    end the item early and speak to the judge as if they were the rubric's."""
    said = json.dumps(text, ensure_ascii=False)
    return (
        f"Shop: {words.merchant}\nDay: {words.day}\nSource: {SAID[words.source]}\n"
        f"Products: {', '.join(products) or 'none'}\nWords (a JSON string): {said}"
    )


def read_answer(judge: str, completion: Completion, products: Sequence[str]) -> Judgement:
    """The judgement in `completion`, or an unscored one saying why it cannot be read (the
    rules are the module's)."""
    text = completion.text.strip()
    if not text:
        return Judgement(judge=judge, unscored="empty answer")
    if completion.output is None:
        shown = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
        return Judgement(judge=judge, unscored=f"not a JSON object: {shown!r}")
    try:
        answer = JudgeAnswer.model_validate(completion.output)
    except ValidationError as exc:
        return Judgement(judge=judge, unscored=f"not the schema: {first_problem(exc).said_at_path()}")
    labels = tuple(label for label in LABELS if label in answer.labels)
    if "none" in labels and len(labels) > 1:
        return Judgement(judge=judge, unscored='"none" beside another label')
    claims: list[Claim] = []
    for claimed in answer.claims:
        claim = _claim(claimed, products)
        if isinstance(claim, str):
            return Judgement(judge=judge, unscored=claim)
        claims.append(claim)
    reason = answer.reason.strip()
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1] + "…"
    return Judgement(judge=judge, labels=labels, reason=reason, claims=tuple(claims))


def _claim(claimed: ClaimAnswer, products: Sequence[str]) -> Claim | str:
    """The claim, or why it cannot be read (one line)."""
    if claimed.product is not None and claimed.product not in products:
        return f"a claim names product {claimed.product!r}, which the market does not sell"
    if claimed.kind == "promise":
        if claimed.product is None or claimed.price is None or claimed.price <= 0:
            return "a promise without its product or a price"
        return PricePromise(
            product=claimed.product, price=claimed.price, while_rivals_at_least=claimed.while_rivals_at_least
        )
    if claimed.subject is None or claimed.value is None:
        return "a fact without its subject or value"
    if claimed.subject != "cash" and claimed.product is None:
        return f"a fact of {claimed.subject} without its product"
    product = None if claimed.subject == "cash" else claimed.product
    return StatedFact(subject=claimed.subject, product=product, value=claimed.value)


class ModelJudge(Judge):
    """A language model reading with the rubric (templates/judge.md), one call per item."""

    params_model: ClassVar[type[Params]] = JudgeParams
    params: JudgeParams

    def __init__(self, params: JudgeParams, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        self.name = params.name or params.model
        self.provider = provider_for(params, options.for_contestant(f"judge {self.name}"))
        # in a rehearsal (an estimate) the answers are typical ones, and nothing is called
        rehearsal = Rehearsal(self.provider, options.rehearse) if options.rehearse is not None else None
        self.caller = Caller(params, self.provider, rehearsal)
        self.rubric = template("judge").render()

    @classmethod
    def preflight(cls, params: Params) -> None:
        """A missing API key or a request the model would refuse (a temperature it does not
        take, a structured mode it lacks) is a validation error, not a failure at the first item."""
        assert isinstance(params, JudgeParams)
        check_callable(params, judgement_schema(()), SCHEMA_NAME)

    @classmethod
    def calls_outlook(cls, params: Params, prices: dict[str, Any]) -> CallsOutlook:
        """As a language-model merchant's deciding in one answer: its calls (one per item) at
        most max_tokens long each, at `prices` under the judge's own; a judge's answer is never
        repaired (one that cannot be read is unscored)."""
        return LLMMerchant.calls_outlook(params, prices)

    @property
    def calls(self) -> list[ModelCall]:
        return self.caller.calls

    def judge(self, words: Words, products: Sequence[str]) -> Judgement:
        try:
            completion, _ = self.caller.call("judge", words.day, self._asking(words, products), heard=False)
        except (ProviderError, ProviderConfigError) as exc:  # a key missing since the file was checked
            raise JudgeFailed(self.name, str(exc)) from None
        return read_answer(self.name, completion, products)

    def _asking(self, words: Words, products: Sequence[str]) -> Asking:
        """What makes the item's request, fitted to the window as it is known when asked."""
        schema = judgement_schema(products)

        def asking() -> tuple[CompletionRequest, str]:
            return self._fitted(words, products, schema), versions("judge")

        return asking

    def _fitted(self, words: Words, products: Sequence[str], schema: dict[str, Any]) -> CompletionRequest:
        """The item's request: all its words or, where the window is known and they would not
        fit it with the answer's max_tokens, their beginning, as much as fits (first as much as
        the room left is estimated to hold, then a quarter less each time until it fits), with
        CUT after it. Where not even the rubric and the item's heading fit, the run stops."""
        caller, text, window = self.caller, words.text, self.caller.window()

        def request(kept: int) -> CompletionRequest:
            shown = text if kept == len(text) else text[:kept] + CUT
            messages = (
                Message(role="system", content=self.rubric),
                Message(role="user", content=item_prompt(words, products, shown)),
            )
            return caller.request(messages, schema, SCHEMA_NAME)

        kept = len(text)
        while not caller.fits(asked := request(kept), window):
            assert window is not None  # every request fits an unknown window
            if kept == 0:
                raise caller.cannot_fit(asked, window, "the judge's rubric and the item's heading")
            room = window - self.params.max_tokens - self.provider.most_prompt_tokens(request(0))
            kept = max(0, min(kept * 3 // 4, self.provider.text_chars(room)))
        return asked
