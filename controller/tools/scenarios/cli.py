"""`bipd scenario`: run a bench scenario through the daemon, print its figures.

    bipd scenario tilt [--alpha DEG] [--beta DEG] [--duration S] [--hold S]
    bipd scenario squat
    bipd scenario push [--force N] [--duration S] [--direction forward|backward|left|right]
    bipd scenario walk-file PATH
    bipd scenario walk [--gait FILE.csv] [--hung] [--steps N] [--speed M_H] [--config deploy/bip2000.yaml]
                       [--floor-pitch DEG] [--floor-roll DEG] [--floor-step HEIGHT@X] [--push NS@T[:DIRECTION]]
                       [--no-stabilizer | --stabilizer MODE]
                                                                 a gait on the whole BIP 2000 (thesis §2.6.2), on
                                                                 ground it was not told about
    bipd scenario fault [--count N] [--node ID] [--at S]        lost PRes during the thesis tilt
    bipd scenario largest-tilt --axis pitch|roll|combined [--runs N]
    bipd scenario tilt-directions                                20° tilt in eight directions
    bipd scenario results [--runs N] [--write [DIR]] [--part all|leg|walk|whole-body]   results tables (markdown)
    bipd scenario whole-body [--alpha DEG] [--beta DEG] [--duration S] [--support double|left] [--push N]
                             [--rig-motion SPEC --config deploy/bip2000_rig.yaml]
                             [--direction forward|backward|left|right] [--no-stabilizer] [--json]
                             [--tilt-source platform|imu] [--support-source phase|sensors]
                                                                 BIP 2000 on the platform (deploy/bip2000_platform.yaml)
    bipd scenario rig --motion FILE|NAME                         a ground motion of the Stewart-Gough rig under the
                                                                 config's robot: the leg (default deploy/bipd_rig.yaml)
                                                                 or BIP 2000 (--config deploy/bip2000_rig.yaml)
    bipd scenario rig-results [--runs N] [--write [DIR]]         the rig table of the config's robot
  common: [--config PATH] [--no-stabilizer] [--realtime] [--bolt-foot] [--tilt-source platform|imu] [--json]
          [--throttle-s S] [--operator-sleep X], and [--plot DIR] [--record FILE.mcap] for one scenario
          (walk: only --realtime, --json, --throttle-s, --operator-sleep, --plot, --record)

Lock-step benches run the daemon stepped: the operator owns the simulated clock, so verdicts and
figures do not depend on the host's speed. Two hooks check that: ``--throttle-s S`` makes the HIL
sleep S s per 2 ms control period (a slow host: 0.004 runs about 3x slower than real time) and
``--operator-sleep X`` makes the operator sleep X s of wall time per simulated second it advances
(2.0: 0.2 s per 0.1 s step; relative to the operator the daemon then runs infinitely fast).

Progress lines go to stderr; ``--json`` prints one object on stdout, before any plot is drawn
(a plotting failure is an error after it). Exit status: 0 the leg stood, 1 it fell (or the bench
or the plots failed), 2 bad usage (``--plot`` without matplotlib, ``--record`` onto an existing file
or into a missing folder, a rig motion the daemon would not play or the rig's stroke cannot hold:
checked before anything runs; a config file or key the bench refuses). ``rig`` and ``rig-results``
run the bench of the config's robot: the leg's, or the whole robot's (:mod:`.whole_body`) when it is a tree (BIP 2000).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from models import ConfigError

from controller.daemon.extras import missing
from controller.tools.scenarios.metrics import ScenarioResult
from controller.tools.scenarios.runner import DEFAULT_CONFIG, Options, ScenarioError, run_scenario
from controller.tools.scenarios.scenarios import PUSH_DIRECTIONS, THESIS_TILT, THESIS_TILT_S, HOLD_S, Fault, Push, Squat, Tilt, WalkFile
from controller.tools.scenarios.rig import RIG_CONFIG, RigMotion, checked_motion, is_tree_config, motion_folder
from controller.tools.scenarios.search import TILT_AXES, largest_tilt, platform_limit_deg
from controller.tools.scenarios.walk import (PUSH_S, PUSH_SIDES, THESIS_SPEED_M_H, THESIS_STEPS, WALK_CONFIG,
                                             WALK_STABILIZERS, parse_push)


def _failed(e: ConfigError | ScenarioError) -> int:
    """A bench that could not run: its error in one line; exit 2 for a bad file or key (usage), 1 for a
    bench that failed."""
    print(f"bipd scenario: error: {e}", file=sys.stderr)
    return 2 if isinstance(e, ConfigError) else 1


def _say(msg: str) -> None:
    print(f"[scenario] {msg}", file=sys.stderr, flush=True)


def _common(p: argparse.ArgumentParser, plot: bool = True) -> None:
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="daemon YAML (default: deploy/bipd.yaml)")
    p.add_argument("--no-stabilizer", action="store_true", help="hold the stance in position instead")
    p.add_argument("--bolt-foot", action="store_true",
                   help="the HIL bolts the foot to the platform (the thesis' squat bench, §2.6.1)")
    p.add_argument("--tilt-source", choices=("platform", "imu"), default="platform",
                   help="the stabilizer's tilt: platform angles (default) or the foot IMU over the bus")
    _bench(p, plot)


def _bench(p: argparse.ArgumentParser, plot: bool = True) -> None:
    p.add_argument("--realtime", action="store_true", help="run the daemon in real time (default: lock-step)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--transport", choices=("udp", "raw"), default="udp",
                   help="the frames between daemon and HIL: loopback UDP (default) or raw Ethernet on a veth "
                        "pair into a network namespace made for the run (root, or CAP_NET_ADMIN and CAP_NET_RAW)")
    p.add_argument("--throttle-s", type=float, default=0.0, metavar="S",
                   help="the HIL sleeps S s per control period: a slow host (verdicts must not change)")
    p.add_argument("--operator-sleep", type=float, default=0.0, metavar="X",
                   help="the operator sleeps X wall s per simulated s it advances: a daemon infinitely "
                        "faster than its operator (verdicts must not change)")
    if plot:
        p.add_argument("--plot", type=Path, metavar="DIR", help="write PNGs (support polygon, tracking, platform)")
        p.add_argument("--record", type=Path, metavar="FILE.mcap",
                       help="record daemon telemetry, events and HIL truth as an MCAP cycle log")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bipd scenario", description="HIL bench scenarios through the daemon.")
    sub = p.add_subparsers(dest="scenario", required=True, metavar="NAME")
    t = sub.add_parser("tilt", help="platform 0 -> (alpha, beta) by a quintic, hold, back (thesis §2.6)")
    t.add_argument("--alpha", type=float, default=math.degrees(THESIS_TILT[0]), help="roll, deg (default 10)")
    t.add_argument("--beta", type=float, default=math.degrees(THESIS_TILT[1]), help="pitch, deg (default 20)")
    t.add_argument("--duration", type=float, default=THESIS_TILT_S, help="quintic each way, s (default 7)")
    t.add_argument("--hold", type=float, default=HOLD_S, help="hold at the tilt, s (default 1)")
    sub.add_parser("squat", help="the thesis squat (§2.6.1) from a near-straight leg")
    pu = sub.add_parser("push", help="a force on the hip body while stabilizing")
    pu.add_argument("--force", type=float, default=100.0, help="N (default 100)")
    pu.add_argument("--duration", type=float, default=0.1, help="s (default 0.1)")
    pu.add_argument("--direction", choices=tuple(PUSH_DIRECTIONS), default="forward")
    w = sub.add_parser("walk-file", help="playback of a joint-trajectory CSV")
    w.add_argument("path", type=Path)
    wk = sub.add_parser("walk", help="a gait on the whole BIP 2000, hung from the gantry or on the floor "
                                     "(thesis §2.6.2)")
    wk.add_argument("--gait", type=Path, metavar="FILE.csv",
                    help="a gait file (bipd gait); default: generate --steps at --speed into --plot DIR, "
                         "else into a temporary folder")
    wk.add_argument("--hung", action="store_true", help="the robot hung from the gantry by the pelvis "
                                                        "(the thesis' experiment); default: on the floor")
    wk.add_argument("--steps", type=int, default=THESIS_STEPS, help=f"generated gait: steps (default {THESIS_STEPS})")
    wk.add_argument("--speed", type=float, default=THESIS_SPEED_M_H,
                    help=f"generated gait: m/h (default {THESIS_SPEED_M_H:g})")
    wk.add_argument("--config", type=Path, default=WALK_CONFIG, help="daemon YAML (default: deploy/bip2000.yaml)")
    wk.add_argument("--floor-pitch", type=float, default=0.0, metavar="DEG",
                    help="the floor tilted about y under the whole walk, deg (> 0: uphill); the gait and the "
                         "daemon are not told")
    wk.add_argument("--floor-roll", type=float, default=0.0, metavar="DEG",
                    help="the floor tilted about x, deg (> 0: rising to the left)")
    wk.add_argument("--floor-step", metavar="HEIGHT@X",
                    help="a step of HEIGHT m (< 0: a step down) at X m ahead of the start")
    wk.add_argument("--push", metavar="NS@T[:DIRECTION]",
                    help=f"an impulse of NS N s on the pelvis over {PUSH_S:g} s, T s into the gait's playback, "
                         f"{'/'.join(PUSH_SIDES)} (default forward)")
    stab = wk.add_mutually_exclusive_group()
    stab.add_argument("--no-stabilizer", action="store_true",
                      help="the open-loop gait (the default)")
    stab.add_argument("--stabilizer", metavar="MODE",
                      help=f"a stabilized walk: {', '.join(WALK_STABILIZERS)} (the gait under the whole-robot "
                           "stabilizer, docs/walking.md)")
    _bench(wk)
    f = sub.add_parser("fault", help="consecutive lost PRes of one node during the thesis tilt")
    f.add_argument("--count", type=int, default=1, help="PRes lost in a row (1 is forgiven, >= 2 trips)")
    f.add_argument("--node", type=int, default=1, help="POWERLINK node id (default 1, the ankles)")
    f.add_argument("--at", type=float, default=2.0, help="s into the tilt (default 2)")
    s = sub.add_parser("largest-tilt", help="bisection of the tilt amplitude the leg holds")
    s.add_argument("--axis", choices=tuple(TILT_AXES), required=True)
    s.add_argument("--runs", type=int, default=5, help="runs at most (default 5)")
    d = sub.add_parser("tilt-directions", help="the thesis-magnitude tilt (20°) in eight directions, stabilizer on")
    rg = sub.add_parser("rig", help="a ground motion of the Stewart-Gough rig under the config's robot: the leg "
                                    "(deploy/bipd_rig.yaml, the default) or BIP 2000 (deploy/bip2000_rig.yaml)")
    rg.add_argument("--motion", required=True, metavar="FILE|NAME",
                    help="KIND or KIND:key=value,... (tilt, sinusoid, heave, step, ship_deck), a YAML file of one "
                         "or an earthquake CSV (t,ax,ay,az)")
    rr = sub.add_parser("rig-results", help="regenerate the rig table of the config's robot (many runs)")
    rr.add_argument("--runs", type=int, default=5, help="runs per bisection (default 5)")
    _write(rr)
    r = sub.add_parser("results", help="regenerate the results tables (many runs)")
    r.add_argument("--runs", type=int, help="runs per bisection (default 5, whole-body 4)")
    _write(r)
    r.add_argument("--part", choices=("all", "leg", "walk", "whole-body"), default="all",
                   help="leg: the bench leg's table; walk: the BIP 2000 walks' (--config: deploy/bip2000.yaml "
                        "unless given); all: both (default); whole-body: BIP 2000 on the platform "
                        "(deploy/bip2000_platform.yaml)")
    wb = sub.add_parser("whole-body", help="BIP 2000 on the tilting platform: a tilt, or a push on the pelvis")
    wb.add_argument("--alpha", type=float, default=math.degrees(THESIS_TILT[0]), help="roll about x, deg")
    wb.add_argument("--beta", type=float, default=math.degrees(THESIS_TILT[1]), help="pitch about y, deg")
    wb.add_argument("--duration", type=float, default=THESIS_TILT_S, help="quintic each way, s")
    wb.add_argument("--support", choices=("double", "left"), default="double",
                    help="both feet, or the left one (the right lifted by two posture moves first)")
    wb.add_argument("--push", type=float, help="instead of the tilt: a push of this force (N) for 0.1 s")
    wb.add_argument("--direction", choices=tuple(PUSH_DIRECTIONS), default="forward")
    wb.add_argument("--rig-motion", metavar="SPEC", help="instead of the tilt: this Stewart-Gough rig motion "
                    "(bipd ctl rig_motion's KIND:key=value,...; needs a rig config, e.g. deploy/bip2000_rig.yaml)")
    wb.add_argument("--config", type=Path, help="the daemon YAML (default deploy/bip2000_platform.yaml)")
    wb.add_argument("--no-stabilizer", action="store_true", help="hold the posture in position instead")
    wb.add_argument("--push-strategies", action="store_true",
                    help="the stabilizer's capture-point strategies on (ankle, hip; the deployed YAML's gains) "
                         "for a stabilizer YAML without them")
    wb.add_argument("--push-observer", type=float, metavar="RATE",
                    help="with the strategies, the capture point from the soles' centre of pressure (the LIPM "
                         "observer, its poles at -RATE 1/s)")
    wb.add_argument("--push-step", type=float, metavar="SECONDS",
                    help="with the strategies, a recovery step of this swing time when the capture point leaves "
                         "the polygon")
    wb.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a key of the stabilizer YAML (dotted, e.g. push.step_width=0.2) set in the run's copy, "
                         "after the --push-* flags' keys; repeatable")
    wb.add_argument("--tilt-source", choices=("platform", "imu"), default="platform",
                    help="the stabilizer's tilt: the platform's angles or the pelvis IMU over the bus")
    wb.add_argument("--support-source", choices=("phase", "sensors"), default="phase",
                    help="the stabilizer's support: the command's or the feet's load cells over the bus")
    wb.add_argument("--json", action="store_true")
    wb.add_argument("--transport", choices=("udp", "raw"), default="udp",
                    help="the frames between daemon and HIL: loopback UDP (default) or raw Ethernet (root)")
    for q in (t, sub.choices["squat"], pu, w, f, rg):
        _common(q)
    for q in (s, d, r, rr):
        _common(q, plot=False)
    for q in (rg, rr):
        q.set_defaults(config=RIG_CONFIG)
    return p


def _scenario(args: argparse.Namespace, p: argparse.ArgumentParser):
    if args.scenario == "tilt":
        limit = platform_limit_deg(Options(config=args.config))
        if max(abs(args.alpha), abs(args.beta)) > limit:
            p.error(f"--alpha {args.alpha:g} / --beta {args.beta:g} deg: the platform limit is {limit:g} deg")
        if args.duration <= 0 or args.hold < 0:
            p.error("--duration must be > 0 s and --hold >= 0 s")
        return Tilt(math.radians(args.alpha), math.radians(args.beta), args.duration, args.hold)
    if args.scenario == "squat":
        return Squat()
    if args.scenario == "push":
        if args.force < 0 or args.duration <= 0:
            p.error("--force must be >= 0 N and --duration > 0 s")
        return Push(args.force, args.duration, args.direction)
    if args.scenario == "rig":
        return RigMotion(args.motion)
    if args.scenario == "walk-file":
        if not args.path.is_file():
            p.error(f"walk-file: {args.path} is not a file")
        return WalkFile(args.path)
    if args.count < 1:
        p.error("--count must be at least 1")
    return Fault(count=args.count, node=args.node, at=args.at)


def _print_rig_following(res: dict[str, Any]) -> None:
    if res.get("max_rig_following_error_mm"):
        legs = res["max_rig_following_error_mm"].items()
        print("  rig actuators' max following error "
              + ", ".join(f"{leg} {'n/a' if v is None else f'{v:.3f}'}" for leg, v in legs) + " mm")


def _print_result(res: dict[str, Any]) -> None:
    mm = lambda x: "n/a" if x is None else f"{1e3 * x:.1f} mm"          # noqa: E731
    print(f"{res['scenario']} {res['params']}: {'FELL' if res['fell'] else 'stood'} "
          f"({'stabilizer' if res['stabilizer'] else 'posture held'}, {'stepped lock-step' if res['lockstep'] else 'real time'})")
    for r in res["fall_reasons"]:
        print(f"  fall: {r}")
    if res["aborted"]:
        print(f"  ended early: {res['aborted']}")
    err = res["max_tracking_error_deg"]
    print(f"  min CoG margin {mm(res['min_cog_margin_m'])}, min CoP margin {mm(res['min_cop_margin_m'])}, "
          f"max tracking error {'n/a' if err is None else f'{err:.3f} deg'} ({res['max_tracking_error_joint']})")
    _print_rig_following(res)
    print(f"  states {' -> '.join(res['states'])}; faults {res['faults'] or 'none'}; "
          f"{res['overruns']} overruns, {res['missed_cycles']} missed cycles")
    print(f"  {res['sim_s']:.1f} s simulated in {res['wall_s']:.1f} s: {res['speed_x_realtime']}x real time")
    for name, t in res["tasks_us"].items():
        if t["avg_us"] is not None:
            print(f"    {name:10s} min {t['min_us']:8.1f}  avg {t['avg_us']:8.1f}  max {t['max_us']:8.1f} us")
    if res["safe_stop"]:
        print(f"  safe stop: {res['safe_stop']}")
    for path in res["plots"]:
        print(f"  plot {path}")


def main(argv: list[str] | None = None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.scenario == "whole-body":
        return _whole_body(args, p)
    if not 0.0 <= args.throttle_s <= 1.0 or not 0.0 <= args.operator_sleep <= 100.0:
        p.error("--throttle-s must be in [0, 1] s and --operator-sleep in [0, 100]")
    if args.realtime and args.operator_sleep:
        p.error("--operator-sleep needs a stepped (lock-step) bench; --realtime keeps the wall clock")
    if args.realtime and getattr(args, "transport", "udp") == "raw":
        p.error("--transport raw runs the bench in stepped lock-step; --realtime needs --transport udp")
    problem = missing("matplotlib", "plot") if getattr(args, "plot", None) is not None else None
    if problem:
        print(f"bipd scenario: error: --plot {problem}", file=sys.stderr)
        return 2
    record = getattr(args, "record", None)
    if record is not None and (record.exists() or not record.parent.is_dir()):
        print(f"bipd scenario: error: --record {record}: "
              f"{'exists; a log is never overwritten' if record.exists() else 'its folder does not exist'}",
              file=sys.stderr)
        return 2
    if args.scenario == "walk":
        return _walk(args, p, record)
    if args.scenario in ("rig", "rig-results"):
        try:                                   # a bad motion is refused before anything starts
            tree = is_tree_config(args.config)
            if args.scenario == "rig":
                args.motion = checked_motion(args.motion, args.config)
        except (ConfigError, ScenarioError) as e:
            p.error(str(e))
        if tree:
            return _rig_tree(args, p)
    options = Options(config=args.config, stabilizer=not args.no_stabilizer, lockstep=not args.realtime,
                      plot_dir=getattr(args, "plot", None), bolt_foot=args.bolt_foot,
                      throttle_s=args.throttle_s, operator_sleep=args.operator_sleep,
                      tilt_source=args.tilt_source, record=record, transport=args.transport,
                      trajectory_dir=(args.path.parent if args.scenario == "walk-file" else
                                      motion_folder(args.motion) if args.scenario == "rig" else None))
    try:
        if args.scenario == "tilt-directions":
            from controller.tools.scenarios.results import direction_rows, direction_speed, tilt_directions

            dirs = tilt_directions(options, _say)
            print(json.dumps(dirs) if args.json else "\n".join(direction_rows(dirs) + [direction_speed(dirs)]))
            return 1 if any(d["fell"] or d["aborted"] for d in dirs) else 0
        if args.scenario == "results" and args.part == "whole-body":
            from controller.tools.scenarios import whole_body_results as wr
            from controller.tools.scenarios.whole_body import CONFIG, WholeBodyOptions

            config = CONFIG if args.config == DEFAULT_CONFIG else args.config
            _check_write(args, p, (wr.PAGE, wr.MARKERS))
            res = wr.collect(WholeBodyOptions(config=config), args.runs or 4, _say)
            return _table(args, res, wr.markdown(res), wr.MARKERS, wr.PAGE)
        if args.scenario == "results":
            from controller.tools.scenarios.results import (BEGIN, END, GROUND_MARKERS, LEG_PAGE, WALK_MARKERS,
                                                            WALK_PAGE, collect, collect_ground, collect_walks,
                                                            ground_markdown, markdown, update_readme, walk_markdown)

            _check_write(args, p, *([(LEG_PAGE, (BEGIN, END))] if args.part in ("all", "leg") else []),
                         *([(WALK_PAGE, WALK_MARKERS), (WALK_PAGE, GROUND_MARKERS)] if args.part in ("all", "walk")
                           else []))
            res, tables = {}, []
            if args.part in ("all", "leg"):
                res["leg"] = collect(options, args.runs or 5, _say)
                tables.append((markdown(res["leg"]), (BEGIN, END), LEG_PAGE))
            if args.part in ("all", "walk"):
                res["walk"] = collect_walks(options, _say)
                tables.append((walk_markdown(res["walk"]), WALK_MARKERS, WALK_PAGE))
                res["walk"]["ground"] = collect_ground(options, _say)
                tables.append((ground_markdown(res["walk"]["ground"]), GROUND_MARKERS, WALK_PAGE))
            if args.write:
                for table, markers, page in tables:
                    update_readme(args.write / page, table, markers)
            print(json.dumps(res if args.part == "all" else res[args.part]) if args.json
                  else "\n".join(table for table, _, _ in tables))
            return 0
        if args.scenario == "rig-results":
            from controller.tools.scenarios.rig import MARKERS, PAGE, collect as rig_collect, markdown as rig_markdown

            _check_write(args, p, (PAGE, MARKERS))
            res = rig_collect(options, args.runs, _say)
            return _table(args, res, rig_markdown(res), MARKERS, PAGE)
        if args.scenario == "largest-tilt":
            res = largest_tilt(args.axis, options, args.runs, say=_say)
            print(json.dumps(res) if args.json else
                  f"largest {args.axis} tilt held {'with' if options.stabilizer else 'without'} the stabilizer: "
                  f"{res['held_deg']:.2f} deg (falls at {res['fell_deg']} deg)")
            return 0
        res = run_scenario(_scenario(args, p), options, _say, report=lambda r: _report(r, args.json)).to_dict()
    except (ConfigError, ScenarioError) as e:
        return _failed(e)
    return 1 if res["fell"] else 0


def _verdict(passed: bool | None) -> str:
    return "n/a" if passed is None else "PASS" if passed else "FAIL"


def _print_walk(res: dict[str, Any]) -> None:
    steps = f"{res['steps']} steps, " if res["steps"] is not None else ""
    travel = "n/a" if res["distance_m"] is None else f"{res['distance_m']:.3f} m"
    outcome = (f"FELL at t = {res['fell_at_s']:.2f} s, pelvis {travel} forward" if res["fell"] else
               f"completed, pelvis {travel} forward" if res["completed"] else f"did not complete ({res['aborted']})")
    print(f"walk ({res['mount']}, {steps}{res['gait']}): {outcome}")
    t = res["terrain"]
    print(f"  ground: floor pitch {t['floor_pitch_deg']:g} deg, roll {t['floor_roll_deg']:g} deg, "
          + (f"step {100 * t['step_height_m']:+g} cm at {t['step_x_m']:g} m" if t["step_height_m"] else "no step")
          + "; " + ("no push" if res["push"] is None else
                    f"push {res['push']['impulse_Ns']:g} N s {res['push']['direction']} at {res['push']['at_s']:g} s"))
    slope = res["estimated_slope_deg"]
    print(f"  stabilizer: {res['stabilizer_note']}; estimated slope: "
          + (res["estimated_slope_note"] if slope is None else
             f"pitch {slope['pitch']:+.2f} deg, roll {slope['roll']:+.2f} deg"))
    for e in res.get("edges", []):
        print(f"  edge landing: {e['foot']} foot at t = {e['t']:.2f} s, cells {e['cells']} unloaded")
    for e in res.get("touchdowns", []):
        print(f"  adapted touch-down: {e['foot']} foot at t = {e['t']:.2f} s, its sole "
              f"{1000 * abs(e['offset_m']):.1f} mm {'above' if e['offset_m'] > 0 else 'below'} the plan")
    for e in res.get("toe_downs", []):
        print(f"  toes down over an edge: {e['foot']} foot at t = {e['t']:.2f} s, its sole turned {e['pitch_deg']:.2f} deg")
    for e in res.get("strikes", []):
        print(f"  swing strike: {e['foot']} foot at t = {e['t']:.2f} s, its sole rising {1000 * e['raise_m']:.1f} mm over the plan")
    for e in res.get("side_downs", []):
        print(f"  side down over an edge: {e['foot']} foot at t = {e['t']:.2f} s, its sole rolled {e['roll_deg']:.2f} deg")
    for g in res.get("landings", []):
        when = ("never" if g["contact_s"] is None else f"at t = {g['contact_s']:.2f} s"
                + ("" if g["early_s"] is None else f", {abs(g['early_s']):.3f} s {'before' if g['early_s'] > 0 else 'after'}"
                   f" the plan's touch-down"))
        print(f"  landing: {g['foot']} foot {when}")
    b = res["bounds"]
    knee = res["knee_error_deg"]
    print(f"  knee tracking error {'n/a' if knee is None else f'{knee:.3f} deg'} "
          f"(thesis: <= {b['knee_error_deg']:g} deg): {_verdict(res['knee_pass'])}")
    fe = res["following_error_max_deg"]
    print(f"  drive following error {'n/a' if fe is None else f'{fe:.3f} deg of motor turn'} "
          f"({res['following_error_axis']}; thesis: <= {b['following_error_deg']:g} deg): "
          f"{_verdict(res['following_pass'])}")
    print("  max tracking error per joint (deg): " + ", ".join(
        f"{j} {'n/a' if e is None else f'{e:.3f}'}" for j, e in res["joint_error_deg"].items()))
    zmp = res["min_zmp_margin_m"]
    print(f"  ZMP/CoP: min margin to the support polygon {'n/a' if zmp is None else f'{1e3 * zmp:.1f} mm'}, "
          f"outside it for {res['zmp_outside_s']:.2f} s")
    print(f"  states {' -> '.join(res['states'])}; faults {res['faults'] or 'none'}; "
          f"{res['overruns']} overruns, {res['missed_cycles']} missed cycles")
    print(f"  {res['sim_s']:.1f} s simulated in {res['wall_s']:.1f} s: {res['speed_x_realtime']}x real time")
    for path in res["plots"]:
        print(f"  plot {path}")


def _walk(args: argparse.Namespace, p: argparse.ArgumentParser, record: Path | None) -> int:
    """``bipd scenario walk``: exit 0 when the walk completed without a fall and within the thesis'
    bounds, 1 otherwise (or when the bench failed), 2 on bad usage."""
    from controller.tools.scenarios.walk import walk

    if args.gait is not None and not args.gait.is_file():
        p.error(f"walk: --gait {args.gait} is not a file")
    if args.gait is None and not (args.steps >= 1 and args.speed > 0):
        p.error("walk: --steps must be at least 1 and --speed > 0 m/h")
    variant = _walk_variant(args, p)
    options = Options(config=args.config, lockstep=not args.realtime, plot_dir=args.plot,
                      throttle_s=args.throttle_s, operator_sleep=args.operator_sleep, record=record,
                      transport=args.transport)

    def report(result) -> None:
        res = result.to_dict()
        if args.json:
            print(json.dumps(res), flush=True)
        else:
            _print_walk(res)
            sys.stdout.flush()

    try:
        res = walk(options, args.hung, args.gait, args.steps, args.speed, _say, report, **variant).to_dict()
    except (ConfigError, ScenarioError) as e:
        return _failed(e)
    return 0 if res["completed"] and res["knee_pass"] is not False and res["following_pass"] is not False else 1
def _walk_variant(args: argparse.Namespace, p: argparse.ArgumentParser) -> dict[str, Any]:
    """The walk's terrain, push and stabilizer from its arguments; a bad one is a usage error naming it."""
    from drivers.sim.hil.terrain import TerrainError, terrain

    given = (("--floor-pitch", args.floor_pitch, {"pitch_deg": args.floor_pitch}),
             ("--floor-roll", args.floor_roll, {"roll_deg": args.floor_roll}),
             ("--floor-step", args.floor_step, {"step": args.floor_step}))
    for flag, value, kw in given:
        try:
            terrain(**kw)
        except TerrainError as e:
            p.error(f"{flag} {value}: {e}")
    floor = terrain(args.floor_pitch, args.floor_roll, args.floor_step)
    if args.hung and not floor.flat:
        p.error("--floor-pitch/--floor-roll/--floor-step: the robot hung from the gantry (--hung) never reaches the floor")
    try:
        push = None if args.push is None else parse_push(args.push)
    except ValueError as e:
        p.error(f"--push {e}")
    if args.hung and push is not None:
        p.error("--push: the pelvis hung from the gantry (--hung) is fixed; push a robot on the floor")
    if args.stabilizer is not None and args.stabilizer not in WALK_STABILIZERS:
        p.error(f"--stabilizer {args.stabilizer}: no such stabilized walk (known: "
                f"{', '.join(WALK_STABILIZERS) or 'none yet; --no-stabilizer runs the open-loop gait'})")
    return {"terrain": floor, "push": push, "stabilizer": args.stabilizer}


