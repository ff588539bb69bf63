"""Which matches a tournament plays: counts, groups, seats, keys, seeds and days."""

from __future__ import annotations

import shutil
from collections import Counter
from itertools import combinations
from math import comb
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.yaml_files import MAX_SEED, ConfigError
from tournaments.adaptive import AdaptiveSchedule
from tournaments.config import Tournament
from tournaments.load import load_tournament
from tournaments.schedule import largest_seed, schedule

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = {
    "products": [{"id": "w", "unit_cost": 10, "reference_price": 20, "base_demand": 30, "initial_stock": 20}],
}
DAYS = {"alpha": 7, "beta": 9}


def names(n: int) -> list[str]:
    return [f"m{i}" for i in range(n)]


def make(folder: Path, n: int = 4, **fields: Any) -> Tournament:
    """A tournament of n fixed-price contestants m0..m{n-1} on scenarios alpha (7 days) and
    beta (9 days), written to folder/t.yaml and loaded as the CLI would."""
    scenarios = folder / "scenarios"
    scenarios.mkdir(exist_ok=True)
    for name, days in DAYS.items():
        (scenarios / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, "days": days, **SCENARIO}))
    spec = {
        "name": "t",
        "scenarios": ["alpha", "beta"],
        "contestants": [{"name": m, "kind": "fixed_price"} for m in names(n)],
        **fields,
    }
    path = folder / "t.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return load_tournament(path)


@pytest.mark.parametrize(("n", "k"), [(2, 2), (4, 2), (5, 2), (5, 3), (6, 4), (3, 3), (4, 1)])
def test_round_robin_plays_every_group_once_per_scenario_and_seed(tmp_path, n, k):
    seeds = [3, 5, 8]
    plan = schedule(make(tmp_path, n, group_size=k, seeds=seeds))
    assert len(plan) == comb(n, k) * len(DAYS) * len(seeds)
    groups = Counter((m.scenario, m.seed, frozenset(m.seats)) for m in plan)
    assert set(groups.values()) == {1}
    expected = {frozenset(g) for g in combinations(names(n), k)}
    for scenario in DAYS:
        for seed in seeds:
            assert {g for (s, sd, g) in groups if (s, sd) == (scenario, seed)} == expected
    assert all(len(m.seats) == len(set(m.seats)) == k for m in plan)


def test_solo_matches_of_a_scenario_and_seed_share_their_draws_and_no_other_matches_do(tmp_path):
    """Solo matches are ranked against the others of their scenario and seed
    (results.scoring.ratings.ranked_matches): they meet the same market."""
    solo = schedule(make(tmp_path, 3, group_size=1, seeds=[1, 2]))
    assert schedule(make(tmp_path, 3, format="solo", seeds=[1, 2])) == solo
    draws = Counter(m.draws for m in solo)
    assert draws == {f"{s}/seed={seed}": 3 for s in DAYS for seed in (1, 2)}
    pairs = schedule(make(tmp_path, 3, group_size=2, seeds=[1, 2]))
    assert [m.draws for m in pairs] == [m.key for m in pairs]
    assert len({m.draws for m in pairs}) == len(pairs)


def test_shipped_round_robin():
    plan = schedule(load_tournament(ROOT / "tournaments" / "round_robin.yaml"))
    assert len(plan) == comb(8, 2) * 2 * 2
    assert {m.seed for m in plan} == {1, 2}
    assert {m.scenario for m in plan} == {"price_war", "multi_product"}


