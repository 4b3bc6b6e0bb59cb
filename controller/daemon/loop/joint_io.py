"""Joint I/O: bus <-> motor <-> joint, each way one Numba kernel (docs/cycle.md).

In: the legs' motor angles and rates gathered from the bus, the transmission's joints
q = f^-1(q_m) (Newton from the last q), J_p(q), q̇ = J_p^-1 q̇_m (thesis eq. 12-32), the bus
sensors decoded (the feet's load cells, a pelvis IMU and gyro; drivers.config.Sensor: three values per
axis' auxiliary input, in bus order) and the rotor bias J̇_p q̇ (models.transmission.motor_bias).
Out: τ_m = J_p^-T τ and, in CSP, q_m(q_ref), q̇_m = J_p q̇_ref, checked finite, scattered to the
bus (models.transmission via controller.daemon.loop.axes.motor_setpoints).
The variant (loads or none, a pelvis IMU or gyro or none, CSP or CST) is chosen here once: an absent sensor
is an empty output view, so the kernel's loops run zero times.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from drivers.cia402 import Mode
from drivers.hal import Bus
from models.transmission import OK, joint_velocity, motor_bias, motor_to_joint, transmission_jacobian
from stabilizer.contact import CELLS

from controller.daemon.loop.axes import CSP, motor_setpoints
from controller.daemon.loop.safety import first_nonfinite


@njit(cache=True)
def sensor_values(aux, rows, out):
    """A bus sensor's values from the auxiliary inputs of its axes ``rows`` (drivers.config.Sensor: three
    per input, in bus order) into ``out``, as many as it holds."""
    for k in range(out.shape[0]):
        out[k] = aux[rows[k // 3], k % 3]


@njit(cache=True)
def read_joints(position, velocity, aux, idx, P, qm, qmd, q, Jp, qd, rows_l, loads_l, rows_r, loads_r,
                imu_rows, imu, gyro_rows, gyro, jp2, bias_q, bias, bias_b, bias_status):
    """The cycle's way in (module docstring); returns the transmission's status (models.transmission),
    the sensors decoded and the rotor bias' status in ``bias_status[0]`` only when it is OK."""
    for k in range(idx.shape[0]):
        qm[k] = position[idx[k]]
    for k in range(idx.shape[0]):
        qmd[k] = velocity[idx[k]]
    st = motor_to_joint(P, qm, q)                  # q: the last q as the guess
    if st != OK:
        return st
    st = transmission_jacobian(P, q, Jp)
    if st != OK:
        return st
    st = joint_velocity(Jp, qmd, qd)
    if st != OK:
        return st
    sensor_values(aux, rows_l, loads_l)
    sensor_values(aux, rows_r, loads_r)
    sensor_values(aux, imu_rows, imu)
    sensor_values(aux, gyro_rows, gyro)
    bias_status[0] = motor_bias(P, q, qd, jp2, bias_q, bias, bias_b)
    return OK


@njit(cache=True)
def all_finite(x):
    for v in x.flat:
        if not np.isfinite(v):
            return False
    return True


@njit(cache=True)
def write_joints(mode, P, Jp, q_cmd, qd_cmd, tau, qm, qmd, tau_m, idx, target_position, target_velocity,
                 torque_offset):
    """The cycle's way out (module docstring). Returns (failed, transmission status, bus index of the
    first non-finite motor angle, else torque, -1 if none); nothing reaches the bus when failed."""
    st = motor_setpoints(mode, P, Jp, q_cmd, qd_cmd, tau, qm, qmd, tau_m)
    if st != OK or not all_finite(tau_m) or not all_finite(qm):
        k = first_nonfinite(qm)
        if k < 0:
            k = first_nonfinite(tau_m)
        return True, st, idx[k] if k >= 0 else -1
    if mode == CSP:
        for k in range(idx.shape[0]):
            target_position[idx[k]] = qm[k]
        for k in range(idx.shape[0]):
            target_velocity[idx[k]] = qmd[k]
    for k in range(idx.shape[0]):
        torque_offset[idx[k]] = tau_m[k]
    return False, OK, -1