def _whole_body(args: argparse.Namespace, p: argparse.ArgumentParser) -> int:
    """``bipd scenario whole-body``: one run of :mod:`.whole_body`; exit 1 if the robot fell."""
    from controller.tools.scenarios.whole_body import (PelvisPush, PlatformTilt, WholeBodyOptions,
                                                       check_stabilizer_set, parse_sets, push_strategies,
                                                       run_whole_body)

    for flag, v in (("--push-observer", args.push_observer), ("--push-step", args.push_step)):
        if v is not None and not v > 0.0:
            p.error(f"{flag} must be > 0, got {v:g}")
    try:
        keys = push_strategies(args.push_strategies, args.push_observer, args.push_step) + parse_sets(args.set)
    except ScenarioError as e:
        p.error(str(e))
    o = WholeBodyOptions(stabilizer=not args.no_stabilizer, support=args.support, tilt_source=args.tilt_source,
                         support_source=args.support_source, transport=args.transport, stabilizer_set=keys)
    if args.config is not None:
        o = dataclasses.replace(o, config=args.config)
    if args.set:
        try:
            check_stabilizer_set(o.config, keys)        # refused before anything starts
        except ConfigError as e:
            p.error(str(e))
    if args.rig_motion is not None:
        if args.push is not None:
            p.error("give --push or --rig-motion, not both")
        try:
            spec = checked_motion(args.rig_motion, o.config, "--rig-motion")   # refused before anything starts
        except (ConfigError, ScenarioError) as e:
            p.error(str(e))
        o = replace(o, trajectory_dir=motion_folder(spec))
        scenario = RigMotion(spec)
    elif args.push is not None:
        if args.push < 0:
            p.error("--push must be >= 0 N")
        scenario = PelvisPush(args.push, args.direction)
    else:
        limit = platform_limit_deg(o)
        if max(abs(args.alpha), abs(args.beta)) > limit or args.duration <= 0:
            p.error(f"--alpha / --beta within the platform's {limit:g} deg and --duration > 0 s")
        scenario = PlatformTilt(math.radians(args.alpha), math.radians(args.beta), args.duration)
    try:
        res = run_whole_body(scenario, o, _say, lambda r: _report_whole_body(r.to_dict(), args.json)).to_dict()
    except (ConfigError, ScenarioError) as e:
        return _failed(e)
    return 1 if res["fell"] else 0


