"""A language-model contestant that cannot play its first day within its model's window is
refused as the file is loaded: by `arena validate` and by `arena run` before anything is
written, with the line the run itself stops with (tournaments/first_day.py); a window that just
holds it is accepted; `--estimate` rehearses every day, refusing where a rehearsed day does not
fit and saying where a rehearsed turn failed otherwise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import Result
from fakes.openai_api import FakeOpenAI
from typer.testing import CliRunner

from arena.cli import app
from contestants.base import RunOptions
from contestants.calls.coordinator import LocalCallCoordinator
from contestants.llm.rehearsal import Rehearsal
from market.scenario import load_scenario
from results.records import StoppedMatch
from tournaments.config import parse_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_tournament
from tournaments.schedule import MatchSpec

KEY = "ARENA_TEST_FIRST_DAY"
MAX_TOKENS = 400  # LLMParams' default, which the files below keep
AGENT_SMALLEST = "the rules, the tools, its summary and notes"
DECISION_SMALLEST = "the rules, today's report and its notes"
STOP = (  # the line a run stops with: the contestant, what did not fit, its count, the window
    r"contestant m \((?:openai/gpt-4\.1-mini|local/smollm2)\): {smallest} come to ([\d,]+) tokens as its "
    r"model counts them, which with max_tokens {max_tokens} do not fit its window of {window} tokens: "
    r"give it a larger window or a smaller max_tokens"
)


@pytest.fixture
def api(monkeypatch):
    """The OpenAI stand-in, its key set: a call that should not be made would reach it."""
    with FakeOpenAI(api_key="sk-first-day") as fake:
        monkeypatch.setenv(KEY, fake.api_key)
        yield fake


def write(folder: Path, params: str, extra: str = "") -> Path:
    """A three-day price_war file: a language model `m` with `params` (the inside of a YAML
    flow mapping) beside a fixed price."""
    path = folder / "t.yaml"
    path.write_text(
        f"name: window\nscenarios: [price_war]\ndays: 3\n{extra}contestants:\n"
        f"  - name: m\n    kind: llm\n    params: {{{params}}}\n"
        "  - {name: fixed, kind: fixed_price}\n"
    )
    return path


def hosted(api: FakeOpenAI, params: str) -> str:
    return f'model: openai/gpt-4.1-mini, base_url: "{api.base_url}", api_key_env: {KEY}, {params}'


def stop_line(smallest: str, window: int) -> str:
    return STOP.format(smallest=re.escape(smallest), max_tokens=MAX_TOKENS, window=f"{window:,}")


def the_line(result: Result) -> str:
    """The one line a command printed on stderr, having exited with status 2."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    return lines[0]


def refusal(path: Path, smallest: str, window: int, *command: str) -> tuple[str, int]:
    """`arena validate` (or `command`) run on `path`, refusing it in one line that names the
    file, the first contestant and the line its run would stop with; that stop's line, and
    the count it gives."""
    line = the_line(CliRunner().invoke(app, [*(command or ["validate"]), str(path)]))
    found = re.fullmatch(
        rf"error: {re.escape(str(path))}: contestants\[0\]: ({stop_line(smallest, window)}) "
        r"\(its first day of 'price_war', rehearsed\)",
        line,
    )
    assert found, line
    return found[1], int(found[2].replace(",", ""))


def refused(path: Path, smallest: str, window: int, *command: str) -> int:
    """The count of the refusal (`refusal`)."""
    return refusal(path, smallest, window, *command)[1]


def accepted(path: Path, *options: str) -> str:
    result = CliRunner().invoke(app, ["validate", str(path), *options])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_an_agent_whose_first_day_cannot_fit_is_refused_by_validate_and_by_run_before_anything_is_written(
    api, tmp_path
):
    """An agent under 1,200 tokens: its rules and tools alone take more. `arena validate`,
    `--estimate` and `arena run` refuse it in the same line, and the run writes no database
    and calls nothing."""
    path = write(tmp_path, hosted(api, "mode: agent, context_tokens: 1200"))
    counted = refused(path, AGENT_SMALLEST, 1_200)
    assert counted + MAX_TOKENS > 1_200
    assert refused(path, AGENT_SMALLEST, 1_200, "validate", "--estimate") == counted
    db = tmp_path / "run.db"
    assert refused(path, AGENT_SMALLEST, 1_200, "run", "--db", f"sqlite:///{db}") == counted
    assert not db.exists() and api.calls == []


def test_an_agent_is_accepted_where_its_smallest_conversation_fits(api, tmp_path):
    """The window the refusal says is needed (its count and max_tokens) is enough: the file
    validates, and its estimate rehearses every day. (Below it an agent may still fit: its
    first request, before anything is compacted, can be smaller than its rules, tools and
    summary.)"""
    small = write(tmp_path, hosted(api, "mode: agent, context_tokens: 1200"))
    counted = refused(small, AGENT_SMALLEST, 1_200)
    path = write(tmp_path, hosted(api, f"mode: agent, context_tokens: {counted + MAX_TOKENS}"))
    accepted(path)
    estimate = json.loads(accepted(path, "--estimate", "--json"))["estimate"][0]
    assert estimate["by_purpose"]["step"][0] == 3 and estimate["failed"] == 0


