"""The campaign report: trials sorted by the first objective, the Pareto front, a Pareto plot PNG.

A trial dominates another when it is no worse in every objective and better in one; the front
is the trials no other one dominates. Failed trials, trials where the leg fell or the scenario
aborted (and trials lacking an objective) sort last and are never on the front.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.tools.campaign.execute import objective_values
from controller.tools.campaign.spec import BETTER, METRIC_LABELS, Spec


def _signed(spec: Spec, values: list[float]) -> list[float]:
    """Values turned into costs (lower is better for every objective)."""
    return [v if sense == "minimize" else -v for v, sense in zip(values, spec.objectives.values())]


def ranked(spec: Spec, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records, best first by the objectives in spec order, each with ``pareto`` (on the front)."""
    costs = {r["key"]: _signed(spec, v) for r in records if (v := objective_values(spec, r)) is not None}

    def dominated(a: list[float]) -> bool:
        return any(all(x <= y for x, y in zip(b, a)) and b != a for b in costs.values())

    out = [r | {"pareto": r["key"] in costs and not dominated(costs[r["key"]])} for r in records]
    return sorted(out, key=lambda r: (r["key"] not in costs, costs.get(r["key"], [])))


def table(spec: Spec, rows: list[dict[str, Any]]) -> str:
    """Fixed-width text: rank, key, parameters, objectives, front mark, status."""
    params, metrics = list(spec.parameters), list(spec.objectives)
    head = ["#", "key", *params, *metrics, "pareto", "status"]
    body = []
    for i, r in enumerate(rows, 1):
        m = r.get("metrics") or {}
        body.append([str(i), r["key"], *(_fmt(r["params"].get(p)) for p in params), *(_fmt(m.get(k)) for k in metrics),
                     "*" if r["pareto"] else "", verdict(r)])
    widths = [max(len(x[c]) for x in [head, *body]) for c in range(len(head) - 1)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(line, widths)) + "  " + line[-1] for line in [head, *body])


def verdict(r: dict[str, Any]) -> str:
    """ok, the scenario's abort (the leg fell ...), or the trial's error."""
    if r["status"] != "ok":
        return f"failed: {r['error']}"
    m = r["metrics"]
    return m.get("aborted") or ("fell" if m.get("fell") else "ok")


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def axis_label(spec: Spec, metric: str) -> str:
    """A metric's plot label: its name and unit, then its direction (``lowest CoG margin (m)  ↑ better``)."""
    return f"{METRIC_LABELS[metric]}  {BETTER[spec.objectives[metric]]}"


def pareto_plot(spec: Spec, rows: list[dict[str, Any]], folder: Path) -> Path:
    """The first two objectives against each other (one objective: against the trial's rank), each
    axis named with its unit and its direction of improvement (↓ better: minimized), the front joined
    by a line, failed trials left out; ``folder/<spec name>_pareto.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = list(spec.objectives)
    ok = [(r, objective_values(spec, r)) for r in rows]
    ok = [(r, v) for r, v in ok if v is not None]
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    if len(metrics) > 1:
        x = [v[1] for _, v in ok]
        y = [v[0] for _, v in ok]
        ax.set_xlabel(axis_label(spec, metrics[1]))
    else:
        x = list(range(1, len(ok) + 1))
        y = [v[0] for _, v in ok]
        ax.set_xlabel("rank")
    ax.scatter(x, y, c="tab:gray", s=18, label="trials")
    front = sorted((xi, yi) for (r, _), xi, yi in zip(ok, x, y) if r["pareto"])
    if front:
        ax.plot(*zip(*front), "o-", c="tab:red", label="Pareto front")
    ax.set_ylabel(axis_label(spec, metrics[0]))
    failed = len(rows) - len(ok)
    ax.set_title(f"{spec.name}: {len(ok)} trials" + (f" ({failed} fell or failed, not shown)" if failed else ""))
    ax.legend()
    ax.grid(alpha=0.3)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{spec.name}_pareto.png"
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
