"""`bipd` command line.

    bipd run [--config PATH] [--backend sim|udp] [--lockstep|--stepped] [--demo squat|walk]
             [--capture FILE.pcapng]                                                          the daemon
    bipd ctl CMD [key=value ...] [--endpoint] [--timeout] [--json]             talk to it
    bipd hil [--config PATH] [--udp-port N] [--truth EP] [--realtime] [--throttle-s S] [--hung]   MuJoCo HIL
    bipd scenario tilt|squat|push|walk-file|fault|largest-tilt|tilt-directions|results|whole-body [...]
    bipd campaign SPEC.yaml [--address ray://...] [--json] [--plot DIR]   tuning trials on Ray
    bipd plot LOG [--out DIR]                                                  cycle-log PNGs
    bipd log info LOG [--json]                                                 cycle-log tools
    bipd demo [--robot PATH] [--plot FILE] [--json]      thesis squat through the models alone
    bipd bench models [--robot PATH] [--samples N] [--json] [--no-first-call]   chain or tree
    bipd bench loop [--config PATH] [--seconds S] [--rate R] [--period S] [--json]   vs cyclictest
    bipd bench log LOG [--config PATH] [--rounds N] [--json]   cycle log cost per record, size per second
    bipd gait --speed M_H --steps N --out FILE.csv [--robot PATH] [--plot DIR]   offline walk
    bipd gait --check FILE.csv [--robot PATH]              re-check a gait file
    bipd stabilize-offline [--config PATH] [--amplitudes DEG,...] [--ramp-s S] [--json]   whole robot, tilt
    bipd check-robot PATH                                 validate a robot YAML
    bipd export urdf|mjcf PATH [--actuators motor|position]  the robot YAML as URDF / MJCF, on stdout
    bipd import urdf ROBOT.urdf [--root LINK] [--feet L,R] [--cut J,...] [-o FILE] [--json]   URDF -> YAML
    bipd import mjcf ROBOT.xml --velocity V [--effort E] [same options]      MJCF -> YAML (MuJoCo)
    bipd keys DIR [--name NAME]                           a CURVE certificate pair for io.curve / ctl

Exit status: 0 success, 1 a failed check or run, 2 bad usage or bad input file.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from models import ConfigError, ModelError, Robot
from models.tree.model import TreeModel
from models.tree.config import is_tree, tree_from_dict
from models.tree.robot import TreeRobot
from models.gait.plan import GaitParams
from models.common.validation import read_yaml

from controller.daemon.extras import missing

DEFAULT_ROBOT = Path(__file__).resolve().parents[1] / "deploy" / "robots" / "bip_leg.yaml"
DEFAULT_TREE = Path(__file__).resolve().parents[1] / "deploy" / "robots" / "bip2000.yaml"
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "bipd.yaml"


def _progress(enabled: bool):
    def say(msg: str) -> None:
        if enabled:
            print(f"[bipd] {msg}", file=sys.stderr, flush=True)
    return say


def cmd_demo(args: argparse.Namespace) -> int:
    from controller.tools.demo import plot_squat, run_squat, summary

    problem = missing("matplotlib", "plot") if args.plot else None
    if problem:
        print(f"bipd demo: error: --plot {problem}", file=sys.stderr)
        return 2
    robot = Robot.from_yaml(args.robot)
    say = _progress(not args.json)
    say(f"loaded {robot!r} from {args.robot}; compiling / loading the Numba kernels")
    log = run_squat(robot, out=None if args.json else sys.stdout)
    result = summary(robot, log)
    if args.plot:
        result["plot"] = str(plot_squat(log, robot, Path(args.plot)))
    if args.json:
        print(json.dumps(result))
    else:
        print()
        for key, value in result.items():
            print(f"{key:>24}: {value}")
    return 0


def _print_models_bench(res: dict) -> None:
    u = res["update"]
    print(f"robot {res['robot']} (n = {res['n']}), {res['samples']} samples, interleaved rounds")
    print(f"  bipd update (FK, J, CoG J, A, C, G): median {u['median_us']:.2f} us, p99 {u['p99_us']:.2f} us")
    p = res["pinocchio"]
    if p:
        r = res["ratio_vs_pinocchio"]
        print(f"  Pinocchio {p['version']} (6 calls from Python): median {p['median_us']:.2f} us, "
              f"p99 {p['p99_us']:.2f} us")
        verdict = "meets" if r["median"] <= r["target"] else "MISSES"
        print(f"  ratio bipd / Pinocchio: median {r['median']:.2f}, p99 {r['p99']:.2f} "
              f"({verdict} the target <= {r['target']})")
    else:
        print("  Pinocchio not installed (pip install 'bipd[bench]'): no reference ratio")
    print(f"  thesis B&R X20CP1586, FGM + inverse dynamics: {res['thesis_bnr_fgm_dyn_avg_us']:.0f} us avg "
          f"-> ratio {res['ratio_vs_thesis']:.3f}")
    if "first_call_cold_s" in res:
        print(f"  first call in a fresh process: {res['first_call_cold_s']:.2f} s cold (JIT compile), "
              f"{res['first_call_cached_s'] * 1e3:.1f} ms from the on-disk cache "
              f"(import + YAML load {res['import_and_load_cached_s']:.2f} s)")


def _print_stabilizer_bench(res: dict) -> None:
    print(f"stabilizer ({res['samples']} samples, thesis tilt scenario)")
    for key, label in (("step", "one stabilizer step"), ("cycle", "whole stabilizing cycle")):
        r = res[key]
        print(f"  {label:24s} median {r['median_us']:6.2f} us, p99 {r['p99_us']:6.2f} us")
    verdict = "meets" if res["cycle_under_target"] else "MISSES"
    print(f"  thesis B&R, same work: {res['thesis_bnr_stabilizer_avg_us']:.0f} us avg -> cycle ratio "
          f"{res['ratio_cycle_vs_thesis']:.3f} ({verdict} the target < {res['target_cycle_us']:.0f} us)")


def _print_stewart_bench(res: dict) -> None:
    py, kn = res["python_call"], res["kernel_in_numba_loop"]
    print(f"Stewart-Gough rig {res['rig']} (Staicu 2008): IK + inverse dynamics, six legs, {res['samples']} states")
    print(f"  one call from Python     median {py['median_us']:6.2f} us, p99 {py['p99_us']:6.2f} us "
          f"(target < {res['target_us']:g} us; {100 * py['p99_us'] / res['bus_cycle_us']:.1f} % of a "
          f"{res['bus_cycle_us']:g} us bus cycle)")
    print(f"  per call in a Numba loop median {kn['median_us']:6.2f} us, p99 {kn['p99_us']:6.2f} us")


def _print_tree_bench(res: dict) -> None:
    print(f"robot {res['robot']} (tree, n = {res['n']}), {res['samples']} samples per path and case in "
          f"{res['rounds']} interleaved rounds, Pinocchio {res['pinocchio_version'] or 'not installed'}")
    for name, p in res["paths"].items():
        print(f"  {name:19s} {p['computes']}")
    for name, why in res["unavailable"].items():
        print(f"  {name:19s} not measured: {why}")
    for case, c in res["cases"].items():
        label = ("swap of rooting + update, roots in turn" if case.startswith("swap") else
                 f"the tree on a floating base, n = {c['n']}; Pinocchio: its free flyer, root" if case == "floating"
                 else "root")
        print(f"{case} ({label}: {', '.join(c['roots'])})")
        for name in c["not_applicable"]:
            print(f"  {name:19s} does not cover this case")
        for name, f in c["paths"].items():
            line = f"  {name:19s} median {f['median_us']:6.2f} us  p99 {f['p99_us']:6.2f} us"
            r = c["ratios"].get(name)
            if r:
                verdict = "meets" if r["median"] <= res["target_ratio"] else "MISSES"
                line += (f"  / {r['reference']}: median {r['median']:.2f}, p99 {r['p99']:.2f} "
                         f"({verdict} <= {res['target_ratio']})")
            print(line + f"  / thesis {res['thesis_bnr_fgm_dyn_avg_us']:.0f} us: {c['ratio_vs_thesis'][name]:.3f}")


def _whole_body_bench(robot: str, samples: int, say) -> dict:
    """The whole-robot stabilizer cycle, when the tree is the one its configuration names."""
    from stabilizer.bench import WHOLE_BODY_CONFIG, run_whole_body_benchmark
    from stabilizer.whole_body_config import load_config

    cfg = load_config(WHOLE_BODY_CONFIG)
    if Path(robot).resolve() != cfg.robot_path.resolve():
        return {"not_measured": f"{WHOLE_BODY_CONFIG.name} stabilizes {cfg.robot_path.name}, not {Path(robot).name}"}
    say("whole-robot stabilizer cycle")
    return run_whole_body_benchmark(samples=samples)


def _print_whole_body_bench(res: dict) -> None:
    if "not_measured" in res:
        print(f"whole-robot stabilizer: not measured ({res['not_measured']})")
        return
    s = res["step"]
    print(f"whole-robot stabilizer cycle ({res['robot']}, two virtual robots + closed chain, task hierarchy): "
          f"median {s['median_us']:6.2f} us  p99 {s['p99_us']:6.2f} us  / thesis leg stabilizer "
          f"{res['thesis_bnr_stabilizer_avg_us']:.0f} us: {res['ratio_step_vs_thesis']:.3f}"
          + (f"  ({res['not_ok']} cycles not OK)" if res["not_ok"] else ""))
    w = res["walk_step"]
    print(f"  tracking a gait (stabilized walking, docs/walking.md): median {w['median_us']:6.2f} us  "
          f"p99 {w['p99_us']:6.2f} us  / standing: {res['ratio_walk_vs_standing']:.2f}"
          + (f"  ({res['not_ok_walk']} cycles not OK)" if res["not_ok_walk"] else ""))
    f = res["feet"]
    print(f"  the feet room beside it (cells, the plan's centres of pressure, compliance): median "
          f"{f['median_us']:6.2f} us  p99 {f['p99_us']:6.2f} us  / the stabilized walk step: {res['ratio_feet_vs_walk']:.2f}")


def cmd_bench_models(args: argparse.Namespace) -> int:
    from models.bench.chain import run
    from stabilizer.bench import run_benchmark

    if args.samples < 1:
        print(f"bipd bench models: error: --samples must be at least 1 (got {args.samples})", file=sys.stderr)
        return 2
    say = _progress(not args.json)
    if is_tree(read_yaml(args.robot)):
        from models.bench.tree import run as run_tree

        res = run_tree(args.robot, samples=args.samples, progress=say)
        res["whole_body_stabilizer"] = _whole_body_bench(args.robot, args.samples, say)
        if args.json:
            print(json.dumps(res))
        else:
            _print_tree_bench(res)
            _print_whole_body_bench(res["whole_body_stabilizer"])
        return 0
    res = run(args.robot, samples=args.samples, first_call=not args.no_first_call, progress=say)
    say("stabilizer step and stabilizing cycle")
    res["stabilizer"] = run_benchmark(samples=args.samples)
    say("Stewart-Gough rig: inverse kinematics + inverse dynamics of the six legs")
    from models.bench.rig import run as run_stewart

    res["stewart"] = run_stewart(samples=max(args.samples, 200))
    if args.json:
        print(json.dumps(res))
    else:
        _print_models_bench(res)
        _print_stabilizer_bench(res["stabilizer"])
        _print_stewart_bench(res["stewart"])
    return 0


def cmd_stabilize_offline(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from stabilizer.offline import evaluate, format_table

    try:
        amps = tuple(float(x) for x in args.amplitudes.split(","))
    except ValueError:
        amps = ()
    if not amps or any(not 0.0 < a <= 60.0 for a in amps) or list(amps) != sorted(amps):
        print(f"bipd stabilize-offline: error: --amplitudes must be increasing degrees in (0, 60], "
              f"got {args.amplitudes!r}", file=sys.stderr)
        return 2
    if not 0.1 <= args.ramp_s <= 120.0:
        print(f"bipd stabilize-offline: error: --ramp-s must be in [0.1, 120] s, got {args.ramp_s}", file=sys.stderr)
        return 2
    try:
        rows = evaluate(args.config, amplitudes_deg=amps, ramp_s=args.ramp_s)
    except RuntimeError as e:
        print(f"bipd stabilize-offline: {e}", file=sys.stderr)
        return 1
    print(json.dumps([asdict(r) for r in rows]) if args.json else format_table(rows))
    return 0


DEMOS = {"squat": "the bench leg (a chain robot: deploy/bipd.yaml)",
         "walk": "the whole BIP 2000 (a tree robot rooted at both soles: deploy/bip2000.yaml)"}
"""``bipd run --demo``: what each demo runs on."""


def demos_for(robot) -> tuple[str, ...]:
    """The demos a daemon config's robot can run (DEMOS)."""
    if isinstance(robot, TreeRobot):
        return ("walk",) if {"left_sole", "right_sole"} <= set(robot.model.root_names) else ()
    return ("squat",)