class JointIO:
    """The legs' joints on the bus: ``read()`` fills q, q̇ (and the sensors), ``write(q, q̇, τ)`` the
    drives' setpoints. ``leg_idx`` / ``plat_idx`` / ``all_idx``: the legs', the platform's, all axes' bus
    indices (control.joint_axes, control.platform_axes)."""

    def __init__(self, bus: Bus, joint_axes: tuple[str, ...], platform_axes: tuple[str, ...], transmission,
                 mode: str, n: int) -> None:
        self.bus = bus
        self.P = transmission.params
        self.leg_idx = np.array([bus.axis_names.index(a) for a in joint_axes], np.int64)
        self.plat_idx = np.array([bus.axis_names.index(a) for a in platform_axes], np.int64)
        self.all_idx = np.concatenate([self.leg_idx, self.plat_idx])
        self.mode = CSP if mode == "csp" else int(Mode.CST)
        z = lambda k=n: np.zeros(k)  # noqa: E731
        self.qm, self.qmd, self.q, self.qd = z(), z(), z(), z()
        self.Jp = np.zeros((n, n))
        self.bias, self.bias_q, self.bias_b, self.Jp2 = z(), z(), z(), np.zeros((n, n))   # J̇_p q̇ (motor_bias)
        self.bias_status = np.zeros(1, np.int64)
        self.qm_cmd, self.qmd_cmd, self.tau_m = z(), z(), z()
        # BIP 2000's feet load cells on the bus (drivers.config.SENSORS): left foot's cells, then right's (N)
        rows_l = np.array(bus.config.sensor_axes("left_loads"), np.int64)
        rows_r = np.array(bus.config.sensor_axes("right_loads"), np.int64)
        self.has_loads = rows_l.size > 0 and rows_r.size > 0
        self.loads = z(2 * CELLS)
        self.loads_l, self.loads_r = self.loads[:CELLS], self.loads[CELLS:]
        self._rows_l, self._rows_r = rows_l, rows_r
        self._loads_l = self.loads_l if self.has_loads else self.loads[:0]
        self._loads_r = self.loads_r if self.has_loads else self.loads[:0]
        self.imu_rows = np.array(bus.config.sensor_axes("pelvis_imu"), np.int64)
        self.pelvis_imu = np.zeros(0)              # set by the estimation when it takes a pelvis IMU
        self.gyro_rows = np.array(bus.config.sensor_axes("pelvis_gyro"), np.int64)
        self.pelvis_gyro = np.zeros(0)             # its rate gyro: set by the estimation when it takes one

    def read(self) -> int:
        """Motor -> joint and the sensors (one kernel); the transmission's status."""
        b = self.bus
        return read_joints(b.position, b.velocity, b.aux, self.leg_idx, self.P, self.qm, self.qmd, self.q, self.Jp,
                           self.qd, self._rows_l, self._loads_l, self._rows_r, self._loads_r, self.imu_rows,
                           self.pelvis_imu, self.gyro_rows, self.pelvis_gyro, self.Jp2, self.bias_q, self.bias,
                           self.bias_b, self.bias_status)

    def write(self, q_cmd: np.ndarray, qd_cmd: np.ndarray, tau: np.ndarray) -> tuple[bool, int, int]:
        """Joint -> motor setpoints on the bus (one kernel): (failed, status, bus axis) as write_joints."""
        b = self.bus
        return write_joints(self.mode, self.P, self.Jp, q_cmd, qd_cmd, tau, self.qm_cmd, self.qmd_cmd, self.tau_m,
                            self.leg_idx, b.target_position, b.target_velocity, b.torque_offset)

    def nonfinite_axis(self, motors: np.ndarray) -> int:
        """Bus index of the first leg motor value in ``motors`` that is not finite, -1 if none."""
        k = first_nonfinite(motors)
        return int(self.leg_idx[k]) if k >= 0 else -1
