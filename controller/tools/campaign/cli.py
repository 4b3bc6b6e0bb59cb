"""`bipd campaign SPEC.yaml`: a tuning campaign of lock-step HIL trials on Ray, then its report.

    bipd campaign SPEC.yaml [--address ray://HOST:10001] [--num-cpus N] [--retry-failed]
                            [--json] [--plot DIR]

Runs every trial of the spec not yet in ``RESULTS/trials.jsonl`` (a re-run resumes; a finished
campaign only reports), progress lines on stderr, then prints the trials sorted by the objectives
(``--json``: one object on stdout) and, with ``--plot DIR``, writes the Pareto plot PNG there.
Exit status: 0 every trial ran, 1 some trial failed (recorded with its error), 2 bad usage (a spec
error, a missing extra: checked before anything runs).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from controller.daemon.extras import missing
from controller.tools.campaign.spec import SpecError, load_spec


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bipd campaign", description="A tuning campaign of HIL trials on Ray.")
    p.add_argument("spec", type=Path, help="campaign YAML (deploy/campaigns/)")
    p.add_argument("--address", help="a running Ray cluster (ray://HOST:10001, auto); default: a local one")
    p.add_argument("--num-cpus", type=int, metavar="N", help="local cluster: trials at once (default: the CPUs)")
    p.add_argument("--retry-failed", action="store_true", help="run the recorded failed trials again")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object on stdout")
    p.add_argument("--plot", type=Path, metavar="DIR", help="write the Pareto plot PNG into DIR")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def usage(problem: str) -> int:
        print(f"bipd campaign: error: {problem}", file=sys.stderr)
        return 2

    if args.num_cpus is not None and (args.num_cpus < 1 or args.address):
        return usage("--num-cpus: a positive count, for a local cluster only")
    try:
        spec = load_spec(args.spec)
    except SpecError as e:
        return usage(str(e))
    for module, extra, wanted in (("ray", "campaign", True), ("optuna", "campaign", spec.method == "optuna"),
                                  ("matplotlib", "plot", args.plot is not None)):
        if wanted and (problem := missing(module, extra)):
            return usage(problem)
    from controller.tools.campaign.execute import run_campaign
    from controller.tools.campaign.report import pareto_plot, ranked, table

    store = run_campaign(spec, args.address, args.num_cpus, retry_failed=args.retry_failed)
    rows = ranked(spec, list(store.read().values()))
    if args.json:
        print(json.dumps({"campaign": spec.name, "results": str(store.path), "objectives": spec.objectives,
                          "trials": rows}, indent=1))
    else:
        print(table(spec, rows))
    if args.plot is not None:
        print(f"[campaign] Pareto plot: {pareto_plot(spec, rows, args.plot)}", file=sys.stderr)
    return 1 if any(r["status"] != "ok" for r in rows) else 0
