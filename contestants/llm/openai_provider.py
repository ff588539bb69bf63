"""OpenAI's API, the named OpenAI-compatible services (presets), and any compatible server
reached through `base_url` (vLLM, Ollama, LM Studio, llama.cpp's server).

What a request may carry depends on the model (OpenAI's reasoning models refuse max_tokens
and, at most efforts, a temperature) and on the service: the catalogue's family of the
model says it (contestants/llm/catalogue.yaml), and this module only follows it.

Two APIs (`api`): Chat Completions, and the Responses API, which some models are served
only by. The answer is asked for in one of three modes (`structured`): a JSON-schema response
format, a forced call of one function whose parameters are the schema, or JSON mode; `auto`
takes the first mode of the family's list that the request allows. Where the family decodes
strictly, the schema is first brought into the subset strict mode accepts
(contestants.llm.schema.strict_schema), so that the answer always parses.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from contestants.calls.types import Answer, CompletionRequest, Message, TokenUsage, ToolCall
from contestants.llm.catalogue import OpenAIFamily, Structured, catalogue, openai_family
from contestants.llm.errors import ProviderConfigError
from contestants.llm.providers import RemoteProvider, RemoteSettings, check_effort
from contestants.llm.retry import BadResponse, Failure, sdk_failure
from contestants.llm.schema import strict_schema

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response


class OpenAISettings(RemoteSettings):
    api_key_env: str | None = "OPENAI_API_KEY"
    api: Literal["chat", "responses"] = "chat"
    structured: Literal["auto", "json_schema", "tool", "json_object"] = "auto"
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = Field(
        "auto",
        description="the summary of its reasoning a reasoning model gives with tools (Responses API); "
        "None: none asked for",
    )


log = logging.getLogger(__name__)


class OpenAIProvider(RemoteProvider):
    name = "openai"
    settings_model = OpenAISettings
    settings: OpenAISettings
    summaries_refused = False  # the organisation may not have reasoning summaries (it is unverified)

    @classmethod
    def settings_for(cls, provider: str, settings: dict[str, Any]) -> dict[str, Any]:
        """A preset's base_url and key variable, under what the contestant sets itself."""
        preset = catalogue().presets.get(provider)
        if preset is None:
            return settings
        return {"base_url": preset.base_url, "api_key_env": preset.api_key_env, **settings}

    @property
    def family(self) -> OpenAIFamily:
        preset = self.name if self.name in catalogue().presets else None
        return openai_family(self.model, preset, own_api=self.settings.base_url is None)

    def context_tokens(self) -> int | None:
        return self.family.context

    @property
    def mode(self) -> Structured:
        """The answer mode: the one set, or the first of the family's that the request allows."""
        if self.settings.structured != "auto":
            return self.settings.structured
        allowed = [m for m in self.family.structured if m != "tool" or self._tools_allowed()]
        return allowed[0] if allowed else self.family.structured[0]

    def check_request(self, request: CompletionRequest) -> None:
        family, effort, api = self.family, self.settings.reasoning_effort, self.settings.api
        check_effort(self.label, effort, family.efforts_for(api), f" on the {api} API")
        if not family.allows(family.sampling, effort):
            for field in ("temperature", "top_p"):
                if getattr(request, field) is not None:
                    when = " unless reasoning_effort is none" if family.sampling == "effort_none" else ""
                    raise ProviderConfigError(
                        f"{self.label} takes no {field}{when}: leave it unset (the model's default)", field
                    )
        if request.json_schema is not None and self.mode not in family.structured:
            raise ProviderConfigError(
                f"{self.label}: structured {self.mode} is not offered here "
                f"(offered: {', '.join(family.structured)})",
                "structured",
            )
        if request.tools and not self._tools_allowed():
            raise ProviderConfigError(
                f"{self.label} refuses function tools on Chat Completions at this reasoning effort, "
                "which agent mode needs: use api: responses",
                "api",
            )
        if request.json_schema is not None and self.mode == "tool" and not self._tools_allowed():
            raise ProviderConfigError(
                f"{self.label} refuses function tools on Chat Completions at this reasoning effort: "
                "use api: responses or structured: json_schema",
                "structured",
            )

    def cache_identity(self) -> dict[str, Any]:
        s = self.settings
        return {
            **super().cache_identity(),
            "api": s.api,
            "structured": self.mode,
            "reasoning_effort": s.reasoning_effort,
            # only where it differs from the default, which answers cached before it existed had
            **({"reasoning_summary": s.reasoning_summary} if s.reasoning_summary != "auto" else {}),
        }

    def _tools_allowed(self) -> bool:
        family = self.family
        return self.settings.api == "responses" or family.allows(
            family.chat_tools, self.settings.reasoning_effort
        )

    def _new_client(self, **options: Any) -> Any:
        import openai

        return openai.OpenAI(**options)

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        if self.settings.api == "responses":
            return self._respond(request, timeout)
        return self._chat(request, timeout)

    def _strict(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The schema as the family decodes it: in strict mode's subset where it decodes strictly."""
        return strict_schema(schema) if self.family.strict else schema

    def _sampling(self, request: CompletionRequest) -> dict[str, float]:
        return {
            field: value
            for field in ("temperature", "top_p")
            if (value := getattr(request, field)) is not None
        }

    # The conversation goes as an extra body field, as it is: the SDK would walk every turn
    # against its typed parameters first (20 ms of CPU for 60 turns, and an agent's
    # conversation holds more), to change nothing in a body of plain JSON.
    def _chat(self, request: CompletionRequest, timeout: float) -> Answer:
        from openai.types.chat import ChatCompletion

        family, mode, name = self.family, self.mode, request.schema_name
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [self._chat_message(m) for m in request.messages],
            family.token_field: request.max_tokens,
            **self._sampling(request),
            "timeout": timeout,
        }
        extra = dict(self.settings.request)  # passed through as they are
        seed_field = family.seed_field
        seed = request.seed if seed_field is not None else None
        if seed_field is not None and seed is not None:
            # Mistral's random_seed is no SDK parameter: it goes as an extra field
            (kwargs if seed_field == "seed" else extra)[seed_field] = seed
        if self.settings.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.settings.reasoning_effort
        strict = {"strict": True} if family.strict else {}
        if request.json_schema is None:  # the model may use the tools or answer in text
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": self._strict(tool.parameters),
                        **strict,
                    },
                }
                for tool in request.tools
            ]
        elif mode == "tool":
            schema = self._strict(request.json_schema)
            kwargs["tools"] = [
                {"type": "function", "function": {"name": name, "parameters": schema, **strict}}
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": name}}
        elif mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": name,
                    "schema": self._strict(request.json_schema),
                    "strict": family.strict,
                },
            }
        else:
            kwargs["response_format"] = {
                "type": "json_object",
                **({"schema": self._strict(request.json_schema)} if family.json_object_schema else {}),
            }
        conversation, kwargs["messages"] = kwargs["messages"], []
        response = self._sdk_client().chat.completions.create(
            **kwargs, extra_body={"messages": conversation, **extra}
        )
        # Given a 2xx body that is not JSON, the SDK returns the body as a str.
        if not isinstance(response, ChatCompletion) or not response.choices:
            raise BadResponse("not a chat completion")
        return self._chat_answer(request, response, seed)

    def _chat_answer(self, request: CompletionRequest, response: ChatCompletion, seed: int | None) -> Answer:
        """The answer in a chat completion: its text or calls, reasoning, usage (`seed`: the one sent)."""
        message = response.choices[0].message
        # function tools are the only ones asked for; some servers (Gemini's, LM Studio) send
        # a call without an id, which its result must name: it is given one
        asked = [call for call in message.tool_calls or [] if call.type == "function"]
        ids = [call.id or f"call_{response.id}_{n}" for n, call in enumerate(asked)]
        calls = tuple(
            ToolCall(id=id_, name=call.function.name, arguments=call.function.arguments)
            for id_, call in zip(ids, asked, strict=True)
        )
        text, calls = request.answer_of(message.content or message.refusal or "", calls)
        usage = response.usage
        prompt = getattr(usage, "prompt_tokens_details", None)
        completion = getattr(usage, "completion_tokens_details", None)
        return Answer(
            text=text,
            tool_calls=calls,
            # what compatible servers (DeepSeek, vLLM, OpenRouter) return of the reasoning
            reasoning=_reasoning_text(message),
            carried=_own_fields(message, asked, ids) if request.tools else (),
            usage=TokenUsage(
                input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                output_tokens=getattr(usage, "completion_tokens", 0) or 0,
                cached_tokens=getattr(prompt, "cached_tokens", 0) or 0,
                cache_write_tokens=getattr(prompt, "cache_write_tokens", 0) or 0,
                reasoning_tokens=getattr(completion, "reasoning_tokens", 0) or 0,
            ),
            served_model=response.model,
            fingerprint=response.system_fingerprint,
            seed=seed,
            **self._sampling(request),
        )

    def _respond(self, request: CompletionRequest, timeout: float) -> Answer:
        from openai.types.responses import Response

        family, mode, name = self.family, self.mode, request.schema_name
        rules = "\n\n".join(m.content for m in request.messages if m.role == "system")
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": [item for m in request.messages if m.role != "system" for item in _input_items(m)],
            "max_output_tokens": request.max_tokens,
            **self._sampling(request),
            "timeout": timeout,
        }
        extra = dict(self.settings.request)  # passed through, but for the two merged below
        if rules:
            kwargs["instructions"] = rules
        reasoning: dict[str, Any] = {}
        if self.settings.reasoning_effort is not None:
            reasoning["effort"] = self.settings.reasoning_effort
        if request.json_schema is None:  # the model may use the tools or answer in text
            kwargs["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": self._strict(tool.parameters),
                    "strict": family.strict,
                }
                for tool in request.tools
            ]
            if family.efforts_for("responses"):  # a reasoning model
                # its reasoning items go back with its turns, so nothing need be stored; stored
                # or not, they then carry their content, encrypted (a model not known to reason
                # is told nothing of this: the API refuses encrypted content for one that does not)
                kwargs["store"] = False
                kwargs["include"] = ["reasoning.encrypted_content", *extra.pop("include", [])]
                if self.settings.reasoning_summary is not None and not self.summaries_refused:
                    reasoning["summary"] = self.settings.reasoning_summary  # kept as its reasoning
        elif mode == "tool":
            schema = self._strict(request.json_schema)
            kwargs["tools"] = [
                {"type": "function", "name": name, "parameters": schema, "strict": family.strict}
            ]
            kwargs["tool_choice"] = {"type": "function", "name": name}
        elif mode == "json_schema":
            schema = self._strict(request.json_schema)
            kwargs["text"] = {
                "format": {"type": "json_schema", "name": name, "schema": schema, "strict": family.strict}
            }
        else:
            kwargs["text"] = {"format": {"type": "json_object"}}
        reasoning.update(extra.pop("reasoning", {}))
        if reasoning:
            kwargs["reasoning"] = reasoning
        kwargs["extra_body"] = {"input": kwargs.pop("input"), **extra}
        response = self._create_response(kwargs, reasoning)
        if not isinstance(response, Response):
            raise BadResponse("not a response")
        return self._response_answer(request, response)

    def _create_response(self, kwargs: dict[str, Any], reasoning: dict[str, Any]) -> Any:
        """The response to the request `kwargs` (its `reasoning` among them), asked again without
        reasoning summaries where the organisation may not have them."""
        import openai

        try:
            response = self._sdk_client().responses.create(**kwargs)
        except openai.BadRequestError as exc:
            # an unverified organisation may not have summaries: the run goes on without them
            if "summary" not in reasoning or getattr(exc, "param", None) != "reasoning.summary":
                raise
            log.warning("%s: no reasoning summaries for this organisation (%s)", self.label, exc.message)
            self.summaries_refused = True
            del reasoning["summary"]
            if not reasoning:
                del kwargs["reasoning"]
            response = self._sdk_client().responses.create(**kwargs)
        return response

    def _response_answer(self, request: CompletionRequest, response: Response) -> Answer:
        """The answer in a Responses API response: its text or calls, reasoning summary, usage."""
        calls = tuple(
            ToolCall(id=item.call_id, name=item.name, arguments=item.arguments)
            for item in response.output
            if item.type == "function_call"
        )
        text, calls = request.answer_of(response.output_text, calls)
        thought = [item for item in response.output if item.type == "reasoning"]
        summary = "\n\n".join(part.text for item in thought for part in item.summary or [])
        usage = response.usage
        return Answer(
            text=text,
            tool_calls=calls,
            reasoning=summary or None,
            # in a conversation with tools every item goes back as it came, in order: a
            # reasoning item only with the item that followed it, and the model picks up its thread
            carried=tuple(
                item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in response.output
            )
            if request.tools
            else (),
            usage=TokenUsage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cached_tokens=usage.input_tokens_details.cached_tokens or 0,
                cache_write_tokens=getattr(usage.input_tokens_details, "cache_write_tokens", 0) or 0,
                reasoning_tokens=usage.output_tokens_details.reasoning_tokens or 0,
            )
            if usage is not None
            else TokenUsage(),
            served_model=response.model,
            **self._sampling(request),
        )

    def _chat_message(self, message: Message) -> dict[str, Any]:
        """A turn as Chat Completions takes it: the rules in the family's role, an assistant's
        tool calls as function calls (or its turn as the server gave it, where the server
        wants its own fields back), a tool's result under the call's id."""
        if message.carried:
            return dict(message.carried[0])
        if message.role == "tool":
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
        turn: dict[str, Any] = {"role": self._role(message), "content": message.content}
        if message.tool_calls:
            turn["content"] = message.content or None
            turn["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ]
        return turn

    def _role(self, message: Message) -> str:
        return self.family.role if message.role == "system" else message.role

    def _failure(self, exc: BaseException) -> Failure | None:
        import openai

        return sdk_failure(exc, openai)


def _input_items(message: Message) -> list[dict[str, Any]]:
    """A turn as the Responses API's input items: an assistant's output items as they came
    (or, where they were not kept whole, its text and its tool calls as function calls); a
    tool's result as its call's output; any other turn as a message."""
    if _whole(message):
        return list(message.carried)
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}]
    if not message.tool_calls:
        return [{"role": message.role, "content": message.content}]
    text = [{"role": "assistant", "content": message.content}] if message.content else []
    calls = [
        {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}
        for call in message.tool_calls
    ]
    return [*text, *calls]


