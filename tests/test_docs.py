"""Every example in README.md and docs/ works as written: each YAML block validates as the file
it is, or as the part of a file its marker names; each command line names a real `arena`
command with real options and values, says `uv run` as a fresh clone needs, and each script or
test it runs exists; the defaults the docs state are the code's.

A YAML block is a whole file unless an HTML comment on the line before its fence says
otherwise (invisible when the page is rendered):

- no marker: a tournament file if it has `contestants:`, else a scenario file;
- `<!-- file: weights -->`: a `--weights` file of `arena leaderboard`;
- `<!-- fragment: scenario NAME -->`: keys of a scenario file, checked in place of those of the
  shipped scenario NAME;
- `<!-- fragment: contestants NAME -->`: entries of a tournament's `contestants:`, checked in a
  tournament that plays them on the shipped scenario NAME; `; defaults but KEY, KEY` after NAME
  says that every parameter the entries give is its kind's default but those named, which are
  not;

A block of any language after `<!-- copy of PATH -->` (PATH from the repository's root) is that
file whole: the file the suite runs is the one the page shows.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args

import pytest
import typer
import yaml

from arena.cli import app
from common.yaml_files import parse_yaml, validated
from contestants.kinds import validate_params
from contestants.llm.providers import validate_settings
from market.scenario import SHIPPED_SCENARIOS, Scenario
from results.scoring.composite import ScoringWeights
from tournaments.load import load_tournament
from tournaments.schedule import schedule

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLI = typer.main.get_command(app)
SHELL = {"", "bash", "sh", "shell", "console"}  # a fence's languages whose lines are commands


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, its text, the marker before its fence."""

    page: Path
    line: int  # its first line of text, counted from 1
    language: str
    text: str
    marker: str | None

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_and_prose(page: Path) -> tuple[list[Block], list[tuple[int, str]]]:
    """A page's fenced blocks, and its text outside them as paragraphs (first line, text)."""
    lines = [*page.read_text().splitlines(), ""]
    blocks, prose, paragraph = [], [], []
    i = 0
    while i < len(lines):
        fence = re.match(r"\s*(```+|~~~+)\s*(\S*)", lines[i])
        if (fence or not lines[i].strip()) and paragraph:  # a paragraph ends
            prose.append((i + 1 - len(paragraph), "\n".join(paragraph)))
            paragraph = []
        if fence is None:
            paragraph += [lines[i]] if lines[i].strip() else []
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence.group(1)))
        marker = re.fullmatch(r"\s*<!--\s*(.*?)\s*-->\s*", lines[i - 1]) if i else None
        text = "\n".join(lines[i + 1 : end])
        blocks.append(Block(page, i + 2, fence.group(2), text, marker.group(1) if marker else None))
        i = end + 1
    return blocks, prose


