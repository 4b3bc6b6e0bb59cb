"""ACOPOSmicro-like drives: one controlled node drives two motors (set values: thesis Figure 13).

Per axis and per bus cycle (400 µs) the drive
  * interpolates the setpoints it receives every control period (2 ms) linearly over the bus
    cycles of that period (set-value generator, thesis Figure 13): at sub-step k = 1..N the
    demand is old + (new - old)·k/N, N = control period / cycle time;
  * runs the position -> speed -> current cascade (CSP 8; CSV 9 enters at the speed loop;
    CST 10 commands current = torque/kt), with speed and current limits;
  * in CSP, trips a following-error fault (0x8611) when |demand − actual| exceeds the limit; the
    following error demand − actual (motor rad) is object 0x60F4 and its peak since it was last
    taken (:meth:`DriveBank.take_following_peak`) what a test bench reads (0 outside CSP);
  * reads its encoder in whole increments (``encoder_increments`` per motor revolution: the
    measured position is floor(θ·increments/2π)·2π/increments) and reports an encoder fault
    (0x7305) when the encoder reads NaN;
  * applies the motor's holding brake (``holding_brake_torque`` > 0) while the axis is not
    Operation Enabled and not braking (kernel loop LOOP_OFF; a quick stop or fault reaction hands over
    to it once it reaches standstill): a spring-damper on the true motor position latched when
    the brake engaged, τ_b = −K_b (θ − θ_b) − D_b θ̇ with D_b = kp_speed·kt and K_b = kp_position·D_b
    (the drive's own P–P position/speed cascade without its integrator), saturated at
    ±holding_brake_torque; beyond that the brake slips (θ_b is dragged so |K_b (θ − θ_b)| ≤ the
    brake torque). The brake is mechanical: its torque goes to the plant, the reported current is 0.
The numerics for every axis of the simulated network run in one Numba kernel
(:func:`step_axes`); :class:`Drive` holds the CiA 402 state machine, fault history and object
dictionary of one two-axis drive, with its rows in the shared :class:`DriveBank` arrays.

Process data (DS 301 §6.4, IEC 61800-7-201 data types): the drive takes its setpoints as
increments, increments/s and per mille of the rated torque, and reports its actual position,
velocity and current as increments, increments/s and per mille of the rated current, each rounded
to nearest (drivers.powerlink.scaling; a value beyond its integer saturates and sets the
statusword's internal limit bit). Each drive's TPDO lives in its node's PRes frame buffer
(:attr:`Drive.pres_buffer`, one row of ``DriveBank.pres``). The kernel writes every axis' channel
(statusword, mode display, actual position/velocity/current, error code) after each bus cycle;
a state, mode or fault change between two steps rewrites that channel at once
(:meth:`Drive._publish`), so a PRes always carries the drive's current TPDO.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from drivers import cia402
from drivers.cia402 import Command, State
from drivers.codes import FaultCode, error_register_bits
from drivers.config import AUX_VALUES, SENSORS, AxisConfig, BusConfig
from drivers.sim.plant import Plant
from drivers.powerlink import frames, pdo
from drivers.powerlink.checks import put_le
from drivers.powerlink.scaling import put_scaled, scale_table
from drivers.sim.object_dictionary import DRIVE_COLUMNS, ObjectDictionary, drive_dictionary

# DriveBank's arrays, declared once: (column, width, meaning); the column constants derive from them.
X_COLUMNS = (                  # DriveBank.x, one float row per axis
    ("KP", 1, "position loop gain [1/s]"),
    ("KV", 1, "speed loop P gain [A/(rad/s)]"),
    ("KI", 1, "speed loop I gain [A/rad]"),
    ("KT", 1, "torque constant [N·m/A]"),
    ("I_MAX", 1, "current limit [A]"),
    ("V_MAX", 1, "speed limit [rad/s]"),
    ("FE_LIMIT", 1, "following error limit [rad]"),
    ("P_OLD", 1, "interpolator: position setpoint of the previous control period"),
    ("P_NEW", 1, "interpolator: position setpoint of this control period"),
    ("V_OLD", 1, "interpolator: speed setpoint, previous period"),
    ("V_NEW", 1, "interpolator: speed setpoint, this period"),
    ("T_OLD", 1, "interpolator: torque setpoint, previous period"),
    ("T_NEW", 1, "interpolator: torque setpoint, this period"),
    ("INTEG", 1, "speed loop integrator [A]"),
    ("ENC_OFFSET", 1, "encoder offset of an injected jump [rad]"),
    ("BRAKE_TIME", 1, "time spent braking [s]"),
    ("P_DEM", 1, "position demand of this bus cycle (CSP) [rad]"),
    ("V_DEM", 1, "speed command of this bus cycle [rad/s]"),
    ("T_DEM", 1, "torque demand of this bus cycle [N·m]"),
    ("CMD_POS", 1, "latest RPDO target position [rad]"),
    ("CMD_VEL", 1, "latest RPDO target velocity [rad/s]"),
    ("CMD_TORQUE", 1, "latest RPDO torque offset [N·m]"),
    ("ACT_POS", 1, "actual position [rad]"),
    ("ACT_VEL", 1, "actual velocity [rad/s]"),
    ("ACT_CUR", 1, "actual current [A]"),
    ("HOLD_TORQUE", 1, "holding brake capacity [N·m], 0 = no brake"),
    ("BRAKE_POS", 1, "motor position the brake holds [rad]"),
    ("AUX", 3, "auxiliary sensor input, TPDO 0x2400:1..3 (NaN: nothing wired; drivers.config.SENSORS)"),
    ("FE_ACTUAL", 1, "following error of this bus cycle, CSP demand − actual [motor rad]"),
    ("FE_PEAK", 1, "peak |following error| since last taken [motor rad]"),
    ("SCALE", len(pdo.SCALES), "SI -> process data integers (drivers.powerlink.pdo.SCALES, scaling.scale_table)"),
)
FLAG_COLUMNS = (               # DriveBank.flags, one integer row per axis
    ("MODE", 1, "control loop of the kernel (LOOP_*)"),
    ("ENC_NAN", 1, "bus cycles the encoder still reads NaN"),
    ("MOTOR", 1, "plant motor index"),
    ("STATUS_BITS", 1, "statusword bits the kernel sets (internal limit, following error)"),
    ("STANDSTILL", 1, "braking reached standstill"),
    ("NEW_FAULT", 1, "fault code the kernel detected this bus cycle"),
    ("BRAKE_ON", 1, "holding brake engaged"),
    ("PRES_ROW", 1, "row of DriveBank.pres (the node's PRes frame)"),
    ("CHANNEL", 1, "PDO channel within the node"),
    ("SW_BASE", 1, "statusword of the CiA 402 state"),
    ("MODE_DISPLAY", 1, "modes of operation display 0x6061"),
    ("ERROR_CODE", 1, "error code 0x603F"),
    ("IDEM_CW", 1, "controlword whose RPDO would only change the setpoints (-1: none; drivers.sim.isochronous)"),
)


def _columns(declared: tuple[tuple[str, int, str], ...], *names: str) -> tuple[int, ...]:
    """First column of each named field of a declaration above."""
    first, at = {}, 0
    for name, width, _ in declared:
        first[name] = at
        at += width
    return tuple(first[n] for n in names)


N_COLUMNS = sum(width for _, width, _ in X_COLUMNS)
N_FLAGS = sum(width for _, width, _ in FLAG_COLUMNS)
KP, KV, KI, KT, I_MAX, V_MAX, FE_LIMIT = _columns(X_COLUMNS, "KP", "KV", "KI", "KT", "I_MAX", "V_MAX", "FE_LIMIT")
P_OLD, P_NEW, V_OLD, V_NEW, T_OLD, T_NEW = _columns(X_COLUMNS, "P_OLD", "P_NEW", "V_OLD", "V_NEW", "T_OLD", "T_NEW")
INTEG, ENC_OFFSET, BRAKE_TIME = _columns(X_COLUMNS, "INTEG", "ENC_OFFSET", "BRAKE_TIME")
P_DEM, V_DEM, T_DEM = _columns(X_COLUMNS, "P_DEM", "V_DEM", "T_DEM")
CMD_POS, CMD_VEL, CMD_TORQUE = _columns(X_COLUMNS, "CMD_POS", "CMD_VEL", "CMD_TORQUE")
ACT_POS, ACT_VEL, ACT_CUR = _columns(X_COLUMNS, "ACT_POS", "ACT_VEL", "ACT_CUR")
HOLD_TORQUE, BRAKE_POS, AUX = _columns(X_COLUMNS, "HOLD_TORQUE", "BRAKE_POS", "AUX")
FE_ACTUAL, FE_PEAK, SCALE = _columns(X_COLUMNS, "FE_ACTUAL", "FE_PEAK", "SCALE")
_POSITION_SCALE, _VELOCITY_SCALE, _TORQUE_SCALE, _CURRENT_SCALE = (SCALE + pdo.SCALES.index(s) for s in (
    "position", "velocity", "torque", "current"))
MODE, ENC_NAN, MOTOR, STATUS_BITS, STANDSTILL, NEW_FAULT, BRAKE_ON = _columns(
    FLAG_COLUMNS, "MODE", "ENC_NAN", "MOTOR", "STATUS_BITS", "STANDSTILL", "NEW_FAULT", "BRAKE_ON")
PRES_ROW, CHANNEL, SW_BASE, MODE_DISPLAY, ERROR_CODE, IDEM_CW = _columns(
    FLAG_COLUMNS, "PRES_ROW", "CHANNEL", "SW_BASE", "MODE_DISPLAY", "ERROR_CODE", "IDEM_CW")
# The kernel's control loop per axis (not the CiA 402 modes of operation, drivers.cia402.Mode):
# none, position cascade, speed loop, current only, braking to standstill.
LOOP_OFF, LOOP_POSITION, LOOP_SPEED, LOOP_TORQUE, LOOP_BRAKE = range(5)
# DriveConfig parameter of each parameter column.
_PARAMETERS = ((KP, "kp_position"), (KV, "kp_speed"), (KI, "ki_speed"), (KT, "torque_constant"),
               (I_MAX, "current_limit"), (V_MAX, "speed_limit"), (FE_LIMIT, "following_error_limit"),
               (HOLD_TORQUE, "holding_brake_torque"))

STANDSTILL_SPEED = 0.05      # [rad/s] below which braking is done
MAX_BRAKE_TIME = 0.5         # [s] after which braking ends anyway
_ENCODER_FAULT = int(FaultCode.ENCODER)
_FOLLOWING_ERROR = int(FaultCode.FOLLOWING_ERROR)
_LIMIT_BIT = cia402.SW_INTERNAL_LIMIT
_FOLLOWING_BIT = cia402.SW_FOLLOWING_ERROR
FAULT_HISTORY_LENGTH = 8

_STATUSWORD = tuple(cia402.STATUSWORD[s] | cia402.SW_REMOTE
                    | (cia402.SW_FOLLOWS_COMMAND if s == State.OPERATION_ENABLED else 0) for s in State)
_TPDO_CHANNEL_SIZE = pdo.TPDO.channel_struct.size
pdo.TPDO.require("drivers.sim.drive._write_tpdo", statusword=pdo.UNSIGNED16, modes_of_operation_display=pdo.INTEGER8,
                 error_code=pdo.UNSIGNED16, aux_input_x=pdo.REAL32, aux_input_y=pdo.REAL32, aux_input_z=pdo.REAL32)
PRES_LENGTH = max(frames.PDO_OFFSET + pdo.TPDO.size + frames.FCS_SIZE, frames.MIN_FRAME)
_KERNEL_MODE = {cia402.Mode.CSP: LOOP_POSITION, cia402.Mode.CSV: LOOP_SPEED, cia402.Mode.CST: LOOP_TORQUE}
# _STEADY[state][cw & 0x0F]: a controlword repeated (no fault-reset edge) leaves ``state`` as it is.
_STEADY = tuple(tuple(cia402.NEXT_STATE[s][cia402.decode_command(n, n)] == s for n in range(16)) for s in State)
# Enum member lookups cost ~0.2 µs each on Python 3.11: the per-cycle code uses these aliases.
_FAULT_RESET, _OPERATION_ENABLED = Command.FAULT_RESET, State.OPERATION_ENABLED


@njit(cache=True)
def _write_tpdo(pres, x, flags, a):
    """Axis ``a``'s TPDO channel (drivers.powerlink.pdo.TPDO) into its PRes row, as struct would pack it."""
    row = pres[flags[a, PRES_ROW]]
    at = frames.PDO_OFFSET + flags[a, CHANNEL] * _TPDO_CHANNEL_SIZE
    scales = x[a, SCALE:]
    clamped = put_scaled(row, at, pdo.TPDO_POSITION, x[a, ACT_POS], scales)
    clamped |= put_scaled(row, at, pdo.TPDO_VELOCITY, x[a, ACT_VEL], scales)
    clamped |= put_scaled(row, at, pdo.TPDO_CURRENT, x[a, ACT_CUR], scales)
    put_le(row, at + pdo.TPDO_STATUSWORD, flags[a, SW_BASE] | flags[a, STATUS_BITS] | (_LIMIT_BIT if clamped else 0), 2)
    put_le(row, at + pdo.TPDO_MODE_DISPLAY, flags[a, MODE_DISPLAY], 1)
    put_le(row, at + pdo.TPDO_ERROR_CODE, flags[a, ERROR_CODE], 2)
    for k in range(len(pdo.TPDO_AUX)):
        put_le(row, at + pdo.TPDO_AUX[k], np.float32(x[a, AUX + k]).view(np.uint32), 4)


