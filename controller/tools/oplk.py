"""openPOWERLINK's controlled node (V2.7.2, the reference open-source stack, BSD) as a judge for the
tests and ``bipd bench wire --cn oplk``; not part of the product, and nothing of it is copied here.

Built from the sources in ``$BIPD_OPLK_DIR`` (default: the repository's ``../shared/oplk``, or the
main checkout's when this is a git worktree) by its ``build-cn.sh`` into a cache directory reused
across runs (``$OPLK_BUILD_DIR``, default ``~/.cache/bipd-oplk``), and run by its ``cn-netns.sh``
in a network namespace of its own, on the far end of a veth pair whose near end (``NAME-mn``) a
raw-backend managing node uses. Needs root (namespaces, veth, AF_PACKET)."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CN_DEVICE_TYPE = 0x000F0191       # its object dictionary's 0x1000 (CiA 401 digital I/O)
CN_REVISION = 0x00020007          # its 0x1018/3
CN_INPUTS = tuple(f"0x6000/{k} u8" for k in range(1, 5))     # its digital inputs, mapped into its PRes
CN_OUTPUTS = tuple(f"0x6200/{k} u8" for k in range(1, 5))    # its digital outputs, mapped from its PReq


def node_section(node_id: int) -> dict:
    """The bus YAML node of an openPOWERLINK CN: io profile, its device type, 4 bytes each way."""
    return {"node_id": node_id, "profile": "io", "identity": {"device_type": CN_DEVICE_TYPE},
            "inputs": list(CN_INPUTS), "outputs": list(CN_OUTPUTS)}


def oplk_dir() -> Path:
    """Where build-cn.sh, cn-netns.sh and the sources are (module docstring)."""
    if "BIPD_OPLK_DIR" in os.environ:
        return Path(os.environ["BIPD_OPLK_DIR"])
    candidates = [ROOT.parent / "shared" / "oplk"]
    common = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                            capture_output=True, text=True, check=False).stdout.strip()
    if common:
        candidates.append(Path(common).parent.parent / "shared" / "oplk")
    return next((c for c in candidates if (c / "cn-netns.sh").exists()), candidates[0])


def build_cn() -> Path:
    """The CN demo binary, built once into the cache directory."""
    script = oplk_dir() / "build-cn.sh"
    if not script.exists():
        raise FileNotFoundError(f"no openPOWERLINK fixture at {script.parent}: set BIPD_OPLK_DIR to the folder "
                                "holding build-cn.sh and cn-netns.sh")
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"build-cn.sh failed ({out.returncode}): {out.stderr[-2000:]}")
    return Path(out.stdout.strip().splitlines()[-1])


class OplkCn:
    """One openPOWERLINK CN in namespace ``name`` (at most 12 characters), node ``node_id``."""

    def __init__(self, name: str, binary: Path, node_id: int = 1, run_dir: Path | None = None) -> None:
        self.name = name
        self.binary = binary
        self.node_id = node_id
        self.run_dir = run_dir or Path("/tmp")
        self.interface = f"{name}-mn"
        self._env = dict(os.environ, OPLK_RUN_DIR=str(self.run_dir))

    def _script(self, *args: str, background: bool = False):
        cmd = ["bash", str(oplk_dir() / "cn-netns.sh"), *args]
        # cwd: the CN stores its object dictionary (oplkOd_part*.bin) in its working directory
        if background:
            return subprocess.Popen(cmd, env=self._env, cwd=self.run_dir, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        return subprocess.run(cmd, env=self._env, cwd=self.run_dir, capture_output=True, text=True, check=True)

    def start(self, background: bool = False):
        """Start (or restart) the CN; ``background``: return the starting process at once (the
        script waits up to 5 s for the CN's NotActive) so that a managing node can keep cycling."""
        return self._script("start", self.name, str(self.binary), str(self.node_id), background=background)

    def kill(self) -> None:
        """SIGKILL the CN: it stops answering at once, mid-cycle."""
        os.kill(int((self.run_dir / f"{self.name}.cn.pid").read_text()), signal.SIGKILL)

    def stop(self) -> None:
        """Stop the CN and delete its veth pair and namespace."""
        self._script("stop", self.name)

    @property
    def mac(self) -> bytes:
        """The MAC address of the CN's end of the veth pair."""
        out = subprocess.run(["ip", "netns", "exec", self.name, "cat", f"/sys/class/net/{self.name}-cn/address"],
                             capture_output=True, text=True, check=True).stdout
        return bytes.fromhex(out.strip().replace(":", ""))

    @property
    def log(self) -> str:
        return (self.run_dir / f"{self.name}.cn.log").read_text(errors="replace")