def test_a_decision_is_refused_below_its_first_prompt_and_accepted_from_it_as_the_run_counts(api, tmp_path):
    """A merchant deciding in one answer a day, whose first prompt (the rules and today's
    report) the refusal counts: a window of that count and max_tokens is accepted, one token
    less refused with the same count. The run itself stops with the same line: played here at
    the stand-in, the match stops before any call."""
    small = write(tmp_path, hosted(api, "context_tokens: 1000"))
    stop, counted = refusal(small, DECISION_SMALLEST, 1_000)
    spec = parse_tournament(small, small.read_text())  # unchecked: the run's own stop is wanted
    match = MatchSpec(
        key="k", index=0, scenario="price_war", seed=0, days=3, seats=("fixed", "m")
    )  # as the schedule seats them
    coordinator = LocalCallCoordinator()
    rules = MatchRules(seed=spec.seed, options=RunOptions(call_coordinator=coordinator))
    [played] = play_here([Match(match, load_scenario("price_war"), rules, plan_tournament(spec))])
    assert isinstance(played, StoppedMatch) and played.reason == stop
    assert coordinator.status().broken == "m" and api.calls == []

    fitting = counted + MAX_TOKENS
    just_under = write(tmp_path, hosted(api, f"context_tokens: {fitting - 1}"))
    assert refused(just_under, DECISION_SMALLEST, fitting - 1) == counted
    accepted(write(tmp_path, hosted(api, f"context_tokens: {fitting}")))


def test_the_estimate_refuses_a_window_that_holds_the_first_day_but_not_a_later_one(api, tmp_path):
    """Yesterday's results make day 2's report longer than day 1's: a window that just holds
    the first day passes `arena validate`, and `--estimate`, which rehearses every day,
    refuses it with the run's line, for a larger count, and the rehearsed match."""
    counted = refused(write(tmp_path, hosted(api, "context_tokens: 1000")), DECISION_SMALLEST, 1_000)
    window = counted + MAX_TOKENS
    path = write(tmp_path, hosted(api, f"context_tokens: {window}"))
    accepted(path)
    result = CliRunner().invoke(app, ["validate", str(path), "--estimate"])
    line = the_line(result)
    later = re.fullmatch(
        rf"error: {re.escape(str(path))}: {stop_line(DECISION_SMALLEST, window)} "
        r"\(rehearsed: match price_war/seed=0/fixed\+m\)",
        line,
    )
    assert later and int(later[1].replace(",", "")) > counted and result.stdout == "", line


@pytest.mark.slow  # the embedded model's tokenizer
def test_the_embedded_model_is_held_to_its_n_ctx(tmp_path):
    """The local model's window is its n_ctx, its prompt counted by its own tokenizer: too
    small refused; the count and max_tokens accepted, a token less refused."""
    counted = refused(write(tmp_path, "model: local/smollm2, n_ctx: 512"), DECISION_SMALLEST, 512)
    fitting = counted + MAX_TOKENS
    assert fitting > 512
    refused(write(tmp_path, f"model: local/smollm2, n_ctx: {fitting - 1}"), DECISION_SMALLEST, fitting - 1)
    accepted(write(tmp_path, f"model: local/smollm2, n_ctx: {fitting}"))


def test_a_sweep_names_the_cell_whose_window_is_too_small(api, tmp_path):
    path = write(tmp_path, hosted(api, "mode: agent"), "sweep:\n  m.context_tokens: [32000, 1200]\n")
    line = the_line(CliRunner().invoke(app, ["validate", str(path)]))
    assert re.fullmatch(
        rf"error: {re.escape(str(path))}: sweep: cell m\.context_tokens=1200: contestants\[0\]: "
        rf"{stop_line(AGENT_SMALLEST, 1_200)} \(its first day of 'price_war', rehearsed\)",
        line,
    ), line


def test_the_estimate_says_on_how_many_rehearsed_days_a_turn_failed(api, tmp_path, monkeypatch):
    """A rehearsed turn that fails otherwise (here the rehearsal's stand-in raises from day 2)
    is the day's fault, not a stop: the estimate leaves those days out, counts them and says
    so in a warning line, with the first of them."""
    real = Rehearsal.observe

    def observe(self, observation):
        if observation.day >= 2:
            raise RuntimeError("no stand-in today")
        real(self, observation)

    monkeypatch.setattr(Rehearsal, "observe", observe)
    path = write(tmp_path, hosted(api, "context_tokens: 100000"))
    result = CliRunner().invoke(app, ["validate", str(path), "--estimate", "--json"])
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.stdout)["estimate"][0]
    assert estimate["failed"] == 2 and estimate["by_purpose"]["decide"] == [1, 1]
    assert result.stderr.splitlines() == [
        "warning: m: its turn failed on 2 rehearsed days (the first: day 2 of price_war/seed=0/fixed+m: "
        "RuntimeError: no stand-in today): the estimate leaves out what they would have called"
    ]