def _whole(message: Message) -> bool:
    """Whether the turn's carried items are the whole turn: all its tool calls among them.
    An answer cached by an arena that carried only the reasoning items is not, and is rebuilt
    (without them: a reasoning item goes back only with the item that followed it)."""
    called = [item.get("call_id") for item in message.carried if item.get("type") == "function_call"]
    return bool(message.carried) and called == [call.id for call in message.tool_calls]


def _own_fields(message: Any, calls: list[Any], ids: list[str]) -> tuple[dict[str, Any], ...]:
    """The assistant's turn as a compatible server must be given it back, where it added
    fields of its own: the reasoning (DeepSeek's and Kimi's `reasoning_content`, refused when
    missing after tool calls) and a signature on each tool call (Gemini's `extra_content`);
    () where it added neither. `ids` are the calls' ids as arena names them."""
    extra = message.model_extra or {}
    signed = [(call.model_extra or {}).get("extra_content") for call in calls]
    if "reasoning_content" not in extra and not any(signed):
        return ()
    turn: dict[str, Any] = {"role": "assistant", "content": message.content}
    if calls:
        turn["tool_calls"] = [
            {
                "id": id_,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
                **({"extra_content": signature} if signature else {}),
            }
            for id_, call, signature in zip(ids, calls, signed, strict=True)
        ]
    if "reasoning_content" in extra:
        turn["reasoning_content"] = extra["reasoning_content"]
    return (turn,)


def _reasoning_text(message: Any) -> str | None:
    """The reasoning a compatible server returns beside the answer (`reasoning_content` or
    `reasoning`, fields the SDK keeps as extras); None where there is none."""
    extra = getattr(message, "model_extra", None) or {}
    found = extra.get("reasoning_content") or extra.get("reasoning")
    return found if isinstance(found, str) and found else None