YAML_BLOCKS = [b for page in PAGES for b in blocks_and_prose(page)[0] if b.language == "yaml"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_yaml_is_fenced_as_yaml(page):
    """A block of YAML fenced otherwise (```yml, or no language) would escape the check above."""
    untagged = [
        f"{b.page.name}:{b.line}"
        for b in blocks_and_prose(page)[0]
        if b.language == "yml" or (b.language in ("", "text") and _looks_like_a_file(b.text))
    ]
    assert untagged == []


def _looks_like_a_file(text: str) -> bool:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and bool({"contestants", "scenarios", "products"} & data.keys())


# ---- YAML blocks


@pytest.mark.usefixtures("keys")
@pytest.mark.parametrize("block", YAML_BLOCKS, ids=str)
def test_every_yaml_block_is_a_valid_file_or_the_fragment_it_says(block: Block):
    path = block.page.parent / f"{block.page.stem}-{block.line}.yaml"  # what errors name
    marker = block.marker or ""
    marker = "" if marker.startswith("copy of ") else marker  # a file shown whole is a whole file
    if match := re.fullmatch(r"fragment: contestants (\w+)(?:; defaults but (.+))?", marker):
        data = yaml.safe_load(block.text)
        tournament = {"name": "docs", "format": "solo", "scenarios": [match.group(1)], "contestants": data}
        schedule(load_tournament(path, yaml.safe_dump(tournament)))
        if match.group(2):
            assert_defaults(data, {key.strip() for key in match.group(2).split(",")})
        return
    data = parse_yaml(path, block.text)
    if match := re.fullmatch(r"fragment: scenario (\w+)", marker):
        shipped = SHIPPED_SCENARIOS / f"{match.group(1)}.yaml"
        validated(path, Scenario, {**parse_yaml(shipped, shipped.read_text()), **data})
    elif marker == "file: weights":
        validated(path, ScoringWeights, data)
    elif marker == "" and "contestants" in data:
        schedule(load_tournament(path, block.text))  # as `arena validate` checks it
    elif marker == "":
        validated(path, Scenario, data)
    else:
        pytest.fail(f"{block}: unknown marker <!-- {marker} -->")


COPIES = [b for page in PAGES for b in blocks_and_prose(page)[0] if (b.marker or "").startswith("copy of ")]


@pytest.mark.parametrize("block", COPIES, ids=str)
def test_a_block_marked_as_a_copy_is_the_file_whole(block: Block):
    path = ROOT / (block.marker or "").removeprefix("copy of ")
    assert block.text == path.read_text().rstrip("\n"), f"{block} is not {path.relative_to(ROOT)} as it is"


def defaults(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """Every parameter of a contestant of `kind` at its default, as a file would write it; for a
    language model, with the settings of the provider of the model `params` names."""
    found = validate_params(kind, {}).model_dump(mode="json")
    if kind == "llm":  # the settings of the provider `params` names, at their defaults
        found |= validate_settings(params.get("model", found["model"])).model_dump(mode="json")
    return found


def assert_defaults(entries: list[dict[str, Any]], unlike: set[str]) -> None:
    """Each entry's params are their defaults, but those in `unlike`, which are not."""
    for entry in entries:
        params = entry.get("params", {})
        default = defaults(entry["kind"], params)
        shown = {key: value for key, value in params.items() if key not in unlike}
        assert shown == {key: default[key] for key in shown}, entry["name"]
        assert all(params[key] != default.get(key) for key in unlike), (entry["name"], unlike)


def documented_table(page: str, heading: str) -> list[list[str]]:
    """The rows of the first table under `heading` in docs/`page`, each a list of its cells."""
    lines = (ROOT / "docs" / page).read_text().split(f"\n{heading}\n", 1)[1].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[first:]))
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in table[2:]]  # no header


def documented(text: str) -> float | str:
    """A default as the docs write it: 100,000; 4 × 10⁻⁶; `frozen`."""
    superscript = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
    text = text.strip("`").replace(",", "").replace("−", "-")
    if match := re.fullmatch(r"([\d.]+) × 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", text):
        return float(match.group(1)) * 10 ** int(match.group(2).translate(superscript))
    return float(text) if re.fullmatch(r"-?[\d.]+", text) else text


def test_the_rule_baselines_defaults_are_the_code_s():
    """docs/contestants.md's table of rule baselines gives a parameter's default after its name
    (`markup` 0.5; `fault` raise, hang, ...: the first is the default): each is the code's."""
    rows = documented_table("contestants.md", "## Rule baselines")
    stated = {
        (kind.strip("`"), name): documented(value)
        for kind, _, params in rows
        for name, value in re.findall(r"`(\w+)` (-?[\d.]+|[a-z]+)\b", params)
    }
    assert stated == {(kind, name): defaults(kind, {})[name] for kind, name in stated}
    assert {kind for kind, _ in stated} >= {"fixed_price", "random", "best_response", "cartel"}


def test_the_q_learners_defaults_are_the_code_s():
    """docs/contestants.md's table of the Q-learner's parameters: every one, at the code's default."""
    rows = documented_table("contestants.md", "## Q-learning merchants (kind `qlearning`)")
    stated = {name.strip("`"): documented(value) for name, value, _ in rows}
    assert stated == defaults("qlearning", {})


# ---- command lines

PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(:[A-Z]+)?(\.[a-z]+)?")  # FILE, ID, CONFIG.yaml, HOST:PORT


@dataclass(frozen=True)
class Command:
    where: str
    text: str
    typed: bool  # from a code block, to be typed as it is; an inline one may name an option alone


