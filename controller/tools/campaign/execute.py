"""A campaign on Ray: each trial a Ray task (one CPU, no retry) on its own bench, results appended
as they finish, failures and wall-clock overruns recorded and the campaign going on.

Local by default: ``ray.init(num_cpus=...)`` starts a cluster on this machine, one worker per CPU;
``address`` (``ray://host:10001`` or ``auto``) joins a running cluster whose nodes have bipd
installed. A caller already connected (``ray.is_initialized()``: a script running several campaigns)
keeps its connection: the campaign runs on it and leaves it open. At most one task per CPU is in
flight, so a task's wall time counts from its submission; a task over ``spec.timeout_s`` (an error
bound, never a verdict) is cancelled with ``force=True`` (Ray kills its worker; the trial's HIL,
daemon and loop process die with it, see :mod:`.reaper`) and recorded as failed.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from controller.tools.campaign.reaper import processes_die_with_worker
from controller.tools.campaign.spec import Range, Spec
from controller.tools.campaign.store import Store
from controller.tools.campaign.trials import grid, random_trials, run_trial, trial_key

Trial = Callable[[Spec, dict[str, Any]], dict[str, Any]]
Say = Callable[[str], None]


def say_stderr(msg: str) -> None:
    print(f"[campaign] {msg}", file=sys.stderr, flush=True)


def _task(trial: Trial, spec: Spec, params: dict[str, Any]) -> dict[str, Any]:
    """Runs in the Ray worker: the trial's metrics, or its error as one line."""
    t0 = time.monotonic()
    try:
        with processes_die_with_worker():
            metrics = trial(spec, params)
        return {"status": "ok", "metrics": metrics, "wall_s": round(time.monotonic() - t0, 3)}
    except Exception as e:                     # recorded: one failed trial never stops the campaign
        return {"status": "failed", "error": f"{type(e).__name__}: {e}".strip(),
                "wall_s": round(time.monotonic() - t0, 3)}


