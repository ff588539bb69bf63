"""A judged match's conduct (results.scoring.conduct.MatchConduct) read from the record, and
shown: as tables (the words its judges labelled, each merchant's counts, its claims as
checked, the judges' agreement) and whole as JSON for scripts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from common.conduct import CONDUCT, Claim, Label, PricePromise, Words
from results.presentation.views import Column, Header, TableModel, blank, tabulate
from results.records import MerchantConduct, ModelCallRecord, total_cost
from results.scoring.claims import CheckedClaim
from results.scoring.conduct import Agreement, Combined, MatchConduct, agreement, match_conduct
from results.storage import store
from results.storage.judgements import judgements, judges_of, judging, tournament_judgements


def stored_conduct(engine: Engine, detail: store.MatchDetail) -> MatchConduct | None:
    """The conduct of a stored match, read from the judges of its tournament's latest judging
    and combined as it said; None where the tournament has not been judged, or not every one
    of those judges has judged the match yet (a judging stopped midway)."""
    judged_by = judging(engine, detail.match.tournament_id)
    if judged_by is None or not set(judged_by[0]) <= judges_of(engine, detail.match_id):
        return None
    judges, majority = judged_by
    judged = judgements(engine, detail.match_id)
    return match_conduct(detail.days, detail.market.windows, judged, judges, majority)


@dataclass(frozen=True)
class CallsTaken:
    """What some model calls took: how many, their tokens, the USD paid (None: a model without a
    price among them) and how many the response cache answered, unpaid."""

    calls: int = 0
    tokens: int = 0
    cost: float | None = 0.0
    cached: int = 0

    @classmethod
    def of(cls, calls: Iterable[ModelCallRecord]) -> CallsTaken:
        made = list(calls)
        return cls(
            len(made),
            sum(c.input_tokens + c.output_tokens for c in made),
            total_cost(c for c in made if not c.cached),
            sum(c.cached for c in made),
        )

    def __add__(self, other: CallsTaken) -> CallsTaken:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return CallsTaken(
            self.calls + other.calls, self.tokens + other.tokens, cost, self.cached + other.cached
        )

    def line(self) -> str:
        """ "12 calls (3,456 tokens, $0.0012; 2 from the cache)"."""
        paid = "cost unknown" if self.cost is None else f"${self.cost:.4f}"
        return f"{self.calls} calls ({self.tokens:,} tokens, {paid}; {self.cached} from the cache)"


def verdict_line(conduct: MatchConduct) -> str:
    """The verdict in one line, with the days of its evidence."""
    verdict = conduct.verdict
    days = ", ".join(map(str, verdict.evidence_days))
    return f"verdict: {verdict.kind} ({verdict.detail})" + (f"; days {days}" if days else "")


def said_labels(said: Combined) -> str:
    """An item's labels as a cell: the conduct labels, "none", or "undecided" (too few
    readable judges)."""
    return "undecided" if said.undecided else ", ".join(said.labels)


WORD_COLUMNS: list[Column[tuple[Words, Combined]]] = [
    Column(Header("day", numeric=True), lambda item: str(item[0].day)),
    Column(Header("merchant"), lambda item: item[0].merchant),
    Column(Header("source"), lambda item: item[0].source),
    Column(Header("labels"), lambda item: said_labels(item[1])),
    Column(Header("words"), lambda item: item[0].text),
]


def labelled_items(conduct: MatchConduct) -> list[tuple[Words, Combined]]:
    """The items a majority labelled with conduct, and those too few judges could read
    (undecided), in the items' order: the words a reader of a match's conduct is shown."""
    return [
        (words, said)
        for words, said in conduct.items.items()
        if said.undecided or any(label in CONDUCT for label in said.labels)
    ]


def labelled_table(conduct: MatchConduct) -> TableModel:
    """The items a majority labelled with conduct, and those too few judges could read."""
    judges = f"{conduct.majority} of {len(conduct.judges)} judges"
    return tabulate(
        f"words labelled by the judges ({judges} to count)", WORD_COLUMNS, labelled_items(conduct)
    )


def claim_text(claim: Claim) -> str:
    """A claim as a cell: "promise: widget at 2.13 (while rivals ≥ 2.13)", "unit_cost of widget: 1.25"."""
    if isinstance(claim, PricePromise):
        held = (
            ""
            if claim.while_rivals_at_least is None
            else f" (while rivals ≥ {claim.while_rivals_at_least:g})"
        )
        return f"promise: {claim.product} at {claim.price:g}{held}"
    of = f" of {claim.product}" if claim.product is not None else ""
    return f"{claim.subject}{of}: {claim.value:g}"


CLAIM_COLUMNS: list[Column[CheckedClaim]] = [
    Column(Header("day", numeric=True), lambda c: str(c.day)),
    Column(Header("merchant"), lambda c: c.merchant),
    Column(Header("claim"), lambda c: claim_text(c.claim)),
    Column(Header("outcome"), lambda c: c.outcome),
    Column(Header("on day", numeric=True), lambda c: blank(c.on_day, "{}")),
    Column(Header("recorded", numeric=True), lambda c: blank(c.recorded, "{:g}")),
]


def claims_table(conduct: MatchConduct) -> TableModel:
    return tabulate("claims checked against the record", CLAIM_COLUMNS, conduct.claims)


def merchants_table(merchants: Mapping[str, MerchantConduct], contestants: Mapping[str, str]) -> TableModel:
    """Per merchant: its items by conduct label (the labels some merchant shows), its undecided
    items, its promises kept, broken and released and its false statements."""
    rows = list(merchants.items())
    labels = [label for label in CONDUCT if any(m.labels[label] for _, m in rows)]
    columns: list[Column[tuple[str, MerchantConduct]]] = [
        Column(Header("merchant"), lambda row: row[0]),
        Column(Header("contestant", contestant=True), lambda row: contestants.get(row[0], "")),
        Column(Header("items", numeric=True), lambda row: str(row[1].items)),
        *(Column(Header(label.replace("_", " "), numeric=True), _labelled(label)) for label in labels),
        Column(Header("undecided", numeric=True), lambda row: str(row[1].undecided)),
        Column(Header("promises kept", numeric=True), lambda row: str(row[1].promises_kept)),
        Column(Header("broken", numeric=True), lambda row: str(row[1].promises_broken)),
        Column(Header("released", numeric=True), lambda row: str(row[1].promises_released)),
        Column(Header("false statements", numeric=True), lambda row: str(row[1].false_statements)),
    ]
    return tabulate("conduct by merchant", columns, rows)


def _labelled(label: Label) -> Callable[[tuple[str, MerchantConduct]], str]:
    return lambda row: str(row[1].labels[label])


def tournament_agreement(engine: Engine, tournament_id: int) -> dict[Label, Agreement] | None:
    """How far the judges of the tournament's latest judging agree per label over every item
    of the matches they have all judged (results.scoring.conduct.agreement); None where it has
    not been judged."""
    judged_by = judging(engine, tournament_id)
    if judged_by is None:
        return None
    judges = judged_by[0]
    return agreement(tournament_judgements(engine, tournament_id, judges), judges)


def agreement_line(found: Mapping[Label, Agreement]) -> str:
    """The judges' agreement over a whole tournament in one line: "judges' agreement over the
    tournament (Krippendorff's alpha over 120 items, 2% unscored): proposal 0.81, ..."."""
    some = next(iter(found.values()))
    alphas = ", ".join(f"{label} {blank(said.alpha, '{:.2f}', 'n/a')}" for label, said in found.items())
    over = f"over {some.items} items, {some.unscored_share:.0%} unscored"
    return f"judges' agreement over the tournament (Krippendorff's alpha {over}): {alphas}"


def agreement_table(found: Mapping[Label, Agreement]) -> TableModel:
    """Krippendorff's alpha per label (of two judges or more), with why where it is not defined."""
    rows = list(found.items())
    columns: list[Column[Any]] = [
        Column(Header("label"), lambda row: row[0]),
        Column(Header("alpha", numeric=True), lambda row: blank(row[1].alpha, "{:.2f}", "n/a")),
        Column(Header("items", numeric=True), lambda row: str(row[1].items)),
        Column(Header("unscored", numeric=True), lambda row: f"{row[1].unscored_share:.0%}"),
        Column(Header("why n/a"), lambda row: row[1].why or ""),
    ]
    return tabulate("the judges' agreement (Krippendorff's alpha)", columns, rows)


def conduct_json(conduct: MatchConduct) -> dict[str, Any]:
    """A judged match's conduct whole, for scripts."""
    return {
        "judges": list(conduct.judges),
        "majority": conduct.majority,
        "verdict": conduct.verdict.model_dump(),
        "items": [{**words.model_dump(), **said.model_dump()} for words, said in conduct.items.items()],
        "claims": [c.model_dump() for c in conduct.claims],
        "merchants": {name: m.model_dump() for name, m in conduct.merchants.items()},
        "agreement": {label: a.model_dump() for label, a in conduct.agreement.items()},
    }
