"""The ``bus:`` YAML section, parsed into frozen dataclasses; every error names the offending key.

Schema and defaults are documented in ``drivers/README.md``. Gains, limits and plant values are
representative choices for a small servo motor (the thesis gives none, docs/conventions.md).
"""
from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import date, datetime, timezone

from drivers.service_channel import FORMATS, INTEGER_RANGES, SIZES, TYPE_CODES, TYPE_NAMES
from drivers.identity import DEVICE_TYPE_SERVO_402, HOST_NAME_SIZE, Identity
from drivers import pdo
from models.common.errors import quote

NET_TIME_EPOCH_S = 1_767_225_600         # 2026-01-01T00:00:00Z
_IDENTITY_INTEGERS = {"device_type": 0xFFFF_FFFF, "vendor_id": 0xFFFF_FFFF, "product_code": 0xFFFF_FFFF,
                      "revision": 0xFFFF_FFFF, "serial": 0xFFFF_FFFF, "configuration_date": 0xFFFF_FFFF,
                      "configuration_time": 0xFFFF_FFFF, "application_date": 0xFFFF_FFFF,
                      "application_time": 0xFFFF_FFFF, "response_time_ns": 0xFFFF_FFFF}
_IDENTITY_ADDRESSES = ("ip_address", "subnet_mask", "default_gateway")

MN_NODE_ID = 240


class BusConfigError(ValueError):
    """A ``bus:`` section that cannot configure a bus."""


@dataclass(frozen=True)
class DriveParams:
    """Per-axis drive parameters (``bus.drive_defaults``, overridden by an axis' ``drive:``).

    ``holding_brake_torque`` [N·m, motor side] is the motor's holding brake capacity; 0 (default)
    means no brake. With a brake, while the axis is not Operation Enabled (and a quick stop or
    fault reaction has reached standstill) the drive holds the motor where the brake engaged with
    τ_b = −K_b (θ − θ_b) − D_b θ̇, D_b = kp_speed·torque_constant, K_b = kp_position·D_b,
    saturated at ±holding_brake_torque (beyond it the brake slips). The brake torque acts on the
    plant; it is mechanical, so the reported current stays 0.

    The last three are the axis' scaling of the CiA 402 process data (IEC 61800-7-201,
    docs/powerlink.md): positions travel as INTEGER32 encoder increments, ``encoder_increments``
    per motor revolution (velocities in increments/s); the torque offset as INTEGER16 per mille of
    ``rated_torque`` (object 0x6076) and the actual current per mille of ``rated_current`` (0x6075).
    The bus values stay motor side; the gear or linkage to the joint is the robot model's
    transmission.
    """

    kp_position: float = 75.0            # position loop gain [1/s]
    kp_speed: float = 0.6                # speed loop P gain [A/(rad/s)]
    ki_speed: float = 45.0               # speed loop I gain [A/rad]
    torque_constant: float = 0.1         # [N·m/A]
    current_limit: float = 10.0          # [A]
    speed_limit: float = 300.0           # [rad/s]
    following_error_limit: float = 0.5   # [rad]
    holding_brake_torque: float = 0.0    # [N·m] motor holding brake capacity, 0 = no brake
    encoder_increments: int = 2 ** 17    # [1/rev] encoder increments per motor revolution
    rated_torque: float = 0.5            # [N·m] motor rated torque 0x6076, 1000 per mille
    rated_current: float = 5.0           # [A] motor rated current 0x6075, 1000 per mille

    @property
    def increments_per_rad(self) -> float:
        """Encoder increments per motor radian."""
        return self.encoder_increments / (2.0 * math.pi)


@dataclass(frozen=True)
class PlantParams:
    inertia: float = 2.0e-4              # motor-side inertia [kg·m²]
    friction: float = 1.0e-3             # viscous friction [N·m·s/rad]
    load_torque: float = 0.0             # constant load torque [N·m]