def commands(page: Path) -> list[Command]:
    """The command lines of a page: in its shell blocks, a line (after a `$ ` prompt, joined
    with the lines that continue it) that runs arena, python or pytest; in its text, a code span
    that starts `arena` or `uv run`."""
    blocks, prose = blocks_and_prose(page)
    found = []
    for block in (b for b in blocks if b.language in SHELL):
        lines, i = block.text.splitlines(), 0
        while i < len(lines):
            whole = [lines[i].removeprefix("$ ")]
            while i + 1 < len(lines) and (whole[-1].endswith("\\") or re.match(r"\s+[\[-]", lines[i + 1])):
                i += 1
                whole = [*whole[:-1], whole[-1].removesuffix("\\"), lines[i]]
            i += 1
            if re.match(r"(\w+=\S+ )*(uv run|arena |python |pip )", whole[0]):
                found += [
                    Command(str(block), part.strip(), typed=True)
                    for part in re.split(r"&&|;|\|\|", " ".join(whole))
                ]
    for first, paragraph in prose:
        for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", paragraph):
            text = " ".join(span.replace("\\|", "|").split())
            if re.match(r"(\w+=\S+ )*(uv run |arena [a-z]|python \S+\.py)", text):
                found.append(Command(f"{page.relative_to(ROOT)}:{first}", text, typed=False))
    return found


def filler(parameter: Any) -> str:
    """A value that stands for a placeholder of `parameter`: its type's simplest."""
    annotation = parameter.type_descriptor.annotation
    annotation = (get_args(annotation) or [annotation])[0]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return str(next(iter(annotation)).value)
    return "1" if annotation in (int, float) else "x"


def arena_problem(words: list[str], typed: bool) -> str | None:
    """What is wrong with `arena WORDS` (the words after `arena`), or None."""
    if not words or words == ["--help"]:
        return None
    command = CLI.commands.get(words[0])
    if command is None:
        return f"no command {words[0]!r} (arena has {', '.join(CLI.commands)})"
    if "--help" in words:
        return None
    options = {opt: p for p in command.params if p.param_type_name == "option" for opt in p.opts}
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    given: list[str] = []
    seen: set[str] = set()
    rest = [w.strip("[]") for w in words[1:] if w.strip("[]") not in ("", "...")]
    while rest:
        word = rest.pop(0)
        if word.startswith("-"):
            name, _, value = word.partition("=")
            option = options.get(name)
            if option is None:
                return f"{command.name} has no option {name}"
            seen.add(option.name)
            given.append(name)
            if option.is_flag:
                continue
            if not value:
                if not rest or rest[0].startswith("-"):
                    if typed:
                        return f"{name} needs a value"
                    rest.insert(0, filler(option))  # an inline span may name the option alone
                value = rest.pop(0)
            given.append(filler(option) if PLACEHOLDER.fullmatch(value) else value)
        elif re.fullmatch(r"[\w.-]+/\S+\.ya?ml", word) and not (ROOT / word).is_file():
            return f"no such file in the clone: {word}"
        else:
            if len(seen & {a.name for a in arguments}) == len(arguments):
                return f"{command.name} takes no argument {word!r} here"
            argument = next(a for a in arguments if a.name not in seen)
            seen.add(argument.name)
            given.append(filler(argument) if PLACEHOLDER.fullmatch(word) else word)
    if not typed:  # a span that names options alone: what it leaves out stands as given
        for missing in (p for p in command.params if p.required and p.name not in seen):
            given += [filler(missing)] if missing.param_type_name == "argument" else [missing.opts[0], "x"]
    try:
        command.make_context(command.name, given)
    except typer.TyperException as exc:
        return exc.format_message()
    return None


def command_problem(command: Command) -> str | None:
    """What is wrong with a command line of the docs, or None."""
    try:
        words = shlex.split(command.text, comments=True)
    except ValueError as exc:
        return f"does not parse as a shell line: {exc}"
    while words and re.fullmatch(r"\w+=\S*", words[0]):  # VARIABLE=value before the command
        words.pop(0)
    if words[:1] == ["arena"]:
        if len(words) > 2 or command.typed:
            return "say `uv run arena`: a fresh clone has no `arena` on the PATH"
        return arena_problem(words[1:], command.typed)  # the command's name alone: `arena run`
    if words[:1] == ["python"]:
        return "say `uv run python`: a fresh clone's Python has none of arena's packages"
    if words[:2] != ["uv", "run"]:
        return None  # pip, uv sync, ...
    words = words[2:]
    while words and words[0].startswith("--"):  # uv run's own options
        words = words[2:] if words[0] in ("--extra", "--project", "--with") else words[1:]
    if words[:1] == ["arena"]:
        alternatives = [word.split("|") for word in words[1:]]  # --format csv|parquet
        for each in itertools.product(*alternatives):
            if problem := arena_problem(list(each), command.typed):
                return problem
    elif words[:1] in (["python"], ["pytest"]):
        paths = [w.split("::")[0] for w in words[1:] if "/" in w and not w.startswith("-")]
        if words[:1] == ["python"]:
            paths = paths[:1]
        missing = [p for p in paths if not (ROOT / p).exists()]
        return f"no such file: {', '.join(missing)}" if missing else None
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_line_names_real_commands_and_options(page):
    found = commands(page)
    problems = [f"{c.where}: `{c.text}`: {p}" for c in found if (p := command_problem(c))]
    assert problems == []