@njit(cache=True)
def step_axes(x, flags, plant_pos, plant_vel, aux_src, aux_rows, torque, dt, phase, ratio, control_period, pres):
    """One bus cycle of every axis, its TPDO written into ``pres``; returns the number of axes
    reporting a new fault. Axis ``aux_rows[s]`` reads ``aux_src[s]`` (a plant sensor) on its
    auxiliary input, at the same instant as the encoders."""
    n_new = 0
    for s in range(aux_rows.shape[0]):
        for k in range(3):
            x[aux_rows[s], AUX + k] = aux_src[s, k]
    frac = (phase + 1) / ratio
    for a in range(x.shape[0]):
        m = flags[a, MOTOR]
        per_rad = x[a, _POSITION_SCALE]
        pos = np.floor((plant_pos[m] + x[a, ENC_OFFSET]) * per_rad) / per_rad     # whole encoder increments
        if flags[a, ENC_NAN] > 0:
            pos = np.nan
            flags[a, ENC_NAN] -= 1
        vel = plant_vel[m]
        md = flags[a, MODE]
        if phase == 0:
            x[a, P_OLD] = x[a, P_NEW]
            x[a, V_OLD] = x[a, V_NEW]
            x[a, T_OLD] = x[a, T_NEW]
            x[a, P_NEW] = x[a, CMD_POS]
            x[a, V_NEW] = x[a, CMD_VEL]
            x[a, T_NEW] = x[a, CMD_TORQUE]
        bits = 0
        current = 0.0
        x[a, FE_ACTUAL] = 0.0
        if np.isnan(pos):
            flags[a, NEW_FAULT] = _ENCODER_FAULT
            n_new += 1
            md = LOOP_OFF
        elif md == LOOP_OFF:
            x[a, P_OLD] = pos
            x[a, P_NEW] = pos
            x[a, INTEG] = 0.0
        if md != LOOP_OFF:
            kt = x[a, KT]
            i_max = x[a, I_MAX]
            t_dem = x[a, T_OLD] + (x[a, T_NEW] - x[a, T_OLD]) * frac
            x[a, T_DEM] = t_dem
            if md == LOOP_TORQUE:
                current = t_dem / kt
            else:
                if md == LOOP_POSITION:
                    p_dem = x[a, P_OLD] + (x[a, P_NEW] - x[a, P_OLD]) * frac
                    x[a, P_DEM] = p_dem
                    error = p_dem - pos
                    x[a, FE_ACTUAL] = error
                    x[a, FE_PEAK] = max(x[a, FE_PEAK], abs(error))
                    if abs(error) > x[a, FE_LIMIT]:
                        flags[a, NEW_FAULT] = _FOLLOWING_ERROR
                        n_new += 1
                        bits |= _FOLLOWING_BIT
                    v_cmd = (x[a, P_NEW] - x[a, P_OLD]) / control_period + x[a, KP] * error
                elif md == LOOP_SPEED:
                    v_cmd = x[a, V_OLD] + (x[a, V_NEW] - x[a, V_OLD]) * frac
                else:
                    v_cmd = 0.0
                    t_dem = 0.0
                    x[a, BRAKE_TIME] += dt
                    flags[a, STANDSTILL] = abs(vel) < STANDSTILL_SPEED or x[a, BRAKE_TIME] > MAX_BRAKE_TIME
                v_max = x[a, V_MAX]
                if v_cmd > v_max or v_cmd < -v_max:
                    v_cmd = min(max(v_cmd, -v_max), v_max)
                    bits |= _LIMIT_BIT
                x[a, V_DEM] = v_cmd
                e_v = v_cmd - vel
                current = x[a, KV] * e_v + x[a, INTEG] + t_dem / kt
                if -i_max <= current <= i_max:
                    x[a, INTEG] += x[a, KI] * e_v * dt
            if current > i_max or current < -i_max:
                current = min(max(current, -i_max), i_max)
                bits |= _LIMIT_BIT
        tau = x[a, KT] * current
        hold = x[a, HOLD_TORQUE]
        if hold > 0.0:
            if flags[a, MODE] == LOOP_OFF:
                # holding brake, on the true motor position (mechanical: no encoder involved)
                theta = plant_pos[m]
                if flags[a, BRAKE_ON] == 0:
                    flags[a, BRAKE_ON] = 1
                    x[a, BRAKE_POS] = theta
                damping = x[a, KV] * x[a, KT]
                stiffness = x[a, KP] * damping
                spring = stiffness * (theta - x[a, BRAKE_POS])
                if spring > hold or spring < -hold:          # slipping: drag the latched position
                    spring = min(max(spring, -hold), hold)
                    x[a, BRAKE_POS] = theta - spring / stiffness
                tau -= min(max(spring + damping * vel, -hold), hold)
            else:
                flags[a, BRAKE_ON] = 0
        torque[m] = tau
        x[a, ACT_POS] = pos
        x[a, ACT_VEL] = vel
        x[a, ACT_CUR] = current
        flags[a, STATUS_BITS] = bits
        _write_tpdo(pres, x, flags, a)
    return n_new


