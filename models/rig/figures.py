"""Staicu 2008, Figures 3-8: the six actuator forces f_32^A ... f_32^F over the test
motion (eq. 5-6), by inverse dynamics (eq. 19-20).

``python -m models.rig.figures [RIG_YAML] [--png PATH]`` prints each force's
extrema and their times and, with ``--png``, draws the six curves (needs matplotlib:
``pip install 'bipd[plot]'``; refused before anything runs without it). The paper gives
these figures as plots only, without numbers, so the PNG is what to compare by eye.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from models.common.errors import ModelError
from models.rig.stewart import staicu_motion
from models.rig.config import LEG_NAMES
from models.rig.robot import StewartRig

DEFAULT_RIG = Path(__file__).resolve().parents[2] / "deploy" / "rigs" / "stewart_staicu2008.yaml"


def force_curves(rig: StewartRig, samples: int = 301) -> tuple[np.ndarray, np.ndarray]:
    """Times (s) and forces (N) [samples, 6 actuators] over one period of the test motion."""
    ts = np.linspace(0.0, rig.model.desc.motion.duration, samples)
    return ts, np.array([rig.forces(*staicu_motion(rig.model.desc, t)) for t in ts])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.rig.figures", description=__doc__.splitlines()[0])
    p.add_argument("rig", nargs="?", default=str(DEFAULT_RIG))
    p.add_argument("--png", help="write the six curves to this PNG")
    a = p.parse_args(argv)
    if a.png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("--png needs matplotlib: pip install 'bipd[plot]'", file=sys.stderr)
            return 2
    try:
        rig = StewartRig.from_yaml(a.rig)
        ts, f = force_curves(rig)
    except ModelError as e:
        print(e, file=sys.stderr)
        return 2
    print(f"{rig.model.name}: actuator forces over the test motion (Staicu 2008, Figures 3-8)")
    for j, leg in enumerate(LEG_NAMES):
        lo, hi = int(np.argmin(f[:, j])), int(np.argmax(f[:, j]))
        print(f"  f_32^{leg} (Fig. {3 + j}): min {f[lo, j]:8.1f} N at t = {ts[lo]:.2f} s, "
              f"max {f[hi, j]:8.1f} N at t = {ts[hi]:.2f} s")
    if a.png:
        fig, axes = plt.subplots(3, 2, figsize=(9, 9), sharex=True)
        for j, (leg, ax) in enumerate(zip(LEG_NAMES, axes.ravel())):
            ax.plot(ts, f[:, j])
            ax.set_title(f"Fig. {3 + j}: force f_32^{leg} of actuator {leg}")
            ax.set_ylabel("N")
            ax.grid(True)
        for ax in axes[-1]:
            ax.set_xlabel("t (s)")
        fig.suptitle(f"{rig.model.name}: test motion of Staicu 2008, eq. 5-6")
        fig.tight_layout()
        fig.savefig(a.png, dpi=90)
        print(f"  wrote {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