def test_a_command_line_that_is_wrong_is_found():
    """The check above could fail: each kind of mistake is named."""
    cases = {
        "arena run tournaments/round_robin.yaml": "say `uv run arena`",
        "uv run arena rnu FILE": "no command 'rnu'",
        "uv run arena run FILE --resum": "no option --resum",
        "uv run arena export 3 --out DIR --format xml": "'xml' is not one of",
        "uv run arena export 3 --out DIR --format csv|xml": "'xml' is not one of",
        "uv run arena show 0": "greater than or equal to 1",
        "uv run arena run A.yaml B.yaml": "takes no argument 'B.yaml'",
        "uv run arena leaderboard --by": "--by needs a value",
        "uv run arena show --json": "Missing argument",
        "uv run arena run tournaments/mine.yaml": "no such file in the clone: tournaments/mine.yaml",
        "python benchmarks/scale.py": "say `uv run python`",
        "uv run python benchmarks/no_such.py": "no such file: benchmarks/no_such.py",
    }
    for text, named in cases.items():
        problem = command_problem(Command("here", text, typed=True))
        assert problem is not None and named in problem, (text, problem)
    assert command_problem(Command("here", "uv run arena leaderboard --by", typed=False)) is None
    assert command_problem(Command("here", "arena run", typed=False)) is None


def test_the_help_says_uv_run_for_every_command_it_shows():
    """Every command line `--help` shows (a command's name and at least one argument or option)
    is one a fresh clone can type, and real; a command it names alone is a real one."""
    helps = [CLI.help or ""]
    for command in CLI.commands.values():
        helps += [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
    shown = [
        Command("help", match.group(0).removesuffix("."), typed=False)
        for match in re.finditer(
            r"(uv run )?\barena [a-z]+(?: (?:--?[\w-]+|[A-Z][\w.:]*|[\w./-]+\.yaml|\d+))*", "\n".join(helps)
        )
    ]
    assert [(c.text, problem) for c in shown if (problem := command_problem(c))] == []
    assert any(c.text.startswith("uv run arena run ") for c in shown)


# ---- figures and links

MEASURED = re.compile(  # a time something took: "took 10 s", "in 30–35 s", "at about 2 s"
    r"\b(?:took|takes?|taking|spent|costs?|in|at)\s+(?:about\s+|some\s+|under\s+)?\**"
    r"\d[\d.,]*(?:\s*(?:[–-]|to)\s*\d[\d.,]*)?\s*(?:ms|µs|s|min|minutes|seconds|hours)\b"
)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "benchmarks.md"], ids=lambda p: p.name)
def test_every_time_measured_says_when(page):
    """A time something took, in a page other than docs/benchmarks.md (where every figure sits
    under its date), has the date it was measured in its paragraph, or in the one that
    introduces it (ending with a colon). A heuristic: it finds times written as measured."""
    undated, before = [], ""
    for paragraph in re.split(r"\n\s*\n", page.read_text()):
        introduced = before if before.rstrip().endswith(":") else ""
        if not DATE.search(paragraph + introduced):
            undated += [" ".join(m.group(0).split()) for m in MEASURED.finditer(paragraph)]
        before = paragraph
    assert undated == []


def test_a_time_without_its_date_is_found():
    assert MEASURED.search("a step took 1.2–1.8 ms beside 0.2–0.3 ms")
    assert MEASURED.search("takes **30–35 s** on a 2-core VM")
    assert not MEASURED.search("a deadline of 10 s, retried after 1, 2 and 4 s")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_within_the_repository_resolves(page):
    """A relative link names a file of the repository, and a heading of it where it has #."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"\w+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file) if file else page
        if not linked.exists() or (anchor and anchor not in anchors(linked)):
            broken.append(target)
    assert broken == []
