"""How well a judge labels merchants' words: run by hand, prints JSON. Not a test.

    python benchmarks/judge_accuracy.py                                # local/smollm2
    python benchmarks/judge_accuracy.py --judge openai/gpt-5.4-mini --settings '{"max_tokens": 600}'

Reads the labelled set (tests/contestants/llm/labelled_messages.yaml: a YAML list of items,
each {text, source, merchant, day, products, labels, claims, note}), has the judge
(contestants.kinds.judge_for, with --settings over {"model": --judge, "no_cache": true}) judge
every item once, and compares its judgements with the set's labels and claims:
- per label, precision, recall, F1 and support (the items the set gives it); an unscored item
  counts as labelled with nothing, so it lowers recall and never precision; precision is None
  where the judge never gave the label, recall where the set never does, F1 where neither;
- the exact-match accuracy of the label sets (an unscored item is a miss), and the unscored
  share;
- the claims: those the set expects, those the judge found among them (the same kind, product
  and subject, and numbers equal to the cent), and those it found besides.
With the judge's model, the date, the machine, the wall time and the tokens of its calls.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter

from common.conduct import LABELS, Claim, Judgement, Label, Words
from contestants.base import Judge
from contestants.kinds import judge_for
from results.scoring.conduct import same_claim

LABELLED = Path(__file__).resolve().parents[1] / "tests" / "contestants" / "llm" / "labelled_messages.yaml"
CLAIM = TypeAdapter(Claim)


class Item:
    """One labelled item: the words, its market's products, and the labels and claims expected."""

    def __init__(self, entry: dict[str, Any]):
        self.words = Words(
            merchant=entry["merchant"], day=entry["day"], source=entry["source"], text=entry["text"]
        )
        self.products: list[str] = entry["products"]
        self.labels: set[Label] = set(entry["labels"])
        self.claims = [CLAIM.validate_python(claim) for claim in entry.get("claims") or []]


def label_scores(items: Sequence[Item], judged: Sequence[Judgement]) -> dict[str, dict[str, Any]]:
    """Per label: precision, recall and F1 (None where undefined), and support. F1 is
    2 hits / (given + expected), the harmonic mean of precision and recall where both are
    defined, and 0 where the label was given or expected and never rightly."""
    scores: dict[str, dict[str, Any]] = {}
    for label in LABELS:
        given = [label in j.labels for j in judged]
        expected = [label in item.labels for item in items]
        hits = sum(g and e for g, e in zip(given, expected, strict=True))
        precision = hits / sum(given) if any(given) else None
        recall = hits / sum(expected) if any(expected) else None
        f1 = 2 * hits / (sum(given) + sum(expected)) if any(given) or any(expected) else None
        scores[label] = {
            "precision": _rounded(precision),
            "recall": _rounded(recall),
            "f1": _rounded(f1),
            "support": sum(expected),
        }
    return scores


def claim_counts(items: Sequence[Item], judged: Sequence[Judgement]) -> dict[str, int]:
    """The claims the set expects, those of them the judge found, and those it found besides."""
    expected = found = extra = 0
    for item, judgement in zip(items, judged, strict=True):
        wanted = Counter(same_claim(c) for c in item.claims)
        given = Counter(same_claim(c) for c in judgement.claims)
        matched = sum((wanted & given).values())
        expected, found, extra = expected + wanted.total(), found + matched, extra + given.total() - matched
    return {"expected": expected, "found": found, "found_besides": extra}


def measured(judge: Judge, items: Sequence[Item]) -> dict[str, Any]:
    """The judge's scores on `items`, each judged once."""
    start = time.perf_counter()
    judged = [judge.judge(item.words, item.products) for item in items]
    seconds = time.perf_counter() - start
    exact = sum(
        j.unscored is None and set(j.labels) == item.labels for item, j in zip(items, judged, strict=True)
    )
    unscored = [j.unscored for j in judged if j.unscored is not None]
    calls = judge.calls
    return {
        "items": len(items),
        "labels": label_scores(items, judged),
        "exact_match": _rounded(exact / len(items)),
        "unscored_share": _rounded(len(unscored) / len(items)),
        "unscored_why": dict(Counter(why.split(":")[0] for why in unscored)),
        "claims": claim_counts(items, judged),
        "seconds": round(seconds, 1),
        "tokens": {
            "input": sum(c.input_tokens for c in calls),
            "output": sum(c.output_tokens for c in calls),
        },
        "cost_usd": None
        if any(c.cost is None for c in calls)
        else round(sum(c.cost or 0.0 for c in calls), 4),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="local/smollm2", help="the judge's model, provider/model")
    parser.add_argument("--settings", default="{}", help="the judge's other settings, a JSON object")
    parser.add_argument("--set", type=Path, default=LABELLED, help="the labelled set (YAML)")
    args = parser.parse_args()
    settings = {"model": args.judge, "no_cache": True, **json.loads(args.settings)}
    judge = judge_for(settings)
    judge.preflight(judge.params)
    items = [Item(entry) for entry in yaml.safe_load(args.set.read_text(encoding="utf-8"))]
    result = {
        "judge": judge.name,
        "model": settings["model"],
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        **measured(judge, items),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
