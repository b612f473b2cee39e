"""The cost preflight (spec 9.2): estimate from the dry run, refuse above the limit, and the
``maximum_bytes_billed`` safety net. Pure arithmetic; no I/O.

BigQuery on-demand bills bytes processed, rounded up to a whole MB, with at least 10 MB per
table a query references; a query that processes nothing is free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shared import CostLimitExceeded

TIB = 2**40
MB = 2**20
MIN_BILLED_PER_TABLE = 10 * MB
DEFAULT_PRICE_PER_TIB_USD = 6.25
NARROW = "Narrow the query (fewer columns, shorter date range, filter by partition) or ask the user to raise the limit."
SPENT_KEY = "bigquery.spent_usd"  # in ctx.conversation: what this conversation's queries were billed
RESERVED_KEY = "bigquery.reserved_usd"  # estimates of queries running now


def usd(bytes_: int, price_per_tib_usd: float) -> float:
    return bytes_ / TIB * price_per_tib_usd


def human_bytes(count: int) -> str:
    """1024-based, as the BigQuery console shows sizes (628.5 GB)."""
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def estimated_bytes_billed(processed: int, tables: int) -> int:
    if processed <= 0:
        return 0
    rounded = math.ceil(processed / MB) * MB
    return max(rounded, MIN_BILLED_PER_TABLE * max(tables, 1))


def maximum_bytes_billed(allowance_usd: float, price_per_tib_usd: float) -> int | None:
    """The byte cap for the job: the allowance at this price, never 0 (0 would mean "no cap")."""
    if price_per_tib_usd <= 0:
        return None  # a flat-rate price: bytes cost nothing, so a byte cap protects nothing
    return max(1, math.floor(allowance_usd / price_per_tib_usd * TIB))


def money(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


@dataclass(frozen=True)
class Preflight:
    """The decision on one dry run."""

    total_bytes_processed: int
    estimated_bytes_billed: int
    estimate_usd: float
    limit_usd: float
    price_per_tib_usd: float
    statement_type: str
    accuracy: str
    budget_usd: float | None = None
    spent_usd: float = 0.0

    @property
    def allowance_usd(self) -> float:
        """What this query may cost: the per-query limit, within what is left of the session budget."""
        if self.budget_usd is None:
            return self.limit_usd
        return max(min(self.limit_usd, self.budget_usd - self.spent_usd), 0.0)

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "estimate_usd": round(self.estimate_usd, 6),
            "limit_usd": self.limit_usd,
            "total_bytes_processed": self.total_bytes_processed,
            "estimated_bytes_billed": self.estimated_bytes_billed,
            "price_per_tib_usd": self.price_per_tib_usd,
            "statement_type": self.statement_type,
            "accuracy": self.accuracy,
        }
        if self.budget_usd is not None:
            out.update(session_budget_usd=self.budget_usd, session_spent_usd=round(self.spent_usd, 6))
        return out

    def check(self) -> None:
        """Refuse (ACP_COST_LIMIT_EXCEEDED) unless the query provably fits; the query never runs then."""
        if self.accuracy in ("LOWER_BOUND", "UNKNOWN"):
            bound = "at least" if self.accuracy == "LOWER_BOUND" else "no reliable figure; the dry run says"
            raise CostLimitExceeded(
                f"BigQuery cannot estimate this query's cost reliably ({bound} {money(self.estimate_usd)}, "
                "typically because it reads external or federated tables), so it cannot be shown to fit the limit "
                f"of {money(self.limit_usd)}. Query native tables instead, or ask the user to run it outside ACP.",
                self.data(),
            )
        if self.estimate_usd > self.limit_usd:
            message = f"The query would cost about {money(self.estimate_usd)} and the limit is {money(self.limit_usd)}."
            if self.accuracy == "UPPER_BOUND":
                message += (
                    " This is an upper bound: on clustered tables the real cost is often far lower, but it cannot "
                    "be known before running."
                )
            raise CostLimitExceeded(f"{message} {NARROW}", self.data())
        if self.budget_usd is not None and self.spent_usd + self.estimate_usd > self.budget_usd:
            left = max(self.budget_usd - self.spent_usd, 0.0)
            raise CostLimitExceeded(
                f"The query would cost about {money(self.estimate_usd)}, and this session has {money(left)} left of "
                f"its budget of {money(self.budget_usd)} (already spent: {money(self.spent_usd)}). Narrow the query "
                "or ask the user to raise session_budget_usd.",
                self.data(),
            )
        billed_usd = usd(self.estimated_bytes_billed, self.price_per_tib_usd)
        if billed_usd > self.allowance_usd:
            if self.allowance_usd < self.limit_usd:
                what, setting = (
                    f"what is left of the session budget ({money(self.allowance_usd)})",
                    "session_budget_usd",
                )
            else:
                what, setting = f"the limit of {money(self.limit_usd)}", "the limit"
            raise CostLimitExceeded(
                f"BigQuery bills at least 10 MB per table a query reads, about {money(billed_usd)} here, above "
                f"{what}. Ask the user to raise {setting}; narrowing will not help.",
                self.data(),
            )
