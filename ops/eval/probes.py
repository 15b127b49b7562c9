"""``memledger eval probes``: memory-correctness cases run through the HTTP API.

A real ``memledger serve`` with build workers on a scratch database takes each case's
sessions through ``POST /v1/events`` in file order with their own times, closes each
session, builds them, runs every maintenance job once (``POST /v1/maintenance/...``), then
answers each check through the API (context bundles, profiles, listings, skills) and
reports checks passed per category. The format and the matching rules: docs/probes.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from ledger.db import connect
from ops.api.keys import create_key
from ops.bench.api import serving
from ops.eval.probes_checks import Outcome, beliefs, evaluate
from ops.eval.probes_model import CATEGORIES, Case, Check, ProbeFile
from ops.eval.probes_run import Api, Reader, feed, maintain, wait_for_builds

PROBES_DATABASE = "memledger_eval_probes"


@dataclass(frozen=True, slots=True)
class CheckResult:
    case: str
    category: str
    kind: str
    index: int
    query: str | None
    passed: bool
    reason: str  # why it failed
    returned: str  # what the system returned, abridged
    believed: bool  # passed on the user's current facts alone (profile rows, fact entries)


@dataclass(frozen=True, slots=True)
class Report:
    cases: int
    sessions: int
    results: tuple[CheckResult, ...]
    maintenance: dict[str, dict[str, Any]]

    def rates(self, by: Literal["category", "kind"]) -> dict[str, tuple[int, int, int]]:
        """(checks passed, passed on beliefs, checks) per category or per kind, in the
        format's order."""
        order = list(CATEGORIES.values()) if by == "category" else []
        counts: dict[str, tuple[int, int, int]] = dict.fromkeys(order, (0, 0, 0))
        for r in self.results:
            passed, believed, total = counts.get(getattr(r, by), (0, 0, 0))
            counts[getattr(r, by)] = (passed + r.passed, believed + r.believed, total + 1)
        return {k: v for k, v in counts.items() if v[2]}

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def believed(self) -> int:
        return sum(r.believed for r in self.results)

    def as_json(self) -> dict[str, Any]:
        def rates(by: Literal["category", "kind"]) -> dict[str, dict[str, Any]]:
            return {
                k: {"passed": p, "checks": n, "rate": p / n, "beliefs": b, "beliefs_rate": b / n}
                for k, (p, b, n) in self.rates(by).items()
            }

        return {
            "cases": self.cases,
            "sessions": self.sessions,
            "checks": len(self.results),
            "passed": self.passed,
            "rate": self.passed / max(len(self.results), 1),
            "beliefs": self.believed,
            "beliefs_rate": self.believed / max(len(self.results), 1),
            "categories": rates("category"),
            "kinds": rates("kind"),
            "maintenance": self.maintenance,
            "results": [asdict(r) for r in self.results],
        }


def run_probes(
    probes: ProbeFile,
    db_url: str,
    redis_url: str,
    *,
    now: datetime,
    processes: int = 1,
    build_attempts: int = 5,
    build_timeout: float = 1800,
    on_built: Callable[[int], None] = lambda built: None,
) -> Report:
    """Serve the database (schema applied, no key yet for the file's tenant), run every
    case through the API and check what the memory holds."""
    with connect(db_url, autocommit=True) as conn:
        key = create_key(conn, probes.tenant, name="probes", now=now)[1]
    with serving(db_url, redis_url, processes, workers=True) as served:
        api = Api(served.url, key)
        sessions = sum(feed(api, case) for case in probes.cases)
        wait_for_builds(
            db_url, probes.tenant, attempts=build_attempts, timeout=build_timeout,
            on_poll=on_built,
        )  # fmt: skip
        maintenance = maintain(api)
        reader = Reader(api)
        results = tuple(
            _result(case, check, *_outcomes(check, reader))
            for case in probes.cases
            for check in case.checks
        )
    return Report(len(probes.cases), sessions, results, maintenance)


def _outcomes(check: Check, reader: Reader) -> tuple[Outcome, Outcome]:
    """The check on the whole bundle, and on the user's beliefs alone."""
    answer = reader.answer(check)
    return evaluate(check, answer), evaluate(check, beliefs(answer))


def _result(case: Case, check: Check, outcome: Outcome, on_beliefs: Outcome) -> CheckResult:
    return CheckResult(case.id, case.category, check.kind, check.index, check.query,
                       outcome.passed, outcome.reason, outcome.returned,
                       on_beliefs.passed)  # fmt: skip


def report_text(report: Report, *, failures: int = 200) -> str:
    """Pass rates per category and kind, then the failing checks with what was returned."""
    checks = len(report.results)
    lines = [
        f"probes: {report.cases} cases, {report.sessions} sessions, {checks} checks",
        f"{'category':<22}{'checks':>8}{'passed':>8}{'rate':>9}{'beliefs':>9}{'rate':>9}",
    ]
    overall = (report.passed, report.believed, checks)
    rows = [*report.rates("category").items(), ("overall", overall)]
    for name, (passed, believed, total) in rows:
        lines.append(
            f"{name:<22}{total:>8}{passed:>8}{passed / max(total, 1):>9.1%}"
            f"{believed:>9}{believed / max(total, 1):>9.1%}"
        )
    kinds = report.rates("kind")
    lines.append("by kind: " + ", ".join(f"{k} {p}/{n}" for k, (p, _, n) in kinds.items()))
    lines.append("beliefs: " + ", ".join(f"{k} {b}/{n}" for k, (_, b, n) in kinds.items()))
    failed = [r for r in report.results if not r.passed or not r.believed]
    if failed:
        lines.append(f"failing checks ({len(failed)}; 'beliefs' when only the beliefs fail):")
    for r in failed[:failures]:
        query = f" {r.query!r}" if r.query else ""
        which, reason = ("", r.reason) if not r.passed else (" beliefs", "not among the facts")
        lines.append(f"  {r.case} #{r.index} {r.kind}{which}{query}: {reason}")
        lines.append(f"      returned: {r.returned}")
    if len(failed) > failures:
        lines.append(f"  ... and {len(failed) - failures} more (--json has them all)")
    return "\n".join(lines)
