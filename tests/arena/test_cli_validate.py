"""`arena validate`: every shipped tournament file validates, and a broken copy of one is
refused; every example's header says what it plays, costs and takes; --ping makes one call per
distinct model and names each model that fails; --estimate foresees the calls; no key is ever
shown."""

from __future__ import annotations

import json
import os
import re
from itertools import takewhile
from pathlib import Path

import pytest
import yaml
from fakes.openai_api import FakeOpenAI
from thin_price_war import thin_price_war
from typer.testing import CliRunner

from arena.cli import app
from contestants.llm.catalogue import CATALOGUE, catalogue_price
from contestants.llm.params import LLMParams
from market.scenario import SHIPPED_SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FOLDER = ROOT / "tournaments" / "examples"
EXAMPLES = sorted(EXAMPLE_FOLDER.glob("*.yaml"))
SHIPPED = [
    *EXAMPLES,
    ROOT / "tournaments" / "round_robin.yaml",
    ROOT / "scripts" / "report_demo.yaml",  # scripts/screenshot_report.py plays it
    *sorted((ROOT / "tournaments" / "replications").glob("*/tournament.yaml")),
]
PACK_FIGURES = set(
    (ROOT / "tournaments" / "replications").glob("*/figures.yaml")
)  # tests/tournaments/test_replication.py
LABELLED = ROOT / "tests" / "contestants" / "llm" / "labelled_messages.yaml"
KEY, WRONG = "sk-SENTINEL-ping-0a9b8c7d", "sk-SENTINEL-wrong-6f5e4d3c"


@pytest.mark.usefixtures("keys")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_tournament_validates(path):
    """Every shipped file validates, and an example's header counts the matches validate counts."""
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert ": ok — " in result.stdout
    if path in EXAMPLES:
        counted = re.search(r": (\d+) matches, ", result.stdout)
        assert counted is not None
        matches = "1 match" if counted[1] == "1" else f"{counted[1]} matches"
        assert f": {matches}" in said(path, "Plays")


def header(path: Path) -> list[str]:
    """The comment lines a file opens with, without their '#'."""
    lines = takewhile(lambda line: line.startswith("#"), path.read_text().splitlines())
    return [line.removeprefix("#").strip() for line in lines]


def said(path: Path, label: str) -> str:
    """What an example's header says after `label:`, up to the next label."""
    text = " ".join(header(path))
    found = re.search(rf"\b{label}: (.*?)(?= (?:Plays|Costs|Takes): |$)", text)
    assert found is not None, f"{path.name}: its header has no {label}:"
    return found[1]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_says_what_it_plays_costs_and_takes_in_eight_lines(path):
    assert 0 < len(header(path)) <= 8
    for label in ("Plays", "Costs", "Takes"):
        assert said(path, label)


