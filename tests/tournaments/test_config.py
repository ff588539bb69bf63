"""Reading tournament files: the identity used by --resume, and the file/field every
mistake is reported against (the CLI's wording is tested in tests/arena)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from common.yaml_files import ConfigError
from market.scenario import SHIPPED_SCENARIOS, Scenario, load_scenario
from results.scoring.composite import ScoringWeights
from results.settings import CollusionSettings
from tournaments.config import load_weights
from tournaments.load import load_tournament

ROOT = Path(__file__).resolve().parents[2]

TOURNAMENT = """\
name: hashing
seed: 5
scenarios: [small]
seeds: [1, 2]
contestants:
  - {name: a, kind: fixed_price}
  - {name: b, kind: undercut}
"""

SMALL = """\
name: small
days: 6
products:
  - {id: w, unit_cost: 10, reference_price: 20, base_demand: 30, initial_stock: 20}
"""


def write(folder: Path, tournament: str = TOURNAMENT, scenario: str = SMALL) -> Path:
    (folder / "scenarios").mkdir(parents=True, exist_ok=True)
    (folder / "scenarios" / "small.yaml").write_text(scenario)
    (folder / "t.yaml").write_text(tournament)
    return folder / "t.yaml"


# ---- config_hash -------------------------------------------------------------------------


def test_a_goal_at_scale_one_keeps_the_identity_it_had_before_goals_had_a_scale(tmp_path):
    """Goals are written into the identity without their scale where it is 1 (as before
    goals had one): saying scale 1 changes nothing, another scale does."""
    hashes = []
    for k, goal in enumerate(
        (
            "{metric: revenue, at_least: 500}",
            "{metric: revenue, at_least: 500, scale: 1}",
            "{metric: revenue, at_least: 500, scale: 2}",
        )
    ):
        t = load_tournament(write(tmp_path / str(k), TOURNAMENT + f"goals: [{goal}]\n"))
        assert ("scale" in t.spec.model_dump()["goals"][0]) == (k == 2)
        assert ('"scale"' in t.scenarios["small"].identity()) == (k == 2)
        hashes.append(t.config_hash)
    assert hashes[0] == hashes[1] != hashes[2]


def test_hash_is_equal_for_identical_files(tmp_path):
    a = load_tournament(write(tmp_path / "a"))
    b = load_tournament(write(tmp_path / "b"))
    assert a.config_hash == b.config_hash
    assert a.config_hash == load_tournament(tmp_path / "a" / "t.yaml").config_hash
    assert len(a.config_hash) == 64


def test_judges_are_no_part_of_a_tournament_s_identity(tmp_path):
    """They read the record and change no match: a file with them resumes one without."""
    judged = TOURNAMENT + "talk: true\nconduct: {judges: [{model: local/smollm2}]}\n"
    plain = load_tournament(write(tmp_path / "a", TOURNAMENT + "talk: true\n"))
    assert load_tournament(write(tmp_path / "b", judged)).config_hash == plain.config_hash


def test_a_file_keeps_the_identity_it_had_before_scenarios_could_list_seats(tmp_path):
    """The hash the code before `seats:` (commit 2742552) computed for this file, so a
    tournament stored then is still found by --resume and still read as unchanged."""
    (tmp_path / "t.yaml").write_text(
        "name: pinned\nseed: 4\nscenarios: [price_war, logit_game]\nseeds: [1, 2]\n"
        "contestants:\n  - {name: a, kind: fixed_price}\n  - {name: b, kind: undercut}\n"
    )
    assert (
        load_tournament(tmp_path / "t.yaml").config_hash
        == "6a9c949b3909fb0b9a1fa1a1cce3b49164a57267633ff5527dd16ca62f368a7b"
    )


@pytest.mark.parametrize("part", ["seats: [{}, {}]", "competitors: [{name: shop}]"])
def test_a_part_added_since_changes_the_identity_where_it_is_used(tmp_path, part):
    path = write(tmp_path)
    before = load_tournament(path).config_hash
    (tmp_path / "scenarios" / "small.yaml").write_text(SMALL + part + "\n")
    assert load_tournament(path).config_hash != before


@pytest.mark.parametrize(
    ("old", "new"),
    [("seed: 5", "seed: 6"), ("seeds: [1, 2]", "seeds: [1, 3]"), ("kind: undercut", "kind: cost_plus")],
)
def test_hash_changes_with_the_tournament_text(tmp_path, old, new):
    before = load_tournament(write(tmp_path / "a")).config_hash
    assert old in TOURNAMENT
    after = load_tournament(write(tmp_path / "b", TOURNAMENT.replace(old, new))).config_hash
    assert before != after


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("days: 6", "days: 7"),
        ("unit_cost: 10", "unit_cost: 11"),
        ("initial_stock: 20}", "initial_stock: 20}\nevents: []\nchoice: {price_sensitivity: 5}"),
    ],
)
def test_hash_changes_with_a_referenced_scenario_file(tmp_path, old, new):
    path = write(tmp_path)
    before = load_tournament(path).config_hash
    assert old in SMALL
    (tmp_path / "scenarios" / "small.yaml").write_text(SMALL.replace(old, new))
    assert load_tournament(path).config_hash != before


def test_hash_changes_when_a_scenario_is_added(tmp_path):
    path = write(tmp_path)
    before = load_tournament(path).config_hash
    other = SMALL.replace("name: small", "name: other")
    (tmp_path / "scenarios" / "other.yaml").write_text(other)
    path.write_text(TOURNAMENT.replace("[small]", "[small, other]"))
    assert load_tournament(path).config_hash != before


def test_scoring_weights_do_not_change_the_hash(tmp_path):
    """They only read results, so changing them must not start a new tournament on --resume."""
    plain = load_tournament(write(tmp_path / "a"))
    scored = load_tournament(
        write(tmp_path / "b", TOURNAMENT + "scoring: {win_rate: 1, validity: 0, memory: 0}\n")
    )
    assert scored.spec.scoring == ScoringWeights(win_rate=1, validity=0, memory=0)
    assert plain.spec.scoring == ScoringWeights()
    assert scored.config_hash == plain.config_hash


def test_collusion_settings_change_the_hash_only_when_they_are_not_the_defaults(tmp_path):
    """They decide how every match is measured; a file without them keeps its identity."""
    plain = load_tournament(write(tmp_path / "a"))
    defaults = load_tournament(
        write(tmp_path / "b", TOURNAMENT + "collusion: {window: 0.5, margin: 0.05, min_days: 5}\n")
    )
    other = load_tournament(write(tmp_path / "c", TOURNAMENT + "collusion: {window: 0.3}\n"))
    assert (
        other.spec.collusion == CollusionSettings(window=0.3) and plain.spec.collusion == CollusionSettings()
    )
    assert defaults.config_hash == plain.config_hash != other.config_hash
    # min_gap came later: at its default the file is the one it was, with another it is not
    said = load_tournament(write(tmp_path / "d", TOURNAMENT + "collusion: {window: 0.3, min_gap: 0.1}\n"))
    lower = load_tournament(write(tmp_path / "e", TOURNAMENT + "collusion: {window: 0.3, min_gap: 0.05}\n"))
    assert said.config_hash == other.config_hash != lower.config_hash
    assert load_tournament(
        write(tmp_path / "f", TOURNAMENT + "collusion: {min_gap: 0.05}\n")
    ).config_hash not in (
        plain.config_hash,
        lower.config_hash,
    )


def test_talk_changes_the_hash_only_when_it_is_on(tmp_path):
    """Talk changes how every match plays; a file without it (or with it off) keeps its identity."""
    plain = load_tournament(write(tmp_path / "a"))
    off = load_tournament(write(tmp_path / "b", TOURNAMENT + "talk: false\n"))
    on = load_tournament(write(tmp_path / "c", TOURNAMENT + "talk: true\n"))
    assert (plain.spec.talk, off.spec.talk, on.spec.talk) == (False, False, True)
    assert off.config_hash == plain.config_hash != on.config_hash


def test_prices_budgets_and_the_failures_that_stop_a_run_do_not_change_the_hash(tmp_path):
    """None of them changes how a match plays: giving a model its price so that a cost budget
    validates, or raising the budget, must let --resume continue the tournament."""
    llm = (
        "  - {name: m, kind: llm, "
        "params: {model: openai/x, base_url: 'http://127.0.0.1:9/v1', api_key_env: null}}\n"
    )
    priced = llm.replace("api_key_env: null", "api_key_env: null, prices: {openai/x: {input: 1, output: 2}}")
    hashes = {
        load_tournament(write(tmp_path / name, TOURNAMENT + text)).config_hash
        for name, text in [
            ("plain", llm),
            ("own_price", priced),
            (
                "prices",
                llm
                + (
                    "prices: {openai/x: {input: 1, output: 2}}\n"
                    "budget: {cost_usd: 3}\nstop_after_failures: 5\n"
                ),
            ),
        ]
    }
    assert len(hashes) == 1
    assert (
        load_tournament(
            write(tmp_path / "other", TOURNAMENT + llm.replace("openai/x", "openai/y"))
        ).config_hash
        not in hashes
    )


def test_the_text_is_kept_as_written(tmp_path):
    path = write(tmp_path, "# a comment\n" + TOURNAMENT)
    tournament = load_tournament(path)
    assert tournament.text == path.read_text()
    assert tournament.path == str(path)


# ---- where a mistake is reported -----------------------------------------------------------


def error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_tournament(path)
    return caught.value


@pytest.mark.parametrize(
    ("addition", "field"),
    [
        ("group_size: 3\n", "group_size"),
        ("format: gauntlet\n", "challenger"),
        ("format: gauntlet\nchallenger: zed\n", "challenger"),
        ("challenger: a\n", "challenger"),
        ("format: gauntlet\nchallenger: a\ngroup_size: 2\n", "group_size"),
        ("format: solo\ngroup_size: 1\n", "group_size"),
        ("format: solo\ndeviation: {day: 3, to: nash}\n", "deviation"),
        ("format: solo\ntalk: true\n", "talk"),
        ("repetitions: 2\n", "repetitions"),  # seeds are given too
        ("days: 0\n", "days"),
        ("max_concurrent_matches: 0\n", "max_concurrent_matches"),
        ("decision_timeout_s: 0\n", "decision_timeout_s"),
        ("colour: red\n", "colour"),
        ("scoring: {win_rate: -1}\n", "scoring.win_rate"),
        ("scoring: {luck: 1}\n", "scoring.luck"),
        ("scoring: {win_rate: 0, validity: 0, memory: 0}\n", "scoring"),
    ],
)
def test_whole_file_checks_name_their_field(tmp_path, addition, field):
    exc = error(write(tmp_path, TOURNAMENT + addition))
    assert exc.file == str(tmp_path / "t.yaml")
    assert exc.field == field
    assert str(exc).startswith(f"{tmp_path / 't.yaml'}: {field}: ")


ALONE = TOURNAMENT.replace("  - {name: b, kind: undercut}\n", "")


@pytest.mark.parametrize("addition", ["", "format: gauntlet\nchallenger: a\n"])
def test_a_lone_contestant_needs_solo_play(tmp_path, addition):
    exc = error(write(tmp_path, ALONE + addition))
    assert (exc.field, str(exc).split(": ", 2)[2]) == (
        "contestants",
        "a match needs two of them, unless they play solo",
    )


@pytest.mark.parametrize("addition", ["group_size: 1\n", "format: solo\n", "format: free_for_all\n"])
def test_a_lone_contestant_plays_solo(tmp_path, addition):
    assert load_tournament(write(tmp_path, ALONE + addition)).spec.merchants_per_match == 1


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("seeds: [1, 2]", "seeds: [2, 1, 2]", "seeds", "repeated: 2"),
        ("seeds: [1, 2]", "seeds: []", "seeds", "at least 1"),
        ("name: b", "name: a", "contestants", "repeated: a"),
        ("kind: undercut", "kind: oracle", "contestants[1].kind", "oracle"),
        ("kind: undercut", "kind: undercut, params: {step: 2}", "contestants[1].params.step", "less than 1"),
        (
            "kind: undercut",
            "kind: undercut, params: {reorder_level: 9, target_stock: 3}",
            "contestants[1].params",
            "target_stock must be above",
        ),
        ("[small]", "[small, nowhere]", "scenarios[1]", "not found"),
        ("[small]", "[small, scenarios/small.yaml]", "scenarios[1]", "listed twice"),
    ],
)
def test_entry_checks_name_their_field(tmp_path, old, new, field, words):
    assert old in TOURNAMENT
    exc = error(write(tmp_path, TOURNAMENT.replace(old, new)))
    assert exc.field == field
    assert words in exc.message
    assert not exc.message.startswith("Value error")


def test_a_contestant_that_cannot_play_a_scenario_is_named_with_it(tmp_path):
    """A grim trigger plays the scenario's Nash and monopoly prices: a scenario whose
    customers ignore prices has none."""
    grim = TOURNAMENT.replace("kind: undercut", "kind: grim_trigger")
    load_tournament(write(tmp_path / "priced", grim))
    exc = error(write(tmp_path / "blind", grim, SMALL + "choice: {price_sensitivity: 0}\n"))
    assert (
        exc.field == "contestants[1]"
        and "cannot play scenario" in exc.message
        and "price_sensitivity 0" in exc.message
    )


def test_scenario_mistakes_name_the_scenario_file(tmp_path):
    exc = error(write(tmp_path, scenario=SMALL.replace("unit_cost: 10", "unit_cost: 0")))
    assert Path(exc.file) == tmp_path / "scenarios" / "small.yaml"
    assert exc.field == "products[0].unit_cost"


def test_not_found_lists_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exc = error(write(tmp_path / "deep", TOURNAMENT.replace("[small]", "[nowhere]")))
    for place in [
        tmp_path / "deep" / "nowhere.yaml",
        tmp_path / "deep" / "scenarios" / "nowhere.yaml",
        tmp_path / "scenarios" / "nowhere.yaml",
    ]:
        assert str(place) in exc.message
    shipped = sorted(path.stem for path in (ROOT / "market" / "scenarios").glob("*.yaml"))
    assert f"shipped: {', '.join(shipped)})" in exc.message


def test_a_name_is_a_shipped_scenario_unless_a_file_near_the_tournament_has_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, TOURNAMENT.replace("[small]", "[small, price_war]"))
    assert load_tournament(path).scenarios["price_war"] == load_scenario("price_war")
    (tmp_path / "scenarios" / "price_war.yaml").write_text(SMALL.replace("name: small", "name: price_war"))
    assert load_tournament(path).scenarios["price_war"].days == 6


def test_yaml_mistakes_name_line_and_column(tmp_path):
    exc = error(write(tmp_path, "name: t\nseed: [1\n"))
    assert exc.field is not None and exc.field.startswith("line ") and "column" in exc.field


def test_a_key_given_twice_is_an_error_not_an_overwrite(tmp_path):
    exc = error(write(tmp_path, TOURNAMENT + "seed: 6\n"))
    assert exc.field == "line 8, column 1"
    assert "'seed'" in exc.message


def test_yaml_anchors_and_merge_keys_still_work(tmp_path):
    text = textwrap.dedent(
        """\
        name: anchors
        scenarios: [small]
        contestants:
          - &base {name: a, kind: fixed_price, params: {markup: 0.3}}
          - <<: *base
            name: b
        """
    )
    tournament = load_tournament(write(tmp_path, text))
    assert [(c.name, c.params) for c in tournament.spec.contestants] == [
        ("a", {"markup": 0.3}),
        ("b", {"markup": 0.3}),
    ]


# ---- shipped files ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SHIPPED_SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_scenarios_load(path):
    scenario = load_scenario(path)
    assert isinstance(scenario, Scenario)
    assert scenario.name == path.stem


def test_shipped_tournament_loads_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tournament = load_tournament(ROOT / "tournaments" / "round_robin.yaml")
    assert set(tournament.scenarios) == {"price_war", "multi_product"}


def test_a_copy_of_the_shipped_tournament_has_the_same_hash(tmp_path):
    shutil.copy(ROOT / "tournaments" / "round_robin.yaml", tmp_path / "round_robin.yaml")
    original = load_tournament(ROOT / "tournaments" / "round_robin.yaml")
    copy = load_tournament(tmp_path / "round_robin.yaml")
    assert original.config_hash == copy.config_hash


# ---- a --weights file --------------------------------------------------------------------


def test_weights_file_holds_the_scoring_mapping(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("win_rate: 2\nmemory: 1\n")
    assert load_weights(path) == ScoringWeights(win_rate=2, validity=0.25, memory=1)


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("validity: many\n", "validity", "valid number"),
        ("scoring: {win_rate: 1}\n", "scoring", "unknown key"),
        ("- 1\n", None, "mapping"),
    ],
)
def test_weights_file_mistakes_name_file_and_field(tmp_path, text, field, words):
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_weights(path)
    assert (caught.value.file, caught.value.field) == (str(path), field)
    assert words in caught.value.message


LLM = "  - {name: m, kind: llm, params: {model: MODEL, SERVER}}\n"
SERVER = "base_url: 'http://127.0.0.1:9/v1', api_key_env: null"


@pytest.mark.parametrize(
    "model, extra, unpriced",
    [
        ("openai/my-vllm-model", "budget: {cost_usd: 5}\n", True),  # no price anywhere: refused, named
        (
            "openai/my-vllm-model",
            "budget: {cost_usd: 5}\nprices: {openai/my-vllm-model: {input: 0.1, output: 0.2}}\n",
            False,
        ),
        ("openai/my-vllm-model", "budget: {tokens: 1000}\n", False),  # a token budget needs no price
        ("openai/gpt-5.4-mini", "budget: {cost_usd: 5}\n", False),  # in the catalogue
        ("local/smollm2", "budget: {cost_usd: 5}\n", False),  # free
    ],
)
def test_a_cost_budget_needs_a_price_for_every_model(tmp_path, model, extra, unpriced):
    entry = LLM.replace("MODEL", model).replace(
        ", SERVER", "" if model.startswith("local/") else f", {SERVER}"
    )
    config = write(tmp_path, TOURNAMENT + entry + extra)
    if not unpriced:
        load_tournament(config)
        return
    with pytest.raises(ConfigError) as caught:
        load_tournament(config)
    assert caught.value.field == "contestants[2].params.model"
    assert "openai/my-vllm-model has no known price" in caught.value.message


def test_turn_deadlines_come_from_the_file_or_from_each_contestants_settings(tmp_path):
    """A model's turn may make three calls in a row (reflect, decide, repair), each with its
    provider's total_timeout; a kind with no view gets the default, 10 s; the file's
    decision_timeout_s is every contestant's."""
    from tournaments.plan import plan_tournament

    llm = (
        "  - {name: m, kind: llm, params: {model: openai/x, base_url: 'http://127.0.0.1:9/v1', "
        "api_key_env: null, total_timeout: 40}}\n"
    )
    lazy = "  - {name: l, kind: tests.doubles:Latency}\n"
    derived = plan_tournament(load_tournament(write(tmp_path, TOURNAMENT + llm + lazy)).spec)
    assert [derived[name].deadline for name in "abml"] == [10.0, 10.0, 120.0, 10.0]
    fixed = load_tournament(
        write(tmp_path, TOURNAMENT.replace("seed: 5", "seed: 5\ndecision_timeout_s: 7") + llm + lazy)
    ).spec
    assert {plan.deadline for plan in plan_tournament(fixed).values()} == {7.0}
