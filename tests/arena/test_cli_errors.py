"""The CLI's promise for mistakes a user can fix: one line on stderr naming the file and the
field, exit status 2, no traceback, and nothing written to the database.

Everything goes through the real Typer app; no tournament is played (no Ray is started:
every case here fails before the runner is called, or never reaches it).
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from arena.cli import app, user_errors
from market.errors import UserError
from results.db import engine_for
from tournaments.config import load_tournament
from tournaments.schedule import schedule

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "tournaments" / "round_robin.yaml"

runner = CliRunner()

BASE = """\
name: t
scenarios: [price_war]
contestants:
  - {name: a, kind: fixed_price}
  - {name: b, kind: random}
"""

BROKEN_SCENARIO = """\
name: broken
days: 5
products:
  - id: w
    unit_cost: -1
    reference_price: 2
    base_demand: 5
"""

BLIND_SCENARIO = """\
name: blind
days: 5
products:
  - {id: w, unit_cost: 1, reference_price: 2, base_demand: 5}
choice: {price_sensitivity: 0}
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder, made the working directory (paths are reported as given)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARENA_DB", raising=False)
    return tmp_path


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def one_error_line(result) -> str:
    """Assert the user-error contract and return the one line on stderr."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.exit_code == 2, (result.exit_code, output, result.exception)
    # exit 2 came from typer.Exit, not from an exception that escaped
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert result.stdout.strip() == "", result.stdout
    return lines[0]


def db_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("x.db"))


def case(id: str, files: dict[str, str], target: str, needles: list[str], named: str | None = None):
    """`files` are written, `target` is given to the CLI, and the error line must name the
    file `named` (default: the target) and contain every needle."""
    return pytest.param(files, target, named or target, needles, id=id)


CASES = [
    case(
        "yaml-syntax",
        {"t.yaml": "name: t\ncontestants: [\n  - name: a\n"},
        "t.yaml",
        ["invalid YAML", "line 3, column 3"],
    ),
    case("top-level-list", {"t.yaml": "- name: t\n- seed: 1\n"}, "t.yaml", ["mapping"]),
    case("empty-file", {"t.yaml": ""}, "t.yaml", ["mapping"]),
    case("missing-file", {}, "missing.yaml", ["no such file"]),
    case("unknown-top-level-key", {"t.yaml": BASE + "colour: red\n"}, "t.yaml", ["colour", "unknown key"]),
    case(
        "unknown-kind",
        {"t.yaml": BASE.replace("kind: random", "kind: oracle")},
        "t.yaml",
        ["contestants[1].kind", "'oracle'", "fixed_price"],
    ),
    case(
        "unknown-param-key",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: {bogus: 1}}")},
        "t.yaml",
        ["contestants[0].params.bogus"],
    ),
    case(
        # price = unit_cost * (1 + markup) must stay positive: the model wants markup > -1
        "negative-markup",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: {markup: -1.5}}")},
        "t.yaml",
        ["contestants[0].params.markup", "greater than -1"],
    ),
    case(
        "params-not-a-mapping",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: 3}")},
        "t.yaml",
        ["contestants[0].params", "dictionary"],
    ),
    case(
        "params-in-conflict",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: {markup: 0.2, price: 9}}")},
        "t.yaml",
        ["contestants[0].params: give markup or price, not both"],
    ),
    case(
        "duplicate-names",
        {"t.yaml": BASE.replace("name: b", "name: a")},
        "t.yaml",
        ["contestants", "unique", "repeated: a"],
    ),
    case(
        "group-size-too-large",
        {"t.yaml": BASE + "group_size: 3\n"},
        "t.yaml",
        ["group_size", "3", "2 contestants"],
    ),
    case(
        "group-size-outside-round-robin",
        {"t.yaml": BASE + "format: free_for_all\ngroup_size: 2\n"},
        "t.yaml",
        ["group_size", "round_robin"],
    ),
    case(
        "gauntlet-without-challenger",
        {"t.yaml": BASE + "format: gauntlet\n"},
        "t.yaml",
        ["challenger", "gauntlet"],
    ),
    case(
        "gauntlet-unknown-challenger",
        {"t.yaml": BASE + "format: gauntlet\nchallenger: zed\n"},
        "t.yaml",
        ["challenger", "'zed'", "not among the contestants"],
    ),
    case(
        "challenger-outside-gauntlet",
        {"t.yaml": BASE + "challenger: a\n"},
        "t.yaml",
        ["challenger", "gauntlet"],
    ),
    case(
        "seeds-and-repetitions",
        {"t.yaml": BASE + "seeds: [1, 2]\nrepetitions: 3\n"},
        "t.yaml",
        ["seeds", "repetitions"],
    ),
    case("empty-seeds", {"t.yaml": BASE + "seeds: []\n"}, "t.yaml", ["seeds", "at least 1"]),
    case("repeated-seed", {"t.yaml": BASE + "seeds: [4, 5, 4]\n"}, "t.yaml", ["seeds", "repeated: 4"]),
    case(
        "repeated-yaml-key", {"t.yaml": BASE + "seed: 1\nseed: 2\n"}, "t.yaml", ["line 7", "'seed'", "twice"]
    ),
    case("days-zero", {"t.yaml": BASE + "days: 0\n"}, "t.yaml", ["days", "greater than or equal to 1"]),
    case(
        "max-concurrent-zero",
        {"t.yaml": BASE + "max_concurrent_matches: 0\n"},
        "t.yaml",
        ["max_concurrent_matches", "greater than or equal to 1"],
    ),
    case(
        "unknown-scenario",
        {"t.yaml": BASE.replace("[price_war]", "[price_war, atlantis]")},
        "t.yaml",
        ["scenarios[1]", "'atlantis' not found", "looked in", os.path.join("scenarios", "atlantis.yaml")],
    ),
    case(
        "scenario-invalid-field",
        {"t.yaml": BASE.replace("[price_war]", "[broken]"), "scenarios/broken.yaml": BROKEN_SCENARIO},
        "t.yaml",
        ["products[0].unit_cost", "greater than 0"],
        "broken.yaml",
    ),
    case(
        "scenario-without-price-equilibria",
        {
            "t.yaml": BASE.replace("kind: random", "kind: grim_trigger").replace("[price_war]", "[blind]"),
            "scenarios/blind.yaml": BLIND_SCENARIO,
        },
        "t.yaml",
        ["contestants[1]", "cannot play scenario 'blind'", "grim_trigger", "price_sensitivity 0"],
    ),
    case(
        "scenario-yaml-syntax",
        {
            "t.yaml": BASE.replace("[price_war]", "[broken]"),
            "scenarios/broken.yaml": "name: broken\ndays: [1\n",
        },
        "t.yaml",
        ["invalid YAML", "line 3"],
        "broken.yaml",
    ),
    case(
        # rich markup in what the user wrote must be printed, not interpreted (nor crash)
        "markup-in-values",
        {"t.yaml": BASE.replace("kind: random", 'kind: "[/bold]"')},
        "t.yaml",
        ["contestants[1].kind", "'[/bold]'"],
    ),
    case(
        "collusion-window-zero",
        {"t.yaml": BASE + "collusion: {window: 0}\n"},
        "t.yaml",
        ["collusion.window", "greater than 0"],
    ),
    case(
        "collusion-unknown-key",
        {"t.yaml": BASE + "collusion: {min_day: 3}\n"},
        "t.yaml",
        ["collusion.min_day", "unknown key"],
    ),
    case(
        "goal-on-unknown-metric",
        {"t.yaml": BASE + "goals: [{metric: sales, at_least: 10}]\n"},
        "t.yaml",
        ["goals[0].metric", "unknown metric 'sales'", "revenue"],
    ),
    case(
        "goal-share-above-one",
        {"t.yaml": BASE + "goals: [{metric: market_share, at_least: 15}]\n"},
        "t.yaml",
        ["goals[0].at_least", "market_share is a share, so 15 cannot bound it"],
    ),
    case(
        "goal-with-two-bounds",
        {"t.yaml": BASE + "goals: [{metric: revenue, at_least: 1, at_most: 5}]\n"},
        "t.yaml",
        ["goals[0]", "exactly one of at_least and at_most"],
    ),
    case(
        "scenario-goal-on-unknown-metric",
        {
            "t.yaml": BASE.replace("[price_war]", "[goal]"),
            "scenarios/goal.yaml": BLIND_SCENARIO.replace("blind", "goal").replace(
                "choice: {price_sensitivity: 0}", "goals: [{metric: happiness, at_least: 4}]"
            ),
        },
        "t.yaml",
        ["scenarios[0]", "scenario 'goal': goal on unknown metric 'happiness'"],
    ),
    case("talk-not-a-flag", {"t.yaml": BASE + "talk: yes-please\n"}, "t.yaml", ["t.yaml: talk:", "boolean"]),
    case(
        "markup-in-file-name",
        {"t[draft].yaml": BASE + "colour: red\n"},
        "t[draft].yaml",
        ["t[draft].yaml: colour: unknown key"],
    ),
]


@pytest.mark.parametrize("command", ["run", "validate"])
@pytest.mark.parametrize(("files", "target", "named", "needles"), CASES)
def test_config_mistakes_are_one_line_exit_2_and_write_nothing(work, command, files, target, named, needles):
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    args = [command, work / target]
    if command == "run":
        args += ["--db", f"sqlite:///{work}/x.db"]
    line = one_error_line(invoke(*args))
    assert named in line
    for needle in needles:
        assert needle in line, (needle, line)
    assert db_files(work) == []


def test_paths_are_named_as_given(work):
    """A relative path is reported as the user typed it."""
    (work / "t.yaml").write_text(BASE + "days: 0\n")
    line = one_error_line(invoke("run", "t.yaml", "--db", f"sqlite:///{work}/x.db"))
    assert line == "error: t.yaml: days: Input should be greater than or equal to 1"
    assert db_files(work) == []


def test_a_real_process_prints_one_line_and_no_traceback(work):
    """The same contract outside CliRunner: the installed entry point, real stderr."""
    (work / "t.yaml").write_text(BASE.replace("kind: random", "kind: oracle"))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from arena.cli import app; app()",
            "run",
            "t.yaml",
            "--db",
            f"sqlite:///{work}/x.db",
        ],
        capture_output=True,
        text=True,
        cwd=work,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        },
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "t.yaml" in lines[0] and "contestants[1].kind" in lines[0] and "oracle" in lines[0]
    assert proc.stdout == ""
    assert db_files(work) == []


# ---- validate ----------------------------------------------------------------------------


def test_validate_shipped_tournament_prints_the_scheduled_match_count():
    result = invoke("validate", SHIPPED)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    planned = len(schedule(load_tournament(SHIPPED)))
    assert planned == 28 * 2 * 2  # C(8, 2) pairs x 2 scenarios x 2 seeds
    assert f"{planned} matches" in result.stdout
    assert len(result.stdout.strip().splitlines()) == 1  # long paths are not wrapped


def test_validate_never_touches_a_database(work, monkeypatch):
    monkeypatch.setenv("ARENA_DB", "notadb://x")
    (work / "t.yaml").write_text(BASE)
    result = invoke("validate", "t.yaml")
    assert result.exit_code == 0, result.stderr
    assert "t.yaml: ok" in result.stdout and "1 matches" in result.stdout
    assert not (work / "arena.db").exists()


# ---- databases ---------------------------------------------------------------------------


def test_unknown_database_scheme(work):
    line = one_error_line(invoke("leaderboard", "--db", "notadb://x"))
    assert "notadb" in line


def test_unknown_database_scheme_in_run_fails_before_anything_runs(work):
    (work / "t.yaml").write_text(BASE)
    line = one_error_line(invoke("run", "t.yaml", "--db", "notadb://x"))
    assert "notadb" in line


def test_database_url_from_environment(work, monkeypatch):
    monkeypatch.setenv("ARENA_DB", "notadb://x")
    line = one_error_line(invoke("matches"))
    assert "notadb" in line and "$ARENA_DB" in line


def test_unparseable_database_url(work):
    line = one_error_line(invoke("leaderboard", "--db", "::::"))
    assert "::::" in line


def test_unopenable_sqlite_file(work):
    line = one_error_line(invoke("leaderboard", "--db", f"sqlite:///{work}/no/such/folder/x.db"))
    assert "x.db" in line


def test_a_sqlite_database_opened_for_reading_refuses_a_run_in_one_line_and_still_reads(work):
    """Opened read-only through its URL: the case of a file the user may not write (the tests
    run as root, whom file permissions do not stop)."""
    engine_for(f"sqlite:///{work}/x.db").dispose()
    url = f"sqlite:///file:{work}/x.db?mode=ro&uri=true"
    (work / "t.yaml").write_text(BASE)
    line = one_error_line(invoke("run", "t.yaml", "--db", url))
    assert (
        "cannot write to database sqlite:///file" in line
        and "/x.db?mode=ro" in line
        and "readonly database" in line
    )
    read = invoke("leaderboard", "--db", url, "--json")
    assert read.exit_code == 0 and read.stdout.strip() == "[]", read.stderr
    with sqlite3.connect(work / "x.db") as connection:
        assert connection.execute("SELECT count(*) FROM tournament").fetchone()[0] == 0


def test_show_unknown_match(work):
    engine_for(f"sqlite:///{work}/x.db").dispose()  # an empty database
    line = one_error_line(invoke("show", "999", "--db", f"sqlite:///{work}/x.db"))
    assert "no match with id 999" in line


@pytest.mark.parametrize("command", [["leaderboard"], ["matches"], ["show", "1"]])
def test_reading_commands_do_not_create_a_database(work, command):
    line = one_error_line(invoke(*command, "--db", f"sqlite:///{work}/missing.db"))
    assert "no database at" in line and "missing.db" in line
    assert not (work / "missing.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["leaderboard"],
        ["matches", "--json"],
        ["show", "1"],
        ["run", "t.yaml"],
    ],
    ids=["leaderboard", "matches", "show", "run"],
)
@pytest.mark.parametrize(
    "url",
    [
        "postgresql://arena:hunter2secret@127.0.0.1:1/arena",
        "postgresql+psycopg2://arena:hunter2secret@127.0.0.1:1/arena?connect_timeout=2",
        "postgresql+psycopg://arena:hunter2secret@127.0.0.1:1/arena?connect_timeout=2",
        "postgresql://arena:hunter2secret@127.0.0.1:notaport/arena",
    ],
    ids=["default-driver", "psycopg2", "psycopg", "unparseable"],
)
def test_database_password_never_printed(work, args, url):
    (work / "t.yaml").write_text(BASE)
    result = invoke(*args, "--db", url)
    line = one_error_line(result)
    assert "hunter2secret" not in result.stdout + result.stderr
    assert "arena" in line and "***" in line


# ---- arena rate and leaderboard options --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("", ["empty file", "match, contestant and rank or score"]),
        ("match,rank\n1,1\n", ["row 1", "no 'contestant' column"]),
        ("match,contestant\n1,a\n", ["row 1", "needs a 'rank' or a 'score' column"]),
        ("match,contestant,rank,score\n1,a,1,2\n", ["row 1", "not both"]),
        ("match,contestant,rank,rank\n1,a,1,1\n", ["row 1", "'rank' appears twice"]),
        ("match,contestant,rank\n", ["no results after the header"]),
        (
            "match,contestant,rank\n1,a,1\n1,b,first\n",
            ["row 3, column rank", "'first' is not a whole number"],
        ),
        ("match,contestant,rank\n1,a,0\n", ["row 2, column rank", "'0'"]),
        ("match,contestant,score\n1,a,nan\n", ["row 2, column score", "'nan' is not a finite number"]),
        ("match,contestant,rank\n1,,1\n", ["row 2, column contestant", "empty"]),
        (
            "match,contestant,rank\n1,a,1\n\n1,a,2\n",
            ["row 4, column contestant", "'a' appears twice in match '1'"],
        ),
        ("match,contestant,rank\n1,a\n", ["row 2", "2 fields where the header has 3"]),
        ('match,contestant,rank\n1,"a\n', ["row 2", "not valid CSV"]),
    ],
    ids=[
        "empty",
        "no-contestant",
        "no-measure",
        "both",
        "repeated-column",
        "no-rows",
        "word-rank",
        "zero-rank",
        "nan-score",
        "empty-cell",
        "twice",
        "short-row",
        "unclosed-quote",
    ],
)
def test_rate_bad_csv_is_one_line_naming_file_row_and_column(work, text, needles):
    (work / "r.csv").write_text(text)
    line = one_error_line(invoke("rate", "r.csv"))
    assert "r.csv: " in line
    for needle in needles:
        assert needle in line, line


def test_rate_missing_file(work):
    assert "nope.csv: no such file" in one_error_line(invoke("rate", "nope.csv", "--json"))


def test_rate_unknown_anchor(work):
    (work / "r.csv").write_text("match,contestant,rank\n1,a,1\n1,b,2\n")
    assert "reference contestant 'c'" in one_error_line(invoke("rate", "r.csv", "--anchor", "c"))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--scenario", "fog"], "no stored match of scenario 'fog'"),
        (["--contestant", "zz"], "no contestant named 'zz'"),
        (["--tournament", "3"], "no tournament with id 3"),
        (["--weights", "w.yaml"], "w.yaml: memory: Input should be greater than or equal to 0"),
        (["--weights", "none.yaml"], "none.yaml: no such file"),
    ],
    ids=["scenario", "contestant", "tournament", "weights", "no-weights-file"],
)
def test_leaderboard_selection_mistakes(work, args, needle):
    engine_for(f"sqlite:///{work}/x.db").dispose()  # an empty database
    (work / "w.yaml").write_text("memory: -1\n")
    assert needle in one_error_line(invoke("leaderboard", "--db", f"sqlite:///{work}/x.db", *args))


# ---- help --------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"]], ids=["arena", "run"])
def test_help_mentions_resume_and_address(args):
    result = invoke(*args)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "--resume" in result.stdout
    assert "--address" in result.stdout


# Exceptions of arena's own that a user cannot fix by changing a file or an option, and why.
NOT_THE_USERS = {
    "FieldError": "raised inside a pydantic check, which turns it into the ConfigError of its field",
    "EquilibriumError": "the solver failed; `arena equilibrium` words it as the scenario's InputFileError",
    "ProviderError": "a model call failed for good: a fault of the merchant, or a stopped run (exit 4)",
    "CallsStopped": "the run's calls stopped (budget, broken model): exits 3 or 4 with its own line",
    "DeadlinePassed": "a turn's time ran out before its model call could start: the turn is late",
    "BadResponse": "an answer a provider could not read: retried, then a ProviderError",
    "_AttemptFailed": "one attempt of a call, inside the retry loop",
    "_Late": "an admission whose patience ran out, inside the call coordinator: the turn is late",
    "Busy": "the embedded model served other calls for an attempt's timeout: the attempt is retried",
    "TurnStuck": "a merchant's turn outlasted every bound: the run stops with its own line (exit 3)",
    "MatchLost": "a node or a runner died: the match is played again",
    "SeatLost": "a merchant's host died with its node: its match is lost and played again",
    "Forgotten": "a host restarted: the merchant starts afresh",
    "HostGone": "a host's connection closed: the merchant's turn failed",
    "ChromiumMissing": "tests and scripts only: the report itself needs no browser",
    "ToolError": "an agent's tool call it cannot carry out: its result tells the model why",
}


def _arena_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in arena's five packages, by name."""
    found: dict[str, type[BaseException]] = {}
    for package in ("market", "contestants", "tournaments", "results", "arena"):
        root = importlib.import_module(package)
        names = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")]
        for name in names:
            module = importlib.import_module(name)
            for value in vars(module).values():
                is_exception = inspect.isclass(value) and issubclass(value, BaseException)
                if is_exception and value.__module__ == name:
                    found[value.__name__] = value
    return found


def test_every_exception_of_ours_is_a_user_error_or_says_why_not():
    """A new exception must take a side: derive from UserError (one line, exit 2) or be
    listed here with the reason a user cannot fix it."""
    exceptions = _arena_exceptions()
    undecided = sorted(
        n for n, c in exceptions.items() if not issubclass(c, UserError) and n not in NOT_THE_USERS
    )
    assert undecided == []
    assert set(NOT_THE_USERS) <= set(exceptions), "an exception listed here no longer exists"
    assert sum(issubclass(c, UserError) for c in exceptions.values()) >= 10


@pytest.mark.parametrize(
    "name", sorted(n for n, c in _arena_exceptions().items() if issubclass(c, UserError))
)
def test_every_user_error_ends_the_command_with_status_2(name, capsys):
    error = _arena_exceptions()[name]
    instance = error.__new__(error)
    Exception.__init__(instance, f"{name}: what is wrong")
    with pytest.raises(typer.Exit) as ended, user_errors():
        raise instance
    assert ended.value.exit_code == 2
    assert capsys.readouterr().err.strip().endswith(f"{name}: what is wrong")
