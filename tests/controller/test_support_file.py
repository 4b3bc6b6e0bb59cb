"""A played file's support column reaches the loop: the I/O server copies it, resampled with the
joints (the phase of the last row at or before each sample), into the shared ``support`` buffer;
a file without the column leaves -1 there (no phase), never the previous file's."""
from __future__ import annotations

import numpy as np

from controller.daemon.shm import H, Cmd
from models.common.support import DOUBLE, LEFT, RIGHT

from tests.controller.test_io_server import to_hold

HEADER = "t,ankle_lateral,ankle_sagittal,knee,hip"


def test_the_support_column_reaches_the_shared_buffer(rig_factory, tmp_path):
    rig = rig_factory(server_kw={"trajectory_dir": tmp_path})
    to_hold(rig)
    walk = tmp_path / "walk.csv"
    walk.write_text(f"{HEADER},support\n0,0,0.1,-0.3,0.2,double\n0.2,0,0.1,-0.3,0.2,left\n"
                    "0.6,0,0.1,-0.3,0.2,double\n0.8,0,0.1,-0.3,0.2,right\n1.0,0,0.1,-0.3,0.2,right\n")
    rig.client.call("run", trajectory=str(walk))
    assert rig.loop.commands()[-1][1] == Cmd.RUN_BUFFER
    n = int(rig.block.header[H.TRAJ_LEN])
    expected = np.repeat([DOUBLE, LEFT, DOUBLE, RIGHT], [100, 200, 100, 101])     # 2 ms samples, 0 .. 1 s
    np.testing.assert_array_equal(rig.block.support[:n], expected)
    rig.client.call("stop")
    plain = tmp_path / "plain.csv"
    plain.write_text(f"{HEADER}\n0,0,0.1,-0.3,0.2\n1,0,0.2,-0.6,0.4\n")
    rig.client.call("run", trajectory=str(plain))
    assert int(rig.block.header[H.TRAJ_LEN]) == n
    np.testing.assert_array_equal(rig.block.support[:n], -1.0)