class DriveBank:
    """Arrays of every simulated axis (rows in ``BusConfig.axes`` order) and the plant they drive."""

    def __init__(self, config: BusConfig, plant: Plant) -> None:
        n = len(config.axes)
        if plant.n_motors != n:
            raise ValueError(f"the plant has {plant.n_motors} motors but the bus config drives {n} axes")
        self.config = config
        self.plant = plant
        self.x = np.zeros((n, N_COLUMNS))
        for column, parameter in _PARAMETERS:
            self.x[:, column] = [getattr(a.drive, parameter) for a in config.axes]
        self.x[:, SCALE:SCALE + len(pdo.SCALES)] = scale_table(config.axes)
        self.x[:, AUX:AUX + 3] = np.nan                       # nothing wired to the auxiliary inputs
        wired = []                                            # (bus axis, the plant sensor's values on its input)
        for name, spec in SENSORS.items():
            for part, row in enumerate(config.sensor_axes(name)):
                values = plant.sensors.get(spec.plant)
                if values is None or values.size < spec.first + spec.size:
                    raise ValueError(f"bus axis {config.axes[row].name!r} declares sensor: {name} but the plant "
                                     f"{type(plant).__name__} has no {spec.plant} sensor"
                                     + ("" if values is None else f" of {spec.first + spec.size} values"))
                first = spec.first + AUX_VALUES * part
                wired.append((row, values[first:min(first + AUX_VALUES, spec.first + spec.size)]))
        self._aux_views = [view for _, view in wired]         # the plant's sensors on those axes' inputs
        self.aux_rows = np.array([row for row, _ in wired], np.int64)
        self.aux_src = np.full((len(wired), AUX_VALUES), np.nan)
        self.read_aux()
        self.x[self.aux_rows, AUX:AUX + 3] = self.aux_src
        self.flags = np.zeros((n, N_FLAGS), np.int64)
        self.flags[:, MOTOR] = np.arange(n)
        self.mode = self.flags[:, MODE]
        self.enc_nan = self.flags[:, ENC_NAN]
        self.standstill = self.flags[:, STANDSTILL]
        self.new_fault = self.flags[:, NEW_FAULT]
        self.jumps: dict[int, int] = {}
        self.braking: set[Drive] = set()
        self.time = 0.0
        self.torque = np.zeros(n)
        self.owners: dict[int, tuple[Drive, int]] = {}
        self.pres = np.zeros((len(config.nodes), PRES_LENGTH), np.uint8)   # one PRes frame per drive
        self._drives = 0
        self.ratio = config.cycles_per_control
        self.dt = config.cycle_time_s
        self.control_period = config.control_period_s

    def step(self, phase: int) -> None:
        """One bus cycle of every drive, then of the plant."""
        self.read_aux()
        self.after_step(step_axes(self.x, self.flags, self.plant.motor_position, self.plant.motor_velocity,
                                  self.aux_src, self.aux_rows,
                                  self.torque, self.dt, phase, self.ratio, self.control_period, self.pres))

    def after_step(self, n_new: int) -> None:
        """The rest of a bus cycle once :func:`step_axes` has run (and returned ``n_new``): new
        faults into the CiA 402 state machines, finished quick stops, encoder jumps, the plant."""
        if n_new:
            for row in np.flatnonzero(self.new_fault):
                drive, ch = self.owners[row]
                drive.raise_fault(ch, int(self.new_fault[row]))
                self.new_fault[row] = 0
        if self.braking:
            for drive in list(self.braking):
                drive.check_braking()
        if self.jumps:
            self._count_down_jumps()
        self.plant.step(self.dt, self.torque)
        self.time += self.dt

    def take_following_peak(self, out: np.ndarray) -> None:
        """Each axis' peak |following error| (motor rad) since the last call into ``out``, then reset."""
        out[:] = self.x[:, FE_PEAK]
        self.x[:, FE_PEAK] = 0.0

    def read_aux(self) -> None:
        """The wired plant sensors into :attr:`aux_src`, for the :func:`step_axes` that follows (the
        plant's state of the encoders it reads)."""
        for s, view in enumerate(self._aux_views):
            self.aux_src[s, :view.size] = view

    def pres_row(self) -> int:
        """A free row of :attr:`pres` for a new drive."""
        if self._drives == len(self.pres):
            raise ValueError(f"the bus config has {len(self.pres)} nodes: no PRes row left for another drive")
        self._drives += 1
        return self._drives - 1

    def encoder_jump(self, row: int, offset: float, cycles: int) -> None:
        """Add ``offset`` to the encoder reading of ``row`` for ``cycles`` bus cycles."""
        self.x[row, ENC_OFFSET] += offset
        self.jumps[row] = self.jumps.get(row, 0) + cycles

    def _count_down_jumps(self) -> None:
        for row in list(self.jumps):
            self.jumps[row] -= 1
            if self.jumps[row] <= 0:
                del self.jumps[row]
                self.x[row, ENC_OFFSET] = 0.0