@dataclass(frozen=True)
class AxisConfig:
    name: str
    index: int          # position in Bus.axis_names and plant motor index
    node_id: int
    channel: int
    drive: DriveParams
    plant: PlantParams
    sensor: str | None = None    # what is wired to the drive's auxiliary input (TPDO 0x2400): a SENSORS name or None


AUX_VALUES = 3                   # REAL32 values of a drive channel's auxiliary input (TPDO 0x2400:1..3)


@dataclass(frozen=True)
class Sensor:
    """What a drive's auxiliary inputs can carry: ``size`` values of the plant sensor ``plant`` from
    its value ``first``. A sensor of more than AUX_VALUES values takes the inputs of as many axes
    (``sensor: NAME`` on each): values 0-2 on the first in bus order, 3-5 on the next, NaN-padded."""

    plant: str
    first: int
    size: int

    @property
    def inputs(self) -> int:
        """The axes' auxiliary inputs it takes."""
        return -(-self.size // AUX_VALUES)


# The sensors a bus can carry, declared once (drivers.sim.drive wires them, the loop reads them):
# "imu" the bench foot accelerometer's specific force in R0 (m/s²); "sole" the bench sole's load
# cells as (total load along x0 (N), centre of pressure y0, z0 (m), NaN when unloaded);
# "pelvis_imu" BIP 2000's pelvis accelerometer, specific force in pelvis axes (m/s²: the biped
# plant's imu_gravity, drivers.sim.hil.plant_biped); "pelvis_gyro" its rate gyro, the pelvis' angular
# velocity in pelvis axes (rad/s: the biped plant's imu_rate; optional, stabilizer.pelvis_state);
# "left_loads", "right_loads" each foot's four uniaxial load cells (N, along the sole normal, in the
# robot file's feet.*.sensors order)
SENSORS = {"imu": Sensor("imu_gravity", 0, 3), "sole": Sensor("sole", 0, 3),
           "pelvis_imu": Sensor("imu_gravity", 0, 3), "pelvis_gyro": Sensor("imu_rate", 0, 3),
           "left_loads": Sensor("foot_forces", 0, 4), "right_loads": Sensor("foot_forces", 4, 4)}


# The process-data types an I/O node's objects may have: the fixed-size CANopen types, by name.
PDO_TYPES = tuple(TYPE_NAMES[code] for code in FORMATS)
PROFILES = ("cia402", "io")


@dataclass(frozen=True)
class PdoObject:
    """One object mapped into an I/O node's PRes (an input) or PReq (an output)."""

    index: int
    subindex: int
    type: str                            # a PDO_TYPES name

    @property
    def data_type(self) -> int:
        """Its CANopen data type code."""
        return TYPE_CODES[self.type]

    @property
    def size(self) -> int:
        return SIZES[self.data_type]


@dataclass(frozen=True)
class ObjectValue:
    """One object the managing node writes into a node at boot (its ``objects:`` in the bus YAML)."""

    index: int
    subindex: int
    type: str                            # a PDO_TYPES name
    value: int | float

    @property
    def data_type(self) -> int:
        """Its CANopen data type code."""
        return TYPE_CODES[self.type]


# Objects the configuration download writes itself (drivers.powerlink.configuration): not in ``objects:``.
MANAGED_OBJECTS = {0x1006: "the cycle length (bus.cycle_time_s)", 0x1020: "verify configuration",
                   0x1400: "the RPDO communication parameters", 0x1600: "the RPDO mapping",
                   0x1800: "the TPDO communication parameters", 0x1A00: "the TPDO mapping",
                   0x1C0B: "the loss of SoC threshold (bus.threshold)",
                   0x1C0D: "the loss of PReq threshold (bus.threshold)",
                   0x1C14: "the loss of SoC tolerance (bus.soc_tolerance_s)"}


@dataclass(frozen=True)
class ExpectedIdentity:
    """What a node's IdentResponse must report (0x1000, 0x1018/1..3); None: not checked.
    A CiA 402 node's device type defaults to a servo drive's."""

    device_type: int | None = None
    vendor_id: int | None = None
    product_code: int | None = None
    revision: int | None = None


@dataclass(frozen=True)
class NodeConfig:
    node_id: int
    axes: tuple[AxisConfig, ...]
    identity: Identity = Identity()          # what the simulated CN reports in its IdentResponse
    profile: str = "cia402"              # one of PROFILES
    expected: ExpectedIdentity = ExpectedIdentity(DEVICE_TYPE_SERVO_402)   # what the MN checks in it
    inputs: tuple[PdoObject, ...] = ()   # io: the objects its PRes carries, in order
    outputs: tuple[PdoObject, ...] = ()  # io: the objects its PReq carries, in order
    objects: tuple[ObjectValue, ...] = ()   # written at boot after the mapping (drive parameters...)
    rpdo: pdo.PdoMapping = pdo.RPDO      # cia402: its PReq mapping (``mapping.rpdo``), both channels
    tpdo: pdo.PdoMapping = pdo.TPDO      # cia402: its PRes mapping (``mapping.tpdo``)

    @property
    def input_size(self) -> int:
        return sum(o.size for o in self.inputs)

    @property
    def output_size(self) -> int:
        return sum(o.size for o in self.outputs)


@dataclass(frozen=True)
class UdpConfig:
    host: str = "127.0.0.1"
    port: int = 47400
    timeout_s: float = 0.05
    spin_s: float = 1.0e-3               # busy-poll bound before sleeping (drivers/udp_protocol.py)


@dataclass(frozen=True)
class BusConfig:
    backend: str
    nodes: tuple[NodeConfig, ...]
    axes: tuple[AxisConfig, ...]
    cycle_time_s: float = 0.0004
    control_period_s: float = 0.002
    boot_timeout_s: float = 1.0
    pres_timeout_s: float = 5.0e-5
    threshold: int = 15
    events_max: int = 256
    udp: UdpConfig = UdpConfig()
    plant: str = "leg"               # the sim backend's plant, by name (controller.daemon.run.PLANTS)
    interface: str = ""              # the raw backend's Ethernet interface (bus.interface)
    soc_tolerance_s: float | None = None   # a CN's loss of SoC tolerance 0x1C14 (None: one cycle)
    net_time_epoch_s: int = NET_TIME_EPOCH_S     # SoC NetTime of bus cycle 0 in lock-step (s since 1970, UTC)

    @property
    def cycle_us(self) -> int:
        return round(self.cycle_time_s * 1e6)

    @property
    def soc_tolerance_ns(self) -> int:
        """What the configuration writes into each CN's 0x1C14: how late past 0x1006 a SoC may be
        before the CN counts it lost (default one cycle: the managing node's wake-up jitter)."""
        return round(1e9 * (self.cycle_time_s if self.soc_tolerance_s is None else self.soc_tolerance_s))

    @property
    def cycles_per_control(self) -> int:
        return round(self.control_period_s / self.cycle_time_s)

    @property
    def imu_axis(self) -> int | None:
        """Index of the axis whose TPDO carries the foot IMU (``sensor: imu``), None if none does."""
        return self.sensor_axis("imu")

    def sensor_axis(self, sensor: str) -> int | None:
        """Index of the (first) axis whose TPDO carries ``sensor`` (one of SENSORS), None if none does."""
        return next((a.index for a in self.axes if a.sensor == sensor), None)

    def sensor_axes(self, sensor: str) -> tuple[int, ...]:
        """Indices of the axes whose TPDOs carry ``sensor``, in bus order (empty if none)."""
        return tuple(a.index for a in self.axes if a.sensor == sensor)

    def axis(self, name: str) -> AxisConfig:
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(f"no axis named {name!r} (axes: {', '.join(a.name for a in self.axes)})")


def _axes_count(n: int) -> str:
    return "another axis" if n == 1 else f"{n} axes"


def _mapping(value, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise BusConfigError(f"{where} must be a mapping, got {type(value).__name__}")
    return value


def _known(section: Mapping, known, where: str) -> None:
    for key in section:
        if key not in known:
            raise BusConfigError(f"{where}.{key} is not a known key (known: {', '.join(sorted(known))})")


def _number(value, where: str, *, positive: bool = True, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BusConfigError(f"{where} must be a finite number, got {quote(value)}")
    if positive and (value < 0 or (value == 0 and not allow_zero)):
        raise BusConfigError(f"{where} must be {'>= 0' if allow_zero else '> 0'}, got {quote(value)}")
    return float(value)


def _integer(value, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BusConfigError(f"{where} must be an integer in {low}..{high}, got {quote(value)}")
    return value


MIN_INCREMENTS, MAX_INCREMENTS = 4, 2 ** 31 - 1     # one quadrature line .. what an UNSIGNED32 0x608F can say
INT16_MAX, INT32_MAX, UINT32_MAX = 2 ** 15 - 1, 2 ** 31 - 1, 2 ** 32 - 1


def _check_scaling(drive: DriveParams, where: str) -> None:
    """The drive's limits must be representable in the standard's integers with its scaling
    (IEC 61800-7-201: INTEGER16 per mille, INTEGER32 increments/s, UNSIGNED32 increments)."""
    peak = 1000.0 * drive.current_limit / drive.rated_current
    if peak > INT16_MAX:
        raise BusConfigError(f"{where}: current_limit {drive.current_limit} A is {peak:.0f} per mille of rated_current "
                             f"{drive.rated_current} A, beyond the INTEGER16 current 0x6078 ({INT16_MAX}): "
                             "raise rated_current")
    peak = 1000.0 * drive.current_limit * drive.torque_constant / drive.rated_torque
    if peak > INT16_MAX:
        raise BusConfigError(f"{where}: the peak torque current_limit * torque_constant is {peak:.0f} per mille of "
                             f"rated_torque {drive.rated_torque} N·m, beyond the INTEGER16 torque 0x60B2 "
                             f"({INT16_MAX}): raise rated_torque")
    for key, limit, name in (("speed_limit", INT32_MAX, "INTEGER32 velocity 0x606C"),
                             ("following_error_limit", UINT32_MAX, "UNSIGNED32 following error window 0x6065")):
        increments = getattr(drive, key) * drive.increments_per_rad
        if increments > limit:
            raise BusConfigError(f"{where}: {key} {getattr(drive, key)} is {increments:.3g} increments with "
                                 f"encoder_increments {drive.encoder_increments}, beyond the {name} ({limit})")


def _params(cls, base, section, where: str):
    """A ``cls`` dataclass from ``base`` overridden by the numbers in ``section``."""
    if section is None:
        return base
    section = _mapping(section, where)
    names = {f.name for f in fields(cls)}
    _known(section, names, where)
    values = {name: getattr(base, name) for name in names}
    for key, value in section.items():
        if key == "encoder_increments":
            values[key] = _integer(value, f"{where}.{key}", MIN_INCREMENTS, MAX_INCREMENTS)
        elif key == "load_torque":
            values[key] = _number(value, f"{where}.{key}", positive=False)
        else:
            values[key] = _number(value, f"{where}.{key}",
                                  allow_zero=key in ("friction", "holding_brake_torque"))
    return cls(**values)


def _expected(section, profile: str) -> ExpectedIdentity:
    """What the MN checks of a node's IdentResponse: the identity fields its YAML declares (validated
    by :func:`_identity`), a CiA 402 node's device type by default."""
    declared = {f.name: section[f.name] for f in fields(ExpectedIdentity) if section and f.name in section}
    declared.setdefault("device_type", DEVICE_TYPE_SERVO_402 if profile == "cia402" else None)
    return ExpectedIdentity(**declared)


def _pdo_objects(items, where: str) -> tuple[PdoObject, ...]:
    """A list of mapped objects, each ``"0xINDEX/SUB TYPE"`` (e.g. ``"0x6000/1 u8"``)."""
    if items is None:
        return ()
    if not isinstance(items, list):
        raise BusConfigError(f"{where} must be a list of objects such as \"0x6000/1 u8\"")
    objects = []
    for k, item in enumerate(items):
        try:
            address, type_ = str(item).split()
            index, sub = address.split("/")
            obj = PdoObject(int(index, 0), int(sub, 0), type_)
        except ValueError:
            raise BusConfigError(f"{where}[{k}] must read \"0xINDEX/SUB TYPE\", got {quote(item)}") from None
        if not (0 < obj.index <= 0xFFFF and 0 <= obj.subindex <= 0xFF) or obj.type not in PDO_TYPES:
            raise BusConfigError(f"{where}[{k}] {quote(item)}: index 1..0xFFFF, subindex 0..255 and a type "
                                 f"among {', '.join(PDO_TYPES)}")
        objects.append(obj)
    return tuple(objects)


def _object_values(items, node_id: int, where: str) -> tuple[ObjectValue, ...]:
    """``nodes[i].objects``: a list of ``{index, subindex, type, value}``, each checked against its type."""
    if items is None:
        return ()
    if not isinstance(items, list):
        raise BusConfigError(f"{where} must be a list of {{index, subindex, type, value}} mappings")
    objects, seen = [], set()
    for k, item in enumerate(items):
        w = f"{where}[{k}]"
        item = _mapping(item, w)
        _known(item, {"index", "subindex", "type", "value"}, w)
        missing = [key for key in ("index", "type", "value") if key not in item]
        if missing:
            raise BusConfigError(f"{w} lacks {', '.join(missing)}")
        index = _integer(item["index"], f"{w}.index", 1, 0xFFFF)
        subindex = _integer(item.get("subindex", 0), f"{w}.subindex", 0, 0xFF)
        name = f"{w} (node {node_id}, 0x{index:04X}/{subindex})"
        if index in MANAGED_OBJECTS:
            raise BusConfigError(f"{name} is {MANAGED_OBJECTS[index]}, which the configuration writes itself")
        if (index, subindex) in seen:
            raise BusConfigError(f"{name} is written twice")
        seen.add((index, subindex))
        type_, value = item["type"], item["value"]
        if type_ not in PDO_TYPES:
            raise BusConfigError(f"{name}: type must be one of {', '.join(PDO_TYPES)}, got {quote(type_)}")
        bounds = INTEGER_RANGES.get(TYPE_CODES[type_])
        if bounds is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
                raise BusConfigError(f"{name}: a {type_} value must be an integer in {bounds[0]}..{bounds[1]}, "
                                     f"got {quote(value)}")
        else:
            value = _number(value, f"{name}.value", positive=False)
        objects.append(ObjectValue(index, subindex, type_, value))
    return tuple(objects)


MAPPING_KEYS = {"rpdo": "preq_payload_limit", "tpdo": "pres_payload_limit"}


def _drive_mapping(section, node_id: int, where: str) -> tuple[pdo.PdoMapping, pdo.PdoMapping]:
    """``nodes[i].mapping``: the drive's RPDO and TPDO (``rpdo:`` / ``tpdo:`` lists of one channel's
    objects, drivers.pdo.drive_mapping; each defaults to pdo.RPDO / pdo.TPDO), each payload within
    the node's limit if the YAML gives one (``preq_payload_limit`` / ``pres_payload_limit`` bytes, the
    UNSIGNED16 0x1F98/4 and /5 of its XDD)."""
    if section is None:
        return pdo.RPDO, pdo.TPDO
    section = _mapping(section, where)
    _known(section, {*MAPPING_KEYS, *MAPPING_KEYS.values()}, where)
    mappings = []
    for direction, key in MAPPING_KEYS.items():
        limit = _integer(section[key], f"{where}.{key}", 1, 0xFFFF) if key in section else None
        items = section.get(direction, [e.name for e in (pdo.RPDO if direction == "rpdo" else pdo.TPDO).entries])
        try:
            mappings.append(pdo.drive_mapping(items, direction, limit))
        except pdo.PdoMappingError as exc:
            raise BusConfigError(f"{where}.{direction} (node {node_id}): {exc}") from None
    return mappings[0], mappings[1]


def parse_bus_config(section: Mapping) -> BusConfig:
    """Validate the ``bus:`` mapping of a robot YAML file."""
    where = "bus"
    section = _mapping(section, where)
    _known(section, {"backend", "cycle_time_s", "control_period_s", "boot_timeout_s", "pres_timeout_s",
                     "threshold", "events_max", "drive_defaults", "plant_defaults", "nodes", "udp", "plant",
                     "interface", "net_time_epoch", "soc_tolerance_s"}, where)
    if "backend" not in section:
        raise BusConfigError("bus.backend is missing (a backend name such as 'sim' or 'udp')")
    backend = section["backend"]
    if not isinstance(backend, str) or not backend:
        raise BusConfigError(f"bus.backend must be a backend name string, got {quote(backend)}")

    cycle = _number(section.get("cycle_time_s", 0.0004), "bus.cycle_time_s")
    if abs(cycle * 1e6 - round(cycle * 1e6)) > 1e-6:
        raise BusConfigError(f"bus.cycle_time_s must be a whole number of microseconds, got {quote(cycle)}")
    period = _number(section.get("control_period_s", 0.002), "bus.control_period_s")
    ratio = period / cycle
    if ratio < 1 or abs(ratio - round(ratio)) > 1e-9:
        raise BusConfigError(f"bus.control_period_s ({period}) must be a whole multiple of "
                             f"bus.cycle_time_s ({cycle})")
    boot_timeout = _number(section.get("boot_timeout_s", 1.0), "bus.boot_timeout_s")
    pres_timeout = _number(section.get("pres_timeout_s", 5.0e-5), "bus.pres_timeout_s")
    if pres_timeout >= cycle:
        raise BusConfigError(f"bus.pres_timeout_s ({pres_timeout}) must be shorter than "
                             f"bus.cycle_time_s ({cycle})")
    threshold = _integer(section.get("threshold", 15), "bus.threshold", 0, 1_000_000)
    events_max = _integer(section.get("events_max", 256), "bus.events_max", 1, 1_000_000)
    drive_defaults = _params(DriveParams, DriveParams(), section.get("drive_defaults"), "bus.drive_defaults")
    plant_defaults = _params(PlantParams, PlantParams(), section.get("plant_defaults"), "bus.plant_defaults")

    raw_nodes = section.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise BusConfigError("bus.nodes must be a non-empty list of controlled nodes")
    nodes: list[NodeConfig] = []
    axes: list[AxisConfig] = []
    seen_ids: set[int] = set()
    seen_names: set[str] = set()
    for i, raw in enumerate(raw_nodes):
        w = f"bus.nodes[{i}]"
        raw = _mapping(raw, w)
        _known(raw, {"node_id", "axes", "profile", "identity", "inputs", "outputs", "objects", "mapping"}, w)
        if "node_id" not in raw:
            raise BusConfigError(f"{w}.node_id is missing")
        node_id = _integer(raw["node_id"], f"{w}.node_id", 1, MN_NODE_ID - 1)
        if node_id in seen_ids:
            raise BusConfigError(f"{w}.node_id {node_id} is used by another node")
        seen_ids.add(node_id)
        profile = raw.get("profile", "cia402")
        if profile not in PROFILES:
            raise BusConfigError(f"{w}.profile must be one of {', '.join(PROFILES)}, got {quote(profile)}")
        identity = _identity(raw.get("identity"), node_id, f"{w}.identity")
        objects = _object_values(raw.get("objects"), node_id, f"{w}.objects")
        expected = _expected(raw.get("identity"), profile)
        if profile == "io":
            if "axes" in raw:
                raise BusConfigError(f"{w}.axes: an io node has no axes (declare its inputs and outputs)")
            if backend != "raw":
                raise BusConfigError(f"{w}.profile io needs bus.backend raw (the simulated nodes are CiA 402 drives)")
            nodes.append(NodeConfig(node_id, (), identity, profile, expected,
                                    _pdo_objects(raw.get("inputs"), f"{w}.inputs"),
                                    _pdo_objects(raw.get("outputs"), f"{w}.outputs"), objects))
            continue
        if "mapping" in raw and profile == "io":
            raise BusConfigError(f"{w}.mapping is a cia402 node's; an io node maps its inputs and outputs")
        if "inputs" in raw or "outputs" in raw:
            raise BusConfigError(f"{w}: inputs and outputs are an io node's; a cia402 node's process data "
                                 "follow its axes")
        raw_axes = raw.get("axes")
        if not isinstance(raw_axes, list) or not 1 <= len(raw_axes) <= 2:
            raise BusConfigError(f"{w}.axes must list one or two axes (a drive has two channels)")
        node_axes: list[AxisConfig] = []
        channels: set[int] = set()
        for j, raw_axis in enumerate(raw_axes):
            wa = f"{w}.axes[{j}]"
            raw_axis = _mapping(raw_axis, wa)
            _known(raw_axis, {"name", "channel", "drive", "plant", "sensor"}, wa)
            name = raw_axis.get("name")
            if not isinstance(name, str) or not name:
                raise BusConfigError(f"{wa}.name must be a non-empty string, got {quote(name)}")
            if name in seen_names:
                raise BusConfigError(f"{wa}.name {quote(name)} is used by another axis")
            seen_names.add(name)
            if "channel" not in raw_axis:
                raise BusConfigError(f"{wa}.channel is missing (0 or 1)")
            channel = _integer(raw_axis["channel"], f"{wa}.channel", 0, 1)
            if channel in channels:
                raise BusConfigError(f"{wa}.channel {channel} is used by another axis of node {node_id}")
            channels.add(channel)
            sensor = raw_axis.get("sensor")
            if sensor is not None and sensor not in SENSORS:
                raise BusConfigError(f"{wa}.sensor must be one of {', '.join(SENSORS)}, got {sensor!r}")
            if sensor is not None and sum(a.sensor == sensor for a in axes) >= SENSORS[sensor].inputs:
                raise BusConfigError(f"{wa}.sensor {sensor!r} is already wired to "
                                     f"{_axes_count(SENSORS[sensor].inputs)}")
            drive = _params(DriveParams, drive_defaults, raw_axis.get("drive"), f"{wa}.drive")
            _check_scaling(drive, f"{wa}.drive")
            axis = AxisConfig(name, len(axes), node_id, channel, drive,
                              _params(PlantParams, plant_defaults, raw_axis.get("plant"), f"{wa}.plant"),
                              sensor)
            node_axes.append(axis)
            axes.append(axis)
        rpdo, tpdo = _drive_mapping(raw.get("mapping"), node_id, f"{w}.mapping")
        nodes.append(NodeConfig(node_id, tuple(node_axes), identity, profile, expected, objects=objects,
                                rpdo=rpdo, tpdo=tpdo))
    for name, spec in SENSORS.items():
        wired = [a.name for a in axes if a.sensor == name]
        if wired and len(wired) != spec.inputs:
            raise BusConfigError(f"bus.nodes: sensor {name!r} carries {spec.size} values, {AUX_VALUES} per "
                                 f"auxiliary input: declare it on {_axes_count(spec.inputs)}, not only on {wired[0]}")

    udp = UdpConfig()
    if "udp" in section:
        raw = _mapping(section["udp"], "bus.udp")
        _known(raw, {"host", "port", "timeout_s", "spin_s"}, "bus.udp")
        host = raw.get("host", udp.host)
        if not isinstance(host, str) or not host:
            raise BusConfigError(f"bus.udp.host must be a host name or address, got {quote(host)}")
        spin = _number(raw.get("spin_s", udp.spin_s), "bus.udp.spin_s", allow_zero=True)
        if spin > 0.01:
            raise BusConfigError(f"bus.udp.spin_s must be at most 0.01 s, got {quote(spin)}")
        udp = UdpConfig(host, _integer(raw.get("port", udp.port), "bus.udp.port", 1, 65535),
                        _number(raw.get("timeout_s", udp.timeout_s), "bus.udp.timeout_s"), spin)

    plant = section.get("plant", "leg")
    if not isinstance(plant, str) or not plant:
        raise BusConfigError(f"bus.plant must be a plant name such as 'leg' or 'inertia', got {quote(plant)}")
    interface = section.get("interface", "")
    if not isinstance(interface, str) or (backend == "raw" and not interface):
        raise BusConfigError(f"bus.interface must name the Ethernet interface the nodes are on, got {quote(interface)}")
    return BusConfig(backend=backend, nodes=tuple(nodes), axes=tuple(axes), cycle_time_s=cycle,
                     control_period_s=period, boot_timeout_s=boot_timeout, pres_timeout_s=pres_timeout,
                     threshold=threshold, events_max=events_max, udp=udp, plant=plant,
                     interface=interface, soc_tolerance_s=_soc_tolerance(section.get("soc_tolerance_s")),
                     net_time_epoch_s=_epoch(section.get("net_time_epoch", NET_TIME_EPOCH_S)))


def _soc_tolerance(value) -> float | None:
    """``bus.soc_tolerance_s``: 0x1C14 in whole nanoseconds of an UNSIGNED32 (None: one cycle)."""
    if value is None:
        return None
    tolerance = _number(value, "bus.soc_tolerance_s")
    if tolerance * 1e9 > UINT32_MAX:
        raise BusConfigError(f"bus.soc_tolerance_s must be below {UINT32_MAX / 1e9:.3f} s (0x1C14 is UNSIGNED32 ns), "
                             f"got {quote(value)}")
    return tolerance


def _epoch(value) -> int:
    """``bus.net_time_epoch``: seconds since 1970 or an ISO 8601 UTC date-time (YAML may hand a datetime)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise BusConfigError(f"bus.net_time_epoch must be seconds since 1970 or an ISO 8601 date-time, "
                                 f"got {quote(value)}") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    if isinstance(value, datetime):
        value = int((value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp())
    return _integer(value, "bus.net_time_epoch", 0, 0xFFFF_FFFF)


def _identity(section, node_id: int, where: str) -> Identity:
    """``nodes[i].identity``: the simulated CN's IdentResponse fields over :meth:`Identity.default`."""
    base = Identity.default(node_id)
    if section is None:
        return base
    section = _mapping(section, where)
    _known(section, {*_IDENTITY_INTEGERS, *_IDENTITY_ADDRESSES, "host_name"}, where)
    values = {key: _integer(section[key], f"{where}.{key}", 0, high)
              for key, high in _IDENTITY_INTEGERS.items() if key in section}
    for key in _IDENTITY_ADDRESSES:
        if key in section:
            try:
                values[key] = str(ipaddress.IPv4Address(section[key]))
            except (ipaddress.AddressValueError, ValueError):
                raise BusConfigError(f"{where}.{key} must be a dotted IPv4 address, got {quote(section[key])}") \
                    from None
    if "host_name" in section:
        name = section["host_name"]
        if not isinstance(name, str) or not name.isascii() or len(name) > HOST_NAME_SIZE:
            raise BusConfigError(f"{where}.host_name must be ASCII text of at most {HOST_NAME_SIZE} characters, "
                                 f"got {quote(name)}")
        values["host_name"] = name
    return replace(base, **values)