def _report_whole_body(res: dict[str, Any], as_json: bool) -> None:
    """A whole-robot run's figures: one JSON object, or lines."""
    if as_json:
        print(json.dumps(res), flush=True)
        return
    mm = lambda x: "n/a" if x is None else f"{1e3 * x:.1f} mm"          # noqa: E731
    verdict = f"FELL ({res['fall_reason']})" if res["fell"] else "stood"
    print(f"{res['scenario']} {res['params']} on {res['support']} support "
          f"({'stabilizer' if res['stabilizer'] else 'posture held'}): {verdict}; min CoG margin "
          f"{mm(res['min_cog_margin_m'])}; stabilizer flags raised: {', '.join(res['stab_flags']) or 'none'}")
    if res["max_tilt_error_deg"] is not None:
        print(f"  the loop's tilt against the plate's hinges: largest error {res['max_tilt_error_deg']:.2f} deg")
    err = res["max_tracking_error_deg"]
    print(f"  max tracking error {'n/a' if err is None else f'{err:.3f} deg'} ({res['max_tracking_error_joint']})")
    if res["plate_travel_m"] is not None:
        print("  plate travel (x, y, z) " + ", ".join(f"{1e3 * v:.1f}" for v in res["plate_travel_m"])
              + f" mm; largest error to the commanded translation {mm(res['plate_tracking_error_m'])}"
              + ("" if res["plate_lag_s"] is None else f" ({mm(res['plate_error_at_lag_m'])} against the command "
                                                        f"delayed {1e3 * res['plate_lag_s']:.0f} ms)"))
    _print_rig_following(res)
    if res["aborted"]:
        print(f"  ended early: {res['aborted']}")
    print(f"  {res['sim_s']:.1f} s simulated in {res['wall_s']:.1f} s")
    for path in res["plots"]:
        print(f"  plot {path}")
    sys.stdout.flush()