class Drive:
    """One two-axis drive: CiA 402 state machines, fault codes and history, object dictionary."""

    def __init__(self, bank: DriveBank, axes: tuple[AxisConfig, ...]) -> None:
        self.bank = bank
        self.pres_row = pres_row = bank.pres_row()
        self.pres_buffer = memoryview(bank.pres[pres_row])    # its node's PRes frame, TPDO mapped in
        # per PDO channel slot (the configured ``channel``, not the position in the YAML list)
        slots = pdo.RPDO.channels
        self.rows = [-1] * slots
        for a in axes:
            self.rows[a.channel] = a.index
            bank.owners[a.index] = (self, a.channel)
            bank.flags[a.index, PRES_ROW] = pres_row
            bank.flags[a.index, CHANNEL] = a.channel
        self.slots = tuple(sorted(a.channel for a in axes))
        self.state = [State.SWITCH_ON_DISABLED] * slots
        self.op_mode = [int(cia402.Mode.CSP)] * slots
        self.last_cw = [0] * slots
        self.fault_code = [0] * slots
        self.fault_cause_until = [0.0] * slots
        self.history: list[int] = []
        self.dirty = True
        self.objects = self._object_dictionary(axes)
        for ch in self.slots:
            self._publish(ch)

    # -- PDO side -------------------------------------------------------------------------------
    def apply_rpdo(self, values: tuple) -> None:
        """Setpoints of one PReq: (controlword, mode, position, velocity, torque) per channel, the
        last three the standard's integers (increments, increments/s, per mille of rated torque)."""
        self.dirty = False
        x = self.bank.x
        per = pdo.RPDO.per_channel
        for ch in self.slots:
            base = ch * per
            cw = values[base]
            mode = values[base + 1]
            command = cia402.decode_command(cw, self.last_cw[ch])
            self.last_cw[ch] = cw
            state = self.state[ch]
            nxt = cia402.NEXT_STATE[state][command]
            if command == _FAULT_RESET and self.bank.time < self.fault_cause_until[ch]:
                nxt = state
            if mode != self.op_mode[ch] and mode in cia402.MODES:
                self.op_mode[ch] = mode
                if state == _OPERATION_ENABLED:
                    self.bank.mode[self.rows[ch]] = _KERNEL_MODE[mode]
                self._publish(ch)
            if nxt != state:
                self._enter(ch, nxt)
            row = self.rows[ch]
            x[row, CMD_POS] = values[base + 2] / x[row, _POSITION_SCALE]
            x[row, CMD_VEL] = values[base + 3] / x[row, _VELOCITY_SCALE]
            x[row, CMD_TORQUE] = values[base + 4] / x[row, _TORQUE_SCALE]
            self._steady(ch)

    def statusword(self, ch: int) -> int:
        """The statusword 0x6041 of channel ``ch`` as the TPDO carries it."""
        return _STATUSWORD[self.state[ch]] | int(self.bank.flags[self.rows[ch], STATUS_BITS])

    def _publish(self, ch: int) -> None:
        """Channel ``ch``'s state, mode and error code into the kernel's flags and the TPDO at once."""
        row = self.rows[ch]
        flags = self.bank.flags
        flags[row, SW_BASE] = _STATUSWORD[self.state[ch]]
        flags[row, MODE_DISPLAY] = self.op_mode[ch]
        flags[row, ERROR_CODE] = self.fault_code[ch]
        self._steady(ch)
        _write_tpdo(self.bank.pres, self.bank.x, flags, row)

    def _steady(self, ch: int) -> None:
        """IDEM_CW of channel ``ch``: its last controlword if repeating it changes nothing but the
        setpoints (the Numba PReq path of drivers.sim.isochronous may then apply it), else -1."""
        cw = self.last_cw[ch]
        self.bank.flags[self.rows[ch], IDEM_CW] = cw if _STEADY[self.state[ch]][cw & 0x0F] else -1

    # -- state machine --------------------------------------------------------------------------
    def _enter(self, ch: int, state: State) -> None:
        row = self.rows[ch]
        bank = self.bank
        self.dirty = True
        if state in (State.QUICK_STOP_ACTIVE, State.FAULT_REACTION_ACTIVE) and bank.mode[row] == LOOP_OFF:
            state = State.FAULT if state == State.FAULT_REACTION_ACTIVE else State.SWITCH_ON_DISABLED
        self.state[ch] = state
        if state == State.OPERATION_ENABLED:
            bank.mode[row] = _KERNEL_MODE[cia402.Mode(self.op_mode[ch])]
        elif state in (State.QUICK_STOP_ACTIVE, State.FAULT_REACTION_ACTIVE):
            bank.mode[row] = LOOP_BRAKE
            bank.x[row, BRAKE_TIME] = 0.0
            bank.standstill[row] = False
            bank.braking.add(self)
        else:
            bank.mode[row] = LOOP_OFF
        if state == State.SWITCH_ON_DISABLED:
            self.fault_code[ch] = 0
        self._publish(ch)

    def check_braking(self) -> None:
        """Finish quick stops (transition 12) and fault reactions (14) that reached standstill."""
        still_braking = False
        for ch in self.slots:
            row = self.rows[ch]
            if self.bank.mode[row] != LOOP_BRAKE:
                continue
            if self.bank.standstill[row]:
                self.dirty = True
                self.bank.mode[row] = LOOP_OFF
                self.state[ch] = (State.FAULT if self.state[ch] == State.FAULT_REACTION_ACTIVE
                                  else State.SWITCH_ON_DISABLED)
                self._publish(ch)
            else:
                still_braking = True
        if not still_braking:
            self.bank.braking.discard(self)

    def raise_fault(self, ch: int, code: int, cause_s: float = 0.0) -> None:
        """Fault detected on channel ``ch`` (transition 13); ignored if already faulted."""
        self.fault_cause_until[ch] = max(self.fault_cause_until[ch], self.bank.time + cause_s)
        if self.state[ch] in (State.FAULT_REACTION_ACTIVE, State.FAULT):
            return
        self.fault_code[ch] = code
        self.history.insert(0, code)
        del self.history[FAULT_HISTORY_LENGTH:]
        self._enter(ch, State.FAULT_REACTION_ACTIVE)

    def reset(self) -> None:
        """Application reset (NMT reset): torque off, Switch On Disabled; fault history kept."""
        for ch in self.slots:
            self.state[ch] = State.SWITCH_ON_DISABLED
            self.fault_code[ch] = 0
            self.last_cw[ch] = 0
            self.bank.mode[self.rows[ch]] = LOOP_OFF
            self._publish(ch)
        self.bank.braking.discard(self)
        self.dirty = True

    # -- object dictionary ----------------------------------------------------------------------
    @property
    def error_register(self) -> int:
        reg = 0
        for code in self.fault_code:
            reg |= error_register_bits(code)
        return reg

    def _object_dictionary(self, axes: tuple[AxisConfig, ...]) -> ObjectDictionary:
        columns = dict(zip(DRIVE_COLUMNS, _columns(X_COLUMNS, *DRIVE_COLUMNS)))
        return drive_dictionary(self, columns, {a.channel: a.drive for a in axes}, FAULT_HISTORY_LENGTH)