def cmd_run(args: argparse.Namespace) -> int:
    from controller.daemon.run import run_daemon

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.capture:
        try:
            Path(args.capture).open("ab").close()
        except OSError as e:
            print(f"bipd: error: --capture {args.capture}: cannot write there ({e.strerror})", file=sys.stderr)
            return 2
    result: dict = {}
    play = None                                          # the demo's operator: (command, telemetry) -> result
    # a demo in lock-step owns the loop's clock (stepped): its operator would otherwise feed the watchdog
    # on the wall's clock while the loop runs on simulated time, and the run would depend on the host's speed
    stepped = True if args.stepped or (args.demo and args.lockstep) else None
    with ExitStack() as stack:
        folder = None
        if args.demo:
            from controller.daemon.config import load_daemon_config

            cfg = load_daemon_config(args.config, args.backend, True if args.lockstep else None, stepped)
            robot = cfg.robot()
            valid = demos_for(robot)
            if args.demo not in valid:
                print(f"bipd: error: --demo {args.demo} runs on {DEMOS[args.demo]}; {args.config} drives "
                      f"{robot.model.name}: its demo is {' or '.join(valid) or 'none'}", file=sys.stderr)
                return 2
        if args.demo == "squat":
            from controller.tools.demo import operator_squat

            play = partial(operator_squat, out=sys.stdout)
        elif args.demo == "walk":
            from controller.tools.scenarios.runner import ScenarioError
            from controller.tools.scenarios.walk import THESIS_SPEED_M_H, THESIS_STEPS, generate_gait
            from controller.tools.walk_demo import operator_walk, run_folder

            folder = run_folder(cfg.io.trajectory_dir, stack)
            say(f"bipd: generating the walk into {folder} (the first run compiles the gait's kernels)")
            try:
                gait = generate_gait(folder, Path(args.config), THESIS_STEPS, THESIS_SPEED_M_H, _progress(True))
            except ScenarioError as e:
                print(f"bipd: error: {e}", file=sys.stderr)
                return 1

            play = partial(operator_walk, trajectory=gait.name, out=sys.stdout)

        def operator(command: str, telemetry: str) -> None:
            try:
                result.update(play(command, telemetry))
            except Exception as e:                       # reported in one sentence; the daemon shuts down
                result["error"] = f"{type(e).__name__}: {e}"

        code = run_daemon(args.config, args.backend, True if args.lockstep else None, say=say,
                          operator=operator if play else None, stepped=stepped,
                          trajectory_dir=folder, capture=args.capture)
    if args.demo:
        if "stats" not in result:
            print(f"bipd: error: the {args.demo} demo did not finish ({result.get('error', 'see the messages above')})",
                  file=sys.stderr)
            return 1
        if args.demo == "walk":
            from controller.tools.walk_demo import print_summary

            print_summary(result, sys.stdout)
            if not result["completed"]:
                print(f"bipd: error: the walk ended in {result['states'][-1]} (the events above say why)",
                      file=sys.stderr)
                return 1
            return code
        from controller.tools.operator import print_loop_stats

        print(f"\nsquat done: states {' -> '.join(result['states'])}, max tracking error "
              f"{result['max_tracking_error_deg']:.3f} deg (thesis walking playback: <= 1.3 deg)")
        print_loop_stats(result["stats"]["loop"], sys.stdout)
    return code