@pytest.mark.parametrize("seeds", [[0, 1], [7, 2, 9, 4], list(range(6))])
def test_seat_rotation_gives_each_of_a_pair_the_first_seat_equally_often(tmp_path, seeds):
    plan = schedule(make(tmp_path, 4, seeds=seeds))
    first: dict[tuple[str, frozenset[str]], Counter[str]] = {}
    for m in plan:
        first.setdefault((m.scenario, frozenset(m.seats)), Counter())[m.seats[0]] += 1
    assert len(first) == comb(4, 2) * len(DAYS)
    for (_, pair), counts in first.items():
        assert {counts[name] for name in pair} == {len(seeds) // 2}


def test_seat_rotation_in_larger_groups_gives_every_seat_to_everyone(tmp_path):
    plan = schedule(make(tmp_path, 4, group_size=3, seeds=[10, 20, 30]))
    seats: dict[tuple[str, frozenset[str]], set[tuple[str, ...]]] = {}
    for m in plan:
        seats.setdefault((m.scenario, frozenset(m.seats)), set()).add(m.seats)
    for (_, group), orders in seats.items():
        assert len(orders) == 3
        for position in range(3):
            assert {order[position] for order in orders} == group


def test_without_rotation_seats_follow_the_file(tmp_path):
    plan = schedule(make(tmp_path, 3, seeds=[1, 2, 3, 4], rotate_seats=False))
    order = names(3)
    for m in plan:
        assert list(m.seats) == sorted(m.seats, key=order.index)


def test_keys_are_unique_and_indices_follow_the_order(tmp_path):
    plan = schedule(make(tmp_path, 5, group_size=3, repetitions=4))
    keys = [m.key for m in plan]
    assert len(set(keys)) == len(keys)
    assert [m.index for m in plan] == list(range(len(plan)))


def test_same_yaml_gives_the_same_schedule(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = schedule(make(tmp_path / "a", 5, group_size=2, seeds=[4, 1]))
    again = schedule(load_tournament(tmp_path / "a" / "t.yaml"))
    elsewhere = schedule(make(tmp_path / "b", 5, group_size=2, seeds=[4, 1]))
    assert first == again == elsewhere
    assert [m.key for m in first] == [m.key for m in elsewhere]


def test_a_key_names_the_match_not_its_seat_order(tmp_path):
    """The key depends on scenario, seed and who plays, so resuming recognises a match
    whatever seat order rotation gave it."""
    plan = schedule(make(tmp_path, 3, seeds=[1, 2]))
    for m in plan:
        assert m.scenario in m.key and f"seed={m.seed}" in m.key
        assert all(name in m.key for name in m.seats)
    by_identity = {(m.scenario, m.seed, frozenset(m.seats)): m.key for m in plan}
    assert len(set(by_identity.values())) == len(plan)


def test_free_for_all_puts_everyone_in_every_match(tmp_path):
    plan = schedule(make(tmp_path, 5, format="free_for_all", seeds=[1, 2, 3]))
    assert len(plan) == len(DAYS) * 3
    for m in plan:
        assert sorted(m.seats) == names(5)
    assert len({m.key for m in plan}) == len(plan)
    assert len({m.seats[0] for m in plan}) == 3  # rotation: three seeds, three different first seats


def test_gauntlet_pairs_the_challenger_with_each_other_contestant(tmp_path):
    plan = schedule(make(tmp_path, 5, format="gauntlet", challenger="m2", repetitions=2))
    assert len(plan) == 4 * len(DAYS) * 2
    for m in plan:
        assert len(m.seats) == 2 and "m2" in m.seats
    for scenario in DAYS:
        for seed in (0, 1):
            rivals = [
                next(s for s in m.seats if s != "m2")
                for m in plan
                if (m.scenario, m.seed) == (scenario, seed)
            ]
            assert sorted(rivals) == ["m0", "m1", "m3", "m4"]


def test_repetitions_are_seeds_from_zero(tmp_path):
    plan = schedule(make(tmp_path, 2, repetitions=3))
    assert sorted({m.seed for m in plan}) == [0, 1, 2]
    assert len(plan) == len(DAYS) * 3


def test_one_seed_zero_by_default(tmp_path):
    tournament = make(tmp_path, 2)
    assert tournament.spec.seed_list == [0]
    assert {m.seed for m in schedule(tournament)} == {0}


def test_seeds_are_used_as_given(tmp_path):
    plan = schedule(make(tmp_path, 2, seeds=[42, 7]))
    assert [m.seed for m in plan if m.scenario == "alpha"] == [42, 7]


def test_days_come_from_each_scenario(tmp_path):
    plan = schedule(make(tmp_path, 3))
    assert {m.scenario: m.days for m in plan} == DAYS


def test_days_override_every_scenario(tmp_path):
    plan = schedule(make(tmp_path, 3, days=4))
    assert {m.days for m in plan} == {4}


def test_scenario_is_named_by_its_file_and_resolvable(tmp_path):
    tournament = make(tmp_path, 2)
    for m in schedule(tournament):
        assert tournament.scenarios[m.scenario].name == m.scenario


def test_scenarios_by_path(tmp_path):
    make(tmp_path, 2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(tmp_path / "scenarios" / "beta.yaml", elsewhere / "b.yaml")
    text = (tmp_path / "t.yaml").read_text().replace("- beta", "- elsewhere/b.yaml")
    (tmp_path / "t.yaml").write_text(text)
    plan = schedule(load_tournament(tmp_path / "t.yaml"))
    assert {m.scenario: m.days for m in plan} == DAYS


@pytest.mark.parametrize(
    ("fields", "n"),
    [
        ({"format": "adaptive"}, 3),
        ({"format": "adaptive", "sampling_repeats": 2, "max_matches": 40}, 4),
        ({"format": "adaptive", "group_size": 3, "max_matches": 25}, 4),
        ({"format": "round_robin"}, 3),
        ({"format": "free_for_all"}, 3),
    ],
)
def test_the_largest_seed_is_the_last_of_a_group_dealt_every_match_it_may_play(tmp_path, fields, n):
    """An adaptive run's dealer giving one group every match under the cap reaches it; other
    formats play the file's seeds."""
    tournament = make(tmp_path, n, seeds=[9, 4], **fields)
    if fields["format"] == "adaptive":
        dealer = AdaptiveSchedule(tournament)
        group = tuple(names(n)[: tournament.spec.group_size])
        played = dealer.deal([group] * dealer.cap, dealer.cap)
    else:
        played = schedule(tournament)
    assert max(m.seed for m in played) == largest_seed(tournament)


def test_an_adaptive_file_whose_seeds_could_pass_the_largest_a_database_holds_is_refused(tmp_path):
    """Three pairs on two scenarios, a match each of the cap of 6: one pair could play six,
    its sixth in the third turn, seed s + 2 for the file's seed s."""
    assert largest_seed(make(tmp_path, 3, format="adaptive", seeds=[MAX_SEED - 2])) == MAX_SEED
    with pytest.raises(ConfigError) as refused:
        make(tmp_path, 3, format="adaptive", seeds=[MAX_SEED - 1])
    assert refused.value.field == "seeds" and f"up to {MAX_SEED + 1};" in refused.value.message
