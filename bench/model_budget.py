"""The cost of the value cap and the ``model_max_chars`` budget per call, in process.

For each sample it times the step that turns an extraction into ``content[0].text``: today's
``extraction_parts`` (value cap, budget, serialization) against the same step before the budget
existed, ``extraction_parts`` of ``--baseline-rev`` (loaded from git) followed by the serialization
the envelope did then. Both run in the same process, interleaved; the medians of ``--runs`` calls
are reported, with their difference and ratio.

Samples: a typical 25-row answer (7 columns: dates, names, numbers, a URL), a 5,000-row sample
(``row_limit`` at its maximum) of the same columns, and 25 rows of 40 text columns of 1 MB cells.

    .venv/bin/python bench/model_budget.py            # --runs 200 --baseline-rev b68d48a (~30 s)
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from shared import _jsonio as jsonio  # noqa: E402
from shared import results  # noqa: E402
from shared.tables import TableData  # noqa: E402


def load_baseline(rev: str) -> ModuleType:
    """``shared/results.py`` at ``rev``, as a module of the ``shared`` package (its siblings are unchanged)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:shared/results.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    spec = importlib.util.spec_from_loader("shared._results_baseline", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "shared"
    sys.modules[spec.name] = module
    exec(compile(source, f"{rev}:shared/results.py", "exec"), module.__dict__)  # our own history, at a named commit
    return module


def typical_rows(count: int) -> list[dict[str, Any]]:
    start = dt.date(2026, 9, 1)
    return [
        {
            "date": (start + dt.timedelta(days=i % 30)).isoformat(),
            "channel": ("Organic Search", "Paid Search", "Direct", "Referral")[i % 4],
            "landing_page": f"https://shop.example.com/category/{i % 17}/product-{i}?utm_source=news",
            "country": ("Spain", "Mexico", "Colombia")[i % 3],
            "sessions": i * 13,
            "revenue": Decimal(i) / 7,
            "conversion_rate": (i % 9) / 100,
        }
        for i in range(count)
    ]


def wide_rows(count: int) -> list[dict[str, Any]]:
    big = "y" * 1_000_000
    return [{f"text_{c:02d}": big for c in range(40)} for _ in range(count)]


def table(rows: list[dict[str, Any]]) -> TableData:
    """A finished table with the column types the writer would have given it."""
    kinds = {int: "integer", float: "number", Decimal: "number", bool: "boolean"}
    first = rows[0]
    headers: list[Any] = [
        {"name": name, "type": "date" if name == "date" else kinds.get(type(first[name]), "string")} for name in first
    ]
    return TableData("result", headers, len(rows), rows, None, rows, [])


def delivery(module: ModuleType, row_limit: int, **extra: Any) -> Any:
    return module.Delivery(
        row_limit=row_limit,
        field_limit=20,
        sampling="head",
        multi_table=True,
        stores_system_data=True,
        selection=None,
        catalog_names=frozenset(),
        required_tables=frozenset(),
        **extra,
    )


def median_us(call: Callable[[], Any], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def compare(before: ModuleType, data: TableData, row_limit: int, budget: int | None, runs: int) -> tuple[float, float]:
    """Median µs per call of the step before the budget and now, interleaved three times."""
    old_delivery = delivery(before, row_limit)
    new_delivery = delivery(results, row_limit, model_max_chars=budget)

    def old_step() -> str:
        parts = before.extraction_parts(before.Extraction(tables=[data], description="Bench."), old_delivery)
        return jsonio.dumps_text(parts.model_response)

    def new_step() -> str:
        parts = results.extraction_parts(results.Extraction(tables=[data], description="Bench."), new_delivery)
        return str(parts.fitted.text)

    old_step(), new_step()  # warm
    old_us, new_us = [], []
    for _ in range(3):  # interleaved, so that drift hits both
        old_us.append(median_us(old_step, runs))
        new_us.append(median_us(new_step, runs))
    return statistics.median(old_us), statistics.median(new_us)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--baseline-rev", default="b68d48a", help="the commit before the model budget")
    options = parser.parse_args()
    before = load_baseline(options.baseline_rev)

    cases = [
        ("25 rows x 7 columns", typical_rows(25), 25, [None, 3000, 100_000]),
        ("5,000 rows x 7 columns", typical_rows(5000), 5000, [None, 3000, 10_000_000]),
        ("25 rows x 40 columns of 1 MB", wide_rows(25), 25, [None, 3000]),
    ]
    print(f"{'sample':<30} {'model_max_chars':>15} {'before µs':>11} {'now µs':>11} {'added µs':>10} {'ratio':>7}")
    for label, rows, row_limit, budgets in cases:
        data = table(rows)
        # The old step serializes the 1 MB cells whole (26 MB a call): a few calls are enough there.
        runs = max(3, options.runs // (100 if label.endswith("1 MB") else 20 if len(rows) > 1000 else 1))
        for budget in budgets:
            old_median, new_median = compare(before, data, row_limit, budget, runs)
            shown = "none" if budget is None else f"{budget:,}"
            print(
                f"{label:<30} {shown:>15} {old_median:>11.1f} {new_median:>11.1f} "
                f"{new_median - old_median:>10.1f} {new_median / old_median:>6.2f}x"
            )


if __name__ == "__main__":
    main()