def cmd_hil(args: argparse.Namespace) -> int:
    problem = missing("mujoco", "sim")
    if problem:
        print(f"bipd hil: error: {problem}", file=sys.stderr)
        return 2
    from drivers.sim.hil.server import main as hil_main

    return hil_main(args.rest)


def cmd_scenario(args: argparse.Namespace) -> int:
    from controller.tools.scenarios.cli import main as scenario_main

    return scenario_main(args.rest)


def cmd_campaign(args: argparse.Namespace) -> int:
    from controller.tools.campaign.cli import main as campaign_main

    return campaign_main(args.rest)


def cmd_bus(args: argparse.Namespace) -> int:
    from controller.tools.bus import main as bus_main

    return bus_main(args.rest)


def cmd_ctl(args: argparse.Namespace) -> int:
    from controller.tools.ctl import main as ctl_main

    return ctl_main(args.rest)


def cmd_plot(args: argparse.Namespace) -> int:
    problem = missing("matplotlib", "plot")
    if problem:
        print(f"bipd plot: error: {problem}", file=sys.stderr)
        return 2
    from controller.daemon.io.log import LogError, find_log
    from controller.tools.plot import plot_log

    try:
        log = find_log(args.log_dir)
        paths = plot_log(log, args.out or (log if log.is_dir() else log.parent))
    except LogError as e:
        print(f"bipd plot: error: {e}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


def _print_gait(check: dict) -> None:
    top = check["max_joint_speed"]
    print(f"ZMP margin min {1000 * check['zmp_margin_min_m']:.1f} mm; fastest joint {top['joint']} "
          f"{top['rad_s']:.3f} rad/s (limit {top['limit_rad_s']}); pelvis {check['pelvis_speed_m_h']:.1f} m/h")


GAIT_MAX_STEPS = 100               # a 100-step walk is about 2 min of gait, 65 000 samples at 2 ms
GAIT_PERIOD_S = (1e-4, 0.1)        # sampling period bounds, s: a 100 µs bus cycle to 10 Hz
GAIT_MAX_SPEED_M_H = 3600.0        # 1 m/s: ten times the thesis walk (the reach check refuses far less)


def gait_args_problem(speed: float, steps: int, period: float, out: Path, clearance: float = 0.0) -> str | None:
    """What is wrong with ``bipd gait``'s generation options, checked before any work; None if nothing."""
    if not (math.isfinite(speed) and 0.0 < speed <= GAIT_MAX_SPEED_M_H):
        return f"--speed must be in (0, {GAIT_MAX_SPEED_M_H:g}] m/h, got {speed:g}"
    if not 1 <= steps <= GAIT_MAX_STEPS:
        return f"--steps must be 1 to {GAIT_MAX_STEPS}, got {steps}"
    lo, hi = GAIT_PERIOD_S
    if not (math.isfinite(period) and lo <= period <= hi):
        return f"--period must be {lo:g} to {hi:g} s, got {period:g}"
    if not (math.isfinite(clearance) and 0.0 <= clearance < GaitParams.step_height):
        return f"--clearance must be in [0, {GaitParams.step_height:g}) m (below the swing's bell), got {clearance:g}"
    if not out.parent.is_dir():
        return f"--out {out}: the folder {out.parent} does not exist"
    return None


def cmd_gait(args: argparse.Namespace) -> int:
    from models.gait.wholebody import GaitInfeasible
    from models.tree.robot import TreeRobot

    from controller.tools.gait import check_file, make_gait, plot_gait, summary, write_gait
    from controller.daemon.io.playback import TrajectoryFileError

    if args.plot and missing("matplotlib", "plot"):
        print(f"bipd gait: error: --plot {missing('matplotlib', 'plot')}", file=sys.stderr)
        return 2
    robot = TreeRobot.from_yaml(args.robot)
    if not {"left_sole", "right_sole"} <= set(robot.model.root_names):
        print(f"bipd gait: error: {args.robot}: roots: the gait needs a robot rooted at left_sole and "
              "right_sole (a whole-robot tree such as deploy/robots/bip2000.yaml)", file=sys.stderr)
        return 2
    if args.check:
        try:
            report = check_file(Path(args.check), robot)
        except TrajectoryFileError as e:
            print(f"bipd gait: error: {e}", file=sys.stderr)
            return 2
        _print_gait(summary(robot, report))
        for problem in report.problems:
            print(f"bipd gait: check failed: {problem}", file=sys.stderr)
        return 0 if report.ok else 1
    if args.out is None or args.speed is None:
        print("bipd gait: error: give --speed and --out (or --check FILE)", file=sys.stderr)
        return 2
    problem = gait_args_problem(args.speed, args.steps, args.period, Path(args.out), args.clearance)
    if problem:
        print(f"bipd gait: error: {problem}", file=sys.stderr)
        return 2
    params = GaitParams(speed=args.speed / 3600.0, steps=args.steps, period=args.period, clearance=args.clearance)
    try:
        gait, report, seconds = make_gait(robot, params, _progress(True))
    except GaitInfeasible as e:                    # refused before solving: a request, not a failure
        print(f"bipd gait: error: --speed {args.speed:g} (--steps {args.steps}): {e.reason}", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        write_gait(out, robot, gait, report, seconds)
    except OSError as e:
        print(f"bipd gait: error: cannot write {out} ({e.strerror})", file=sys.stderr)
        return 2
    print(f"{out}: {len(gait.t)} samples, {gait.t[-1]:.2f} s, {params.steps} steps of "
          f"{gait.plan.step_length:.3f} m, CoG height {gait.z_c:.3f} m, generated in {seconds:.2f} s")
    _print_gait(summary(robot, report))
    if args.plot:
        for path in plot_gait(Path(args.plot), robot, gait, report):
            print(path)
    return 0


def cmd_log(args: argparse.Namespace) -> int:
    from controller.daemon.io.log import LogError, log_info

    try:
        info = log_info(args.log)
    except LogError as e:
        print(f"bipd log: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"bipd log: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(info))
        return 0
    span = info["t"]
    print(f"{info['path']}: {info['format']}, {info['records']} records"
          + (f", t {span[0]:.3f} .. {span[1]:.3f} s ({span[1] - span[0]:.3f} s)" if span else "")
          + (f", started {info['start']}" if info["start"] else "")
          + ("" if info["complete"] else ", torn (no footer: read up to its last complete chunk)"))
    for topic, c in info["channels"].items():
        t = f"  t {c['t'][0]:.3f} .. {c['t'][1]:.3f} s" if c["t"] else ""
        print(f"  {topic:18s} {c['type'] + ' (' + c['encoding'] + ')':40s} {c['messages']:9d} messages{t}")
    return 0


def cmd_bench_log(args: argparse.Namespace) -> int:
    from controller.daemon.io.log import LogError
    from controller.tools.log_bench import print_report, run

    if args.rounds < 1:
        print(f"bipd bench log: error: --rounds must be at least 1 (got {args.rounds})", file=sys.stderr)
        return 2
    try:
        res = run(args.log, args.config, args.rounds, say=lambda m: print(m, file=sys.stderr))
    except (LogError, ConfigError) as e:
        print(f"bipd bench log: error: {e}", file=sys.stderr)
        return 2
    if not res["records"]:
        print(f"bipd bench log: error: {args.log} holds no record", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res))
    else:
        print_report(res)
    return 0


def cmd_bench_loop(args: argparse.Namespace) -> int:
    from controller.tools.bench import print_report, run

    if args.period is not None and not 2e-4 <= args.period <= 0.1:
        print(f"bipd bench loop: error: --period must be in [0.0002, 0.1] s (got {args.period})", file=sys.stderr)
        return 2
    if args.gait is not None and not Path(args.gait).is_file():
        print(f"bipd bench loop: error: --gait {args.gait}: no such file", file=sys.stderr)
        return 2
    from controller.tools.client import CommandError

    try:
        res = run(args.config, seconds=args.seconds, rate=args.rate, progress=_progress(not args.json),
                  period=args.period, gait=None if args.gait is None else Path(args.gait))
    except CommandError as e:
        print(f"bipd bench loop: the daemon refused the workload: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res))
    else:
        print_report(res)
    return 0 if res["expected_state"] else 1


def cmd_bench_wire(args: argparse.Namespace) -> int:
    from controller.tools.bench_wire import print_report, run

    if args.seconds <= 0 or not 1 <= args.priority <= 99:
        print("bipd bench wire: error: --seconds must be > 0 and --priority in 1..99", file=sys.stderr)
        return 2
    try:
        res = run(seconds=args.seconds, priority=args.priority, cn=args.cn, progress=_progress(not args.json))
    except (PermissionError, FileNotFoundError, RuntimeError) as e:
        print(f"bipd bench wire: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res))
    else:
        print_report(res)
    return 0


def cmd_check_robot(args: argparse.Namespace) -> int:
    doc = read_yaml(args.path)
    if is_tree(doc):                                     # a kinematic tree
        tree = TreeModel(tree_from_dict(doc, str(args.path)))
        print(f"{args.path}: ok: {tree.name}, tree of {tree.n} joints {list(tree.joint_names)}, "
              f"total mass {tree.total_mass:.2f} kg, roots {list(tree.root_names)}")
        return 0
    robot = Robot.from_yaml(args.path)
    print(f"{args.path}: ok: {robot.model.name}, {robot.n} joints {list(robot.joint_names)}, "
          f"total mass {robot.model.total_mass:.2f} kg")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from models.tree.config import load_tree
    from models.urdf import to_urdf

    desc = load_tree(args.path)
    if args.format == "mjcf":
        problem = missing("mujoco", "sim")
        if problem:
            print(f"bipd export: error: mjcf {problem}", file=sys.stderr)
            return 2
        from drivers.sim.hil.mjcf_export import export_mjcf
        from drivers.sim.hil.mjcf_text import MjcfError

        try:
            sys.stdout.write(export_mjcf(desc, args.actuators))
        except MjcfError as e:
            print(f"bipd export: error: {e}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(to_urdf(desc))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """A URDF or MJCF into the robot YAML (models/importers/); an unimportable file is one line, exit 1."""
    from models.importers.urdf import import_urdf

    usage = ("--json prints a summary of the file -o writes; give -o" if args.json and not args.out else
             "an MJCF has no velocity limit: give --velocity" if args.format == "mjcf" and args.velocity is None else
             "--velocity and --effort are for an MJCF" if args.format == "urdf" and (args.velocity or args.effort) else
             missing("mujoco", "sim") if args.format == "mjcf" else None)
    if usage:
        print(f"bipd import: error: {usage}", file=sys.stderr)
        return 2
    try:
        text = Path(args.path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        print(f"bipd import: error: {args.path}: cannot read the file ({getattr(e, 'strerror', None) or e})",
              file=sys.stderr)
        return 2
    feet, cut = (tuple(x for x in (v or "").split(",") if x) for v in (args.feet, args.cut))
    if args.format == "mjcf":
        from models.importers.mjcf import import_mjcf

        out = import_mjcf(args.path, args.velocity, args.effort, args.root, feet, cut)
    else:
        out = import_urdf(text, args.path, args.root, feet, cut)
    if not args.out:
        sys.stdout.write(out)
        return 0
    Path(args.out).write_text(out)
    tree = TreeModel(tree_from_dict(read_yaml(args.out), args.out))
    summary = {"out": args.out, "name": tree.name, "joints": tree.n, "frames": len(tree.frame_names),
               "mass_kg": tree.total_mass, "roots": list(tree.root_names)}
    print(json.dumps(summary) if args.json else
          f"{args.out}: {tree.name}, {tree.n} joints, {len(tree.frame_names)} frames, "
          f"{tree.total_mass:.3f} kg, roots {list(tree.root_names)}")
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    import zmq.auth

    folder = Path(args.dir)
    public, secret = folder / f"{args.name}.key", folder / f"{args.name}.key_secret"
    for path in (public, secret):
        if os.path.lexists(path):                # a dangling link too: writing would follow it
            print(f"bipd: error: {path} exists; keys are never overwritten", file=sys.stderr)
            return 2
    umask = os.umask(0o077)                      # the secret file is never readable by others
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if folder.stat().st_mode & 0o022:        # anyone could swap the files for links once written
            print(f"bipd: error: {folder} is writable by others (mode {folder.stat().st_mode & 0o777:o}); "
                  "keys go in a folder only you can write (chmod go-w it)", file=sys.stderr)
            return 2
        zmq.auth.create_certificates(folder, args.name)
        public.chmod(0o644)
    except OSError as e:
        print(f"bipd: error: {folder}: cannot write the certificates ({e.strerror})", file=sys.stderr)
        return 2
    finally:
        os.umask(umask)
    print(f"{public}\tpublic: give it to the peer (the daemon's authorized_clients_dir, or ctl --server-key)")
    print(f"{secret}\tsecret: keep it here (io.curve.server_secret_key_file, or ctl --client-cert)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bipd", description="BIP biped controller: models, benchmarks, tools.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run the daemon (loop process + I/O process)")
    r.add_argument("--config", default=str(DEFAULT_CONFIG), help="daemon YAML (default: deploy/bipd.yaml)")
    r.add_argument("--backend", choices=("sim", "udp", "raw"),
                   help="override bus.backend (raw: the drives on bus.interface, root or CAP_NET_RAW)")
    r.add_argument("--lockstep", action="store_true", help="simulated time, cycles back to back")
    r.add_argument("--stepped", action="store_true",
                   help="stepped lock-step: the loop runs only the cycles a client grants with `step`")
    r.add_argument("--capture", metavar="FILE.pcapng",
                   help="write every POWERLINK frame the managing node sends and receives to this pcapng file "
                        "(Wireshark, tshark -r FILE)")
    r.add_argument("--demo", choices=tuple(DEMOS), help="also act as an operator: enable, play, disable, exit (with --lockstep it runs stepped); "
                   "squat on the bench leg (deploy/bipd.yaml), walk on BIP 2000 (deploy/bip2000.yaml: the thesis' "
                   "2 steps at 360 m/h, generated first)")
    r.set_defaults(func=cmd_run)

    k = sub.add_parser("ctl", help="send one command to a running daemon (bipd ctl --help)", add_help=False)
    k.add_argument("rest", nargs=argparse.REMAINDER)
    k.set_defaults(func=cmd_ctl)

    bu = sub.add_parser("bus", help="commission a POWERLINK wire: scan, sdo read|write, cycle (bipd bus --help)",
                        add_help=False)
    bu.add_argument("rest", nargs=argparse.REMAINDER)
    bu.set_defaults(func=cmd_bus)

    hl = sub.add_parser("hil", help="the HIL process: controlled nodes + MuJoCo leg or biped behind the udp backend "
                                     "(bipd hil --help)", add_help=False)
    hl.add_argument("rest", nargs=argparse.REMAINDER)
    hl.set_defaults(func=cmd_hil)

    sc = sub.add_parser("scenario", help="HIL bench scenarios through the daemon (bipd scenario --help)",
                        add_help=False)
    sc.add_argument("rest", nargs=argparse.REMAINDER)
    sc.set_defaults(func=cmd_scenario)

    ca = sub.add_parser("campaign", help="a tuning campaign of HIL trials on Ray (bipd campaign --help)",
                        add_help=False)
    ca.add_argument("rest", nargs=argparse.REMAINDER)
    ca.set_defaults(func=cmd_campaign)

    pl = sub.add_parser("plot", help="PNGs from a cycle log: tracking, CoG margins, cycle times")
    pl.add_argument("log_dir", metavar="LOG", help="an .mcap file, a run folder, or io.log_dir (its latest run)")
    pl.add_argument("--out", help="directory for the PNGs (default: the log's folder)")
    pl.set_defaults(func=cmd_plot)

    lg = sub.add_parser("log", help="cycle-log tools: info (channels, counts, span)")
    lsub = lg.add_subparsers(dest="action", required=True, metavar="ACTION")
    li = lsub.add_parser("info", help="channels, message counts and time span of a cycle log")
    li.add_argument("log", help="an .mcap file, a run folder, or io.log_dir (its latest run)")
    li.add_argument("--json", action="store_true", help="print one JSON object")
    lg.set_defaults(func=cmd_log)

    d = sub.add_parser("demo", help="run the thesis squat through the models and print the leg's state")
    d.add_argument("--robot", default=str(DEFAULT_ROBOT), help="robot YAML (default: the BIP leg)")
    d.add_argument("--plot", metavar="FILE", help="also write a PNG of angles, torques and CoG margin")
    d.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    d.set_defaults(func=cmd_demo)

    b = sub.add_parser("bench", help="benchmarks that print figures against a reference measured in the same run")
    bsub = b.add_subparsers(dest="bench", required=True, metavar="WHAT")
    bm = bsub.add_parser("models", help="model update vs Pinocchio, stabilizer cycle vs the thesis' B&R figures")
    bm.add_argument("--robot", default=str(DEFAULT_ROBOT),
                    help="robot YAML (default: the BIP leg); a tree (deploy/robots/bip2000.yaml) times the "
                         "whole-robot update on each root, a swap of rooting and on its floating base")
    bm.add_argument("--samples", type=int, default=20000, help="timed calls per side (default 20000)")
    bm.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bm.add_argument("--no-first-call", action="store_true",
                    help="skip the fresh-process compile/cache timing (chains; a tree bench has none)")
    bm.set_defaults(func=cmd_bench_models)

    bl = bsub.add_parser("loop", help="the daemon in real time under load, next to cyclictest")
    bl.add_argument("--config", default=str(DEFAULT_CONFIG))
    bl.add_argument("--seconds", type=float, default=60.0, help="measurement length (default 60)")
    bl.add_argument("--rate", type=float, default=200.0, help="client requests per second (default 200)")
    bl.add_argument("--period", type=float, default=None, metavar="S",
                    help="control period in s for loop and bus (default: the config's; 0.0004: one bus cycle "
                         "per control cycle)")
    bl.add_argument("--gait", metavar="FILE.csv", default=None,
                    help="stabilized walking instead: BIP 2000 on the ground walks this gait file (bipd gait) under "
                         "the whole-robot stabilizer, again as it ends (its stabilizer YAML at --period)")
    bl.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bl.set_defaults(func=cmd_bench_loop)

    bg = bsub.add_parser("log", help="the cycle log writer's CPU per record and bytes per second, on a run's records")
    bg.add_argument("log", help="a cycle log whose records are written again (an .mcap file or a run folder)")
    bg.add_argument("--config", default=str(DEFAULT_CONFIG),
                    help="daemon config whose robot gives the 3-D scene (/tf, /scene) when it is the log's chain")
    bg.add_argument("--rounds", type=int, default=5, help="interleaved rounds, medians reported (default 5)")
    bg.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bg.set_defaults(func=cmd_bench_log)

    bw = bsub.add_parser("wire", help="the raw backend on a veth: PReq->PRes round trip and cycle wake-up, "
                                      "1 and 8 simulated nodes at 2 and 1 ms, next to cyclictest (root)")
    bw.add_argument("--seconds", type=float, default=5.0, help="cycling per node count and period (default 5)")
    bw.add_argument("--priority", type=int, default=40,
                    help="SCHED_FIFO priority of the MN and cyclictest (default 40: below openPOWERLINK's threads, "
                         "45..75, which a spinning MN above them starves on 2 cores)")
    bw.add_argument("--cn", choices=("sim", "oplk"), default="sim",
                    help="who answers: simulated drives (one Python server) or openPOWERLINK CNs (built from "
                         "BIPD_OPLK_DIR, default ../shared/oplk)")
    bw.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    bw.set_defaults(func=cmd_bench_wire)

    ga = sub.add_parser("gait", help="an offline walking gait as a playback CSV (LIPM preview control + "
                                     "whole-body IK), checked; or --check an existing one")
    ga.add_argument("--speed", type=float, help="mean forward speed, m/h (the thesis walk: 360)")
    ga.add_argument("--steps", type=int, default=2, help="number of steps (default 2)")
    ga.add_argument("--out", help="CSV to write (a FILE.csv.json sidecar holds the parameters)")
    ga.add_argument("--robot", default=str(DEFAULT_TREE), help="robot tree YAML (default: BIP 2000)")
    ga.add_argument("--period", type=float, default=0.002, help="sampling period, s (default 0.002)")
    ga.add_argument("--clearance", type=float, default=GaitParams.clearance, metavar="M",
                    help="the swing sole rises this far over its first 0.15 s (a riser ahead of the toe), m (default "
                         f"{GaitParams.clearance:g}; 0: the bell alone; below its {GaitParams.step_height:g} m)")
    ga.add_argument("--plot", metavar="DIR", help="also write PNGs of the CoG/ZMP paths and the joint angles")
    ga.add_argument("--check", metavar="FILE", help="re-check a gait file instead of generating one")
    ga.set_defaults(func=cmd_gait)

    so = sub.add_parser("stabilize-offline", help="the whole-robot stabilizer on a quasi-statically tilted "
                                                  "platform, kinematics only: CoG margins held vs stabilized")
    so.add_argument("--config", default=str(DEFAULT_TREE.parent / "bip2000_stabilizer.yaml"),
                    help="whole-robot stabilizer YAML (default: deploy/robots/bip2000_stabilizer.yaml)")
    so.add_argument("--amplitudes", default="2,4,6,8,10", help="tilt amplitudes, degrees (default 2,4,6,8,10)")
    so.add_argument("--ramp-s", type=float, default=7.0, help="quintic ramp 0 -> largest amplitude, s (default 7)")
    so.add_argument("--json", action="store_true", help="print the rows as one JSON list")
    so.set_defaults(func=cmd_stabilize_offline)

    c = sub.add_parser("check-robot", help="validate a robot YAML and print a summary")
    c.add_argument("path")
    c.set_defaults(func=cmd_check_robot)

    ex = sub.add_parser("export", help="write a robot YAML (chain or tree) as URDF or MJCF on stdout")
    ex.add_argument("format", choices=("urdf", "mjcf"))
    ex.add_argument("path", help="robot YAML")
    ex.add_argument("--actuators", choices=("motor", "position"), default="motor",
                    help="mjcf of a biped: motor torques through the transmission (default), or joint "
                         "position servos holding the keyframe 'stance'")
    ex.set_defaults(func=cmd_export)

    im = sub.add_parser("import", help="write a URDF or MJCF (chain or tree) as the robot YAML (docs/import.md)")
    im.add_argument("format", choices=("urdf", "mjcf"))
    im.add_argument("path", help="URDF or MJCF file")
    im.add_argument("--root", metavar="LINK", help="the base link: import the tree below it (default: the URDF's root)")
    im.add_argument("--feet", metavar="LINK,LINK", help="links to root the model at too (soles): kept as frames, "
                                                        "listed in roots")
    im.add_argument("--cut", metavar="JOINT,...", help="leave out these joints and all below them "
                                                       "(grippers with mimic joints, say)")
    im.add_argument("--velocity", type=float, metavar="RAD_S", help="MJCF: every joint's velocity limit "
                                                                    "(MJCF has none)")
    im.add_argument("--effort", type=float, metavar="N_M", help="MJCF: the effort limit of a joint with no "
                                                                "actuatorfrcrange nor force-limited actuator")
    im.add_argument("-o", "--out", metavar="FILE", help="write the YAML here (default: stdout)")
    im.add_argument("--json", action="store_true", help="with -o: print the summary as one JSON object")
    im.set_defaults(func=cmd_import)

    ks = sub.add_parser("keys", help="write a CURVE certificate pair (NAME.key, NAME.key_secret) into DIR")
    ks.add_argument("dir")
    ks.add_argument("--name", default="bipd", help="file name stem (default: bipd)")
    ks.set_defaults(func=cmd_keys)
    return p


PASS_THROUGH = {"bus": cmd_bus, "ctl": cmd_ctl, "hil": cmd_hil, "scenario": cmd_scenario, "campaign": cmd_campaign}   # commands with their own argument parser


SIGPIPE_EXIT = 128 + 13    # as a shell reports a program that SIGPIPE ended (``bipd log info … | head``)


def main(argv: list[str] | None = None) -> int:
    """``bipd``; output cut short by its reader (a pipe into ``head``) ends it quietly, as SIGPIPE would."""
    try:
        return _main(argv)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # nothing more to flush at exit
        return SIGPIPE_EXIT


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in PASS_THROUGH:
        return PASS_THROUGH[argv[0]](argparse.Namespace(rest=argv[1:]))
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"bipd: error: {e}", file=sys.stderr)
        return 2
    except ModelError as e:
        print(f"bipd: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