def start_ray(address: str | None, num_cpus: int | None) -> int:
    """Connect (or start a local cluster) unless already connected; the number of trials to keep in flight."""
    import ray

    if not ray.is_initialized() and address is None:
        ray.init(num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    elif not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class Progress:
    def __init__(self, total: int, done: int, failed: int, say: Say) -> None:
        self.total, self.done, self.failed, self.say = total, done, failed, say
        self.t0, self.ran = time.monotonic(), 0

    def finished(self, record: dict[str, Any]) -> None:
        self.done += 1
        self.ran += 1
        self.failed += record["status"] != "ok"
        left = self.total - self.done
        eta = (time.monotonic() - self.t0) / self.ran * left
        tail = f": {record['error']}" if record["status"] != "ok" else ""
        self.say(f"{self.done}/{self.total} done, {self.failed} failed, ETA {eta:.0f} s "
                 f"(trial {record['key']} {record['status']}{tail})")


def _optuna_study(spec: Spec, done: list[dict[str, Any]]):
    """An ask-and-tell study told the trials already finished, its sampler seeded with ``spec.seed``
    plus their number (the seed alone would propose the finished trials again)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dist = {k: optuna.distributions.FloatDistribution(v.low, v.high, log=v.log) if isinstance(v, Range)
            else optuna.distributions.CategoricalDistribution(v) for k, v in spec.parameters.items()}
    multi = len(spec.objectives) > 1
    seed = spec.seed + len(done)
    sampler = optuna.samplers.NSGAIISampler(seed=seed) if multi else optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(directions=list(spec.objectives.values()), sampler=sampler)
    for rec in done:
        values = objective_values(spec, rec)
        study.add_trial(optuna.trial.create_trial(
            params=rec["params"], distributions=dist, values=values,
            state=optuna.trial.TrialState.COMPLETE if values else optuna.trial.TrialState.FAIL))
    return study, dist


def objective_values(spec: Spec, record: dict[str, Any]) -> list[float] | None:
    """The objectives of a finished trial in spec order; None if it failed, the leg fell or the
    scenario aborted (its figures stop at the fall), or it lacks one."""
    if record.get("status") != "ok" or record["metrics"].get("fell") or record["metrics"].get("aborted"):
        return None
    values = [record["metrics"].get(m) for m in spec.objectives]
    return None if any(v is None for v in values) else [float(v) for v in values]


def proposals(spec: Spec, store: Store, retry_failed: bool) -> tuple[list[dict[str, Any]], int]:
    """grid/random: the trials not yet finished, and how many are; optuna: ([], finished)."""
    done = store.read()
    finished = {k for k, r in done.items() if r["status"] == "ok" or not retry_failed}
    if spec.method == "optuna":
        return [], sum(1 for r in done.values() if r["key"] in finished)
    every = grid(spec) if spec.method == "grid" else random_trials(spec)
    todo, seen = [], set()
    for p in every:
        k = trial_key(spec, p)
        if k not in finished and k not in seen:
            todo.append(p)
        seen.add(k)
    return todo, len(seen & finished)


def run_campaign(spec: Spec, address: str | None = None, num_cpus: int | None = None, trial: Trial = run_trial,
                 say: Say = say_stderr, retry_failed: bool = False) -> Store:
    """Run every unfinished trial of ``spec`` on Ray; the store holds one line per finished trial."""
    import ray

    store = Store(spec.results)
    todo, finished = proposals(spec, store, retry_failed)
    total = finished + len(todo) if spec.method != "optuna" else max(spec.n or 0, finished)
    failed = 0 if retry_failed else sum(r["status"] != "ok" for r in store.read().values())
    progress = Progress(total, finished, failed, say)
    if progress.done >= total:
        say(f"{spec.name}: all {total} trials already finished in {store.path}")
        return store
    own = not ray.is_initialized()          # a caller's connection is the caller's to close
    slots = start_ray(address, num_cpus)
    say(f"{spec.name}: {total - finished} of {total} trials to run, {slots} at a time, results in {store.path}")
    task = ray.remote(num_cpus=1, max_retries=0)(_task)
    try:
        if spec.method == "optuna":
            _run_optuna(spec, store, task, slots, total - finished, trial, progress)
        else:
            _run_list(spec, store, task, slots, iter(todo), trial, progress)
    finally:
        if own:
            ray.shutdown()
    return store


def _finish(spec: Spec, store: Store, params: dict[str, Any], out: dict[str, Any], progress: Progress) -> dict[str, Any]:
    record = {"key": trial_key(spec, params), "params": params} | out
    store.append(record)
    progress.finished(record)
    return record


def _collect(spec: Spec, inflight: dict[Any, tuple[dict[str, Any], float]]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Wait for the next task to end or overrun; yield (ref, outcome) for each that did."""
    import ray

    now = time.monotonic()
    deadline = min(t0 + spec.timeout_s for _, t0 in inflight.values())
    ready, _ = ray.wait(list(inflight), num_returns=1, timeout=max(0.0, deadline - now))
    for ref in ready:
        try:
            out = ray.get(ref)
        except Exception as e:                 # the worker died (a crash, a kill): the task's error
            out = {"status": "failed", "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"}
        yield ref, out
    now = time.monotonic()
    for ref, (_, t0) in list(inflight.items()):
        if ref not in ready and now - t0 > spec.timeout_s:
            ray.cancel(ref, force=True)
            yield ref, {"status": "failed", "error": f"timed out after {spec.timeout_s:g} wall s",
                        "wall_s": round(now - t0, 3)}


def _run_list(spec: Spec, store: Store, task, slots: int, todo: Iterator[dict[str, Any]], trial: Trial,
              progress: Progress) -> None:
    inflight: dict[Any, tuple[dict[str, Any], float]] = {}
    while True:
        while len(inflight) < slots and (params := next(todo, None)) is not None:
            inflight[task.remote(trial, spec, params)] = (params, time.monotonic())
        if not inflight:
            return
        for ref, out in _collect(spec, inflight):
            _finish(spec, store, inflight.pop(ref)[0], out, progress)


def _run_optuna(spec: Spec, store: Store, task, slots: int, n: int, trial: Trial, progress: Progress) -> None:
    study, dist = _optuna_study(spec, list(store.read().values()))
    done = store.read()
    inflight: dict[Any, tuple[dict[str, Any], float]] = {}
    asked: dict[Any, Any] = {}
    while n > 0 or inflight:
        while n > 0 and len(inflight) < slots:
            t = study.ask(dist)
            n -= 1
            if trial_key(spec, t.params) in done:         # a repeat of a finished trial: its values again
                values = objective_values(spec, done[trial_key(spec, t.params)])
                study.tell(t, values, state=None if values else _fail())
                progress.total -= 1
                continue
            ref = task.remote(trial, spec, t.params)
            inflight[ref], asked[ref] = (t.params, time.monotonic()), t
        if not inflight:
            continue
        for ref, out in _collect(spec, inflight):
            record = _finish(spec, store, inflight.pop(ref)[0], out, progress)
            done[record["key"]] = record
            values = objective_values(spec, record)
            study.tell(asked.pop(ref), values, state=None if values else _fail())


def _fail():
    import optuna

    return optuna.trial.TrialState.FAIL
