"""The rig's MuJoCo model (drivers.sim.hil.stewart_mjcf) against the virtual-work model of Staicu 2008
(eq. 19-20, models.rig.dynamics) over the text's test motion (§3, Δt = 3 s)."""
from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import yaml

from drivers.sim.hil.mjcf import MjcfError
from drivers.sim.hil.stewart_mjcf import ACTUATORS, RigState, gear, required_forces, rig_mjcf, rig_params
from models.rig.stewart import StewartData, StewartModel, staicu_motion
from models.rig.config import stewart_from_dict
from models.rig.dynamics import inverse_dynamics
from tests.paths import STEWART_RIG


FORCE_TOL = 1e-3        # N, on forces of 700-1250 N: both sides are exact up to rounding and the cap's 1e-6 kg
NO_DRIVE = {"motor_inertia": 0.0, "motor_friction": 0.0}    # the model has no drive: compare the mechanism


def _scene(model: StewartModel, params=None):
    m = mujoco.MjModel.from_xml_string(rig_mjcf(model, params))
    return m, mujoco.MjData(m), RigState(m)


def _forces(model: StewartModel, scene, t: float) -> tuple[np.ndarray, np.ndarray, float]:
    m, d, state = scene
    sd = StewartData()
    x, xd, xdd = staicu_motion(model.desc, t)
    assert inverse_dynamics(model.buf, sd.buf, x, xd, xdd) == 0
    state.write(d, sd.q, sd.qd, sd.qdd, x, sd.Rp, sd.vG, sd.wp, sd.aG, sd.dwp)
    f, residual = required_forces(m, d, state)
    return f, sd.force.copy(), residual


def test_mujoco_needs_the_virtual_work_forces_over_the_test_motion(stewart):
    scene = _scene(stewart, NO_DRIVE)
    m, d, _ = scene
    assert (m.nv, m.neq) == (42, 6)                       # 6 legs x (U, P, S) + the platform; six welds
    worst = 0.0
    for t in np.linspace(0.0, 3.0, 31):
        f, ref, residual = _forces(stewart, scene, t)
        mujoco.mj_forward(m, d)                           # the IK's state closes every loop
        assert np.abs(d.efc_pos).max() < 1e-12
        assert residual < 1e-6
        worst = max(worst, float(np.abs(f - ref).max()))
    assert worst < FORCE_TOL


def test_the_legs_masses_are_in_both(stewart):
    """Without the legs' bodies the forces change by far more than the tolerance, and MuJoCo's
    still agree with the model's: the agreement above is not the platform's alone."""
    raw = yaml.safe_load(STEWART_RIG.read_text())
    for body in ("cross1", "cylinder", "rod", "cross4", "piece5"):
        raw["bodies"][body] = {"mass": 1e-6, "inertia": [1e-6, 1e-6, 1e-6]}
    light = StewartModel(stewart_from_dict(raw, "light legs"))
    f_light, ref_light, _ = _forces(light, _scene(light, NO_DRIVE), 1.3)
    _, ref, _ = _forces(stewart, _scene(stewart, NO_DRIVE), 1.3)
    assert np.abs(ref - ref_light).max() > 100.0
    assert np.abs(f_light - ref_light).max() < FORCE_TOL


def test_the_drives_torques_through_the_screws_play_the_test_motion(stewart):
    """The model's forces plus the rotors' (2π/p)² J λ'' as motor torques through the screws
    (force = 2π/p × torque), with a stiff position loop on each actuator (the drive's, CSP) for
    what the open loop lets drift, keep MuJoCo on the test motion for Δt = 3 s; the loop's share of
    the force stays small: the feed-forward does the work."""
    p = rig_params({"motor_friction": 0.0})
    m, d, state = _scene(stewart, p)
    g, kp, kd = gear(p), 2.0e5, 4.0e3                      # N/m, N s/m on the actuator
    sd = StewartData()
    x, xd, xdd = staicu_motion(stewart.desc, 0.0)
    inverse_dynamics(stewart.buf, sd.buf, x, xd, xdd)
    state.write(d, sd.q, sd.qd, sd.qdd, x, sd.Rp, sd.vG, sd.wp, sd.aG, sd.dwp)
    mujoco.mj_forward(m, d)
    act = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in ACTUATORS]
    worst, loop, ff = 0.0, 0.0, 0.0
    for k in range(round(3.0 / m.opt.timestep)):
        t = k * m.opt.timestep
        x, xd, xdd = staicu_motion(stewart.desc, t)
        inverse_dynamics(stewart.buf, sd.buf, x, xd, xdd)
        feed = sd.force + g * g * p["motor_inertia"] * sd.qdd[:, 2]
        pd = kp * (sd.q[:, 2] - d.qpos[state.qadr[:, 2]]) + kd * (sd.qd[:, 2] - d.qvel[state.dadr[:, 2]])
        d.ctrl[act] = (feed + pd) / g
        mujoco.mj_step(m, d)
        x, _, _ = staicu_motion(stewart.desc, t + m.opt.timestep)
        worst = max(worst, float(np.abs(d.qpos[state.pq:state.pq + 3] - state.base - x[:3]).max()))
        loop, ff = max(loop, float(np.abs(pd).max())), max(ff, float(np.abs(feed).max()))
    assert worst < 5e-5                                    # m, over a 0.04-0.12 m motion
    assert loop < 0.01 * ff


def test_bad_rig_parameters_are_refused():
    with pytest.raises(MjcfError, match=r"rig.screw_lead must be a finite number > 0, got -0.01"):
        rig_params({"screw_lead": -0.01})
    with pytest.raises(MjcfError, match=r"rig.lead is not a known key"):
        rig_params({"lead": 0.01})
    assert gear(rig_params(None)) == pytest.approx(2 * math.pi / 0.02)