@pytest.mark.usefixtures("keys")
def test_the_head_to_head_example_costs_what_its_header_says():
    """openai_vs_anthropic.yaml's header gives its estimate: the calls exactly, the tokens
    (input and output) to a tenth of a million, the dollars to the cent, and the calls in a row
    of a match (each model's decisions and recall questions over the matches)."""
    path = EXAMPLE_FOLDER / "openai_vs_anthropic.yaml"
    result = CliRunner().invoke(app, ["validate", str(path), "--estimate", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    *models, total = shown["estimate"]
    costs = re.fullmatch(
        r"([\d,]+) to ([\d,]+) model calls, ([\d.]+)M to ([\d.]+)M tokens, \$([\d.]+) to \$([\d.]+) .*",
        said(path, "Costs"),
    )
    assert costs is not None
    assert [int(costs[k].replace(",", "")) for k in (1, 2)] == total["calls"]
    tokens = [total["input_tokens"][k] + total["output_tokens"][k] for k in (0, 1)]
    assert [float(costs[k]) for k in (3, 4)] == [round(t / 1e6, 1) for t in tokens]
    assert [float(costs[k]) for k in (5, 6)] == [round(c, 2) for c in total["cost"]]
    in_a_row = {
        (e["by_purpose"]["decide"][0] + e["by_purpose"]["recall"][0]) / shown["matches"] for e in models
    }
    assert len(models) == 2 and len(in_a_row) == 1
    assert f" {in_a_row.pop():g} calls in a row a match" in said(path, "Takes")


def test_every_yaml_file_we_ship_is_checked():
    """Each YAML file of the repository (outside hidden folders: .venv, caches) is a tournament
    validated above, a scenario (each is loaded by tests/tournaments/test_config.py), a
    replication pack's figures, the model catalogue (read by the tests of
    tests/contestants/llm) or the judges' labelled set (read by tests/results/test_conduct.py):
    a new one must join one of them. The YAML of README.md and docs/ is
    checked by tests/test_docs.py."""
    found = set()
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        found |= {Path(folder) / name for name in files if name.endswith((".yaml", ".yml"))}
    assert found == {*SHIPPED, *SHIPPED_SCENARIOS.glob("*.yaml"), *PACK_FIGURES, CATALOGUE, LABELLED}


def with_first_contestant(data: dict, **fields) -> dict:
    """The tournament `data` with its first contestant's `fields` replaced."""
    first, *others = data["contestants"]
    return {**data, "contestants": [{**first, **fields}, *others]}


BREAKS = {  # what to break in a tournament file, and a word the error line must name
    "an unknown field": (lambda data: {**data, "seeed": 3}, "seeed"),
    "an unknown scenario": (lambda data: {**data, "scenarios": ["no_such_scenario"]}, "no_such_scenario"),
    "an unknown kind": (lambda data: with_first_contestant(data, kind="no_such_kind"), "no_such_kind"),
    "a contestant's unknown setting": (
        lambda data: with_first_contestant(
            data, params={**data["contestants"][0].get("params", {}), "no_such_setting": 1}
        ),
        "no_such_setting",
    ),
}


@pytest.mark.usefixtures("keys")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_a_broken_copy_of_a_shipped_tournament_is_refused(path, tmp_path):
    """The check above could fail: a copy elsewhere validates as the file does, and the same
    copy with one thing broken is refused with one line (exit status 2) that names it."""
    data = yaml.safe_load(path.read_text())
    copy = tmp_path / path.name
    copy.write_text(yaml.safe_dump(data))
    assert CliRunner().invoke(app, ["validate", str(copy)]).exit_code == 0
    for what, (broken, named) in BREAKS.items():
        copy.write_text(yaml.safe_dump(broken(data)))
        result = CliRunner().invoke(app, ["validate", str(copy)])
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.exit_code == 2 and len(lines) == 1 and named in lines[0], (what, result.output)


@pytest.fixture
def api():
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


def tournament(folder: Path, api: FakeOpenAI, *contestants: tuple[str, str, str]) -> Path:
    """Contestants (name, model, key variable) at the stand-in, and a baseline."""
    entries = "".join(
        f"\n  - name: {name}\n    kind: llm\n"
        f'    params: {{model: openai/{model}, base_url: "{api.base_url}", '
        f"api_key_env: {variable}, no_cache: true, max_retries: 0}}"
        for name, model, variable in contestants
    )
    path = folder / "t.yaml"
    path.write_text(
        "name: pinged\nscenarios: [price_war]\ndays: 3\ncontestants:\n"
        f"  - {{name: fixed, kind: fixed_price}}{entries}\n"
    )
    return path


def test_ping_calls_each_distinct_model_once_and_names_each_that_fails(tmp_path, api, monkeypatch):
    monkeypatch.setenv("GOOD_KEY", KEY)
    monkeypatch.setenv("BAD_KEY", WRONG)
    config = tournament(
        tmp_path,
        api,
        ("mini", "gpt-4.1-mini", "GOOD_KEY"),
        ("mini-again", "gpt-4.1-mini", "GOOD_KEY"),  # the same call as mini's: not made twice
        ("typo", "gpt-4.1-minni", "GOOD_KEY"),
        ("refused", "gpt-5-mini", "BAD_KEY"),
        ("mini-other-key", "gpt-4.1-mini", "BAD_KEY"),  # mini's call but another key: a call of its own
    )
    result = CliRunner().invoke(app, ["validate", str(config), "--ping"])
    assert result.exit_code == 4
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 3
    assert lines[0].startswith(
        "error: contestants[3] typo: openai/gpt-4.1-minni: HTTP 404: The model `gpt-4.1-minni` does not exist"
    )
    assert lines[1].startswith(
        "error: contestants[4] refused: openai/gpt-5-mini: HTTP 401: Incorrect API key provided"
    )
    assert lines[2].startswith("error: contestants[5] mini-other-key: openai/gpt-4.1-mini")
    assert len(api.calls) == 4
    assert KEY not in result.output and WRONG not in result.output


def test_ping_of_models_that_answer_is_quiet(tmp_path, api, monkeypatch):
    monkeypatch.setenv("GOOD_KEY", KEY)
    config = tournament(
        tmp_path, api, ("mini", "gpt-4.1-mini", "GOOD_KEY"), ("astra", "gpt-6-astra", "GOOD_KEY")
    )
    result = CliRunner().invoke(app, ["validate", str(config), "--ping"])
    assert result.exit_code == 0, result.output
    assert "error" not in result.output and len(api.calls) == 2


def test_estimate_counts_the_calls_of_the_schedule(tmp_path, api, monkeypatch):
    """Three days, recall questions every five days: three decisions a match, nothing else, at
    one step a day; at most each repaired once, every answer max_tokens long, priced at the catalogue's
    price; nothing reaches the API."""
    monkeypatch.setenv("GOOD_KEY", KEY)
    config = tournament(
        tmp_path, api, ("mini", "gpt-4.1-mini", "GOOD_KEY"), ("luna", "gpt-6-luna", "GOOD_KEY")
    )
    result = CliRunner().invoke(app, ["validate", str(config), "--estimate", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["matches"] == 3
    estimates = {e["contestant"]: e for e in shown["estimate"]}
    for name in ("mini", "luna"):  # two matches each
        assert estimates[name]["calls"] == [6, 12]
        assert estimates[name]["by_purpose"] == {"decide": [6, 6], "repair": [0, 6]}
        assert estimates[name]["output_tokens"][1] == 12 * LLMParams(model="openai/gpt-4.1-mini").max_tokens
    assert estimates["total"]["calls"] == [12, 24]
    assert estimates["total"]["by_purpose"] == {"decide": [12, 12], "repair": [0, 12]}
    mini = estimates["mini"]
    assert 0 < mini["input_tokens"][0] < mini["input_tokens"][1]
    price = catalogue_price("openai/gpt-4.1-mini")
    assert price is not None
    at_most = (mini["input_tokens"][1] * price.input + mini["output_tokens"][1] * price.output) / 1e6
    assert 0 < mini["cost"][0] < mini["cost"][1] == pytest.approx(at_most)
    assert estimates["total"]["input_tokens"] == [
        mini["input_tokens"][k] + estimates["luna"]["input_tokens"][k] for k in (0, 1)
    ]
    assert api.calls == [] and KEY not in result.output


def test_estimate_of_an_agent_gives_its_calls_from_a_step_a_day_to_all_its_steps(tmp_path, api, monkeypatch):
    """An agent's rehearsed day is one step (its operations and the end of the day) at the low
    end, at most its 20: three days, two matches, 6 to 120 steps, which the table shows."""
    monkeypatch.setenv("GOOD_KEY", KEY)
    config = tournament(
        tmp_path, api, ("mini", "gpt-4.1-mini", "GOOD_KEY"), ("luna", "gpt-6-luna", "GOOD_KEY")
    )
    config.write_text(
        config.read_text().replace("model: openai/gpt-4.1-mini,", "model: openai/gpt-4.1-mini, mode: agent,")
    )
    result = CliRunner().invoke(app, ["validate", str(config), "--estimate", "--json"])
    assert result.exit_code == 0, result.output
    estimates = {e["contestant"]: e for e in json.loads(result.stdout)["estimate"]}
    mini = estimates["mini"]
    assert mini["calls"] == [6, 120] and mini["by_purpose"] == {"step": [6, 120]}
    assert mini["input_tokens"][0] < mini["input_tokens"][1] and mini["cost"][0] < mini["cost"][1]
    assert estimates["luna"]["by_purpose"] == {"decide": [6, 6], "repair": [0, 6]}
    assert estimates["total"]["by_purpose"] == {"step": [6, 120], "decide": [6, 6], "repair": [0, 6]}
    assert api.calls == []
    shown = CliRunner().invoke(app, ["validate", str(config), "--estimate"])
    assert "step 6 to 120" in shown.stdout
    assert "from one step a day to the most" in " ".join(shown.stdout.split())  # the title names its ends


def test_estimate_says_when_a_rehearsal_goes_bankrupt(tmp_path, api, monkeypatch):
    """In a market whose fixed cost no sales can pay, even the rehearsal's best response goes
    bankrupt: a warning line says the figures leave out the days after."""
    monkeypatch.setenv("GOOD_KEY", KEY)
    ruinous = thin_price_war()
    ruinous["finance"]["fixed_daily_cost"] = 1_000
    (tmp_path / "ruinous.yaml").write_text(yaml.safe_dump(ruinous))
    config = tournament(tmp_path, api, ("mini", "gpt-4.1-mini", "GOOD_KEY"))
    config.write_text(config.read_text().replace("[price_war]", f"[{tmp_path / 'ruinous.yaml'}]"))
    result = CliRunner().invoke(app, ["validate", str(config), "--estimate", "--json"])
    assert result.exit_code == 0, result.output
    mini = {e["contestant"]: e for e in json.loads(result.stdout)["estimate"]}["mini"]
    assert mini["bankrupt"] == 1 and mini["by_purpose"]["decide"] == [1, 1]  # day 1 alone
    assert result.stderr.splitlines() == [
        "warning: mini: the rehearsal went bankrupt in 1 of its matches: "
        "the estimate leaves out the days after"
    ]


def test_run_with_estimate_plays_nothing_and_estimates_as_validate_does(tmp_path, api, monkeypatch):
    monkeypatch.setenv("GOOD_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    config = tournament(tmp_path, api, ("mini", "gpt-4.1-mini", "GOOD_KEY"))
    ran = CliRunner().invoke(app, ["run", str(config), "--estimate"])
    validated = CliRunner().invoke(app, ["validate", str(config), "--estimate"])
    assert ran.exit_code == 0, ran.output
    assert ran.stdout == validated.stdout
    assert "model calls the tournament will need" in ran.stdout
    assert not (tmp_path / "arena.db").exists() and api.calls == []