def _write(p: argparse.ArgumentParser) -> None:
    """``--write [DIR]``: where a results subcommand rewrites its tables (default docs/results/)."""
    from controller.tools.scenarios.results import RESULTS_DIR

    p.add_argument("--write", nargs="?", const=RESULTS_DIR, type=Path, metavar="DIR",
                   help="rewrite each table between its markers in its page of docs/results/ (or of DIR)")


def _check_write(args: argparse.Namespace, p: argparse.ArgumentParser, *pages: tuple[str, tuple[str, str]]) -> None:
    """``--write``: each (page, markers) the command will rewrite exists with its block, before any run
    (a usage error, exit 2)."""
    from controller.tools.scenarios.results import check_page

    for page, markers in pages if args.write else ():
        try:
            check_page(args.write / page, markers)
        except ScenarioError as e:
            p.error(f"--write {args.write}: {e}")


def _table(args: argparse.Namespace, res: dict[str, Any], table: str, markers: tuple[str, str], page: str) -> int:
    """A results table: with ``--write`` into its ``page`` between ``markers``; printed (``--json``: ``res``)."""
    from controller.tools.scenarios.results import update_readme

    if args.write:
        update_readme(args.write / page, table, markers)
    print(json.dumps(res) if args.json else table)
    return 0


def _rig_tree(args: argparse.Namespace, p: argparse.ArgumentParser) -> int:
    """``bipd scenario rig`` / ``rig-results`` when the config's robot is a tree (BIP 2000 on the rig):
    :mod:`.whole_body`'s bench, stepped lock-step, both feet; exit 1 if the robot fell."""
    from controller.tools.scenarios.rig import TREE_MARKERS, TREE_PAGE, collect_tree, markdown_tree
    from controller.tools.scenarios.whole_body import WholeBodyOptions, run_whole_body

    bench = (("--realtime", args.realtime), ("--bolt-foot", args.bolt_foot),
             ("--tilt-source imu", args.tilt_source != "platform"), ("--throttle-s", args.throttle_s),
             ("--operator-sleep", args.operator_sleep), ("--record", getattr(args, "record", None)))
    if any(on for _, on in bench):
        p.error(f"{', '.join(flag for flag, on in bench if on)}: not available for a whole robot on the rig "
                f"({args.config} names a tree robot; its bench runs stepped lock-step)")
    o = WholeBodyOptions(config=args.config, stabilizer=not args.no_stabilizer,
                         trajectory_dir=motion_folder(args.motion) if args.scenario == "rig" else None,
                         plot_dir=getattr(args, "plot", None), transport=args.transport)
    try:
        if args.scenario == "rig-results":
            _check_write(args, p, (TREE_PAGE, TREE_MARKERS))
            res = collect_tree(o, args.runs, _say)
            return _table(args, res, markdown_tree(res), TREE_MARKERS, TREE_PAGE)
        res = run_whole_body(RigMotion(args.motion), o, _say,
                             lambda r: _report_whole_body(r.to_dict(), args.json)).to_dict()
    except (ConfigError, ScenarioError) as e:
        return _failed(e)
    return 1 if res["fell"] else 0


def _report(result: ScenarioResult, as_json: bool) -> None:
    res = result.to_dict()
    if as_json:
        print(json.dumps(res), flush=True)
    else:
        _print_result(res)
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
