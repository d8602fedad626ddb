"""Load the stored Pinocchio reference values and convert them to jaxdyn's conventions.

Pinocchio orders spatial vectors ``[linear; angular]`` and free-flyer quaternions
``[x, y, z, w]``; jaxdyn uses ``[angular; linear]`` and ``[w, x, y, z]``. Joints are matched by
name.
"""

import os

import numpy as np

import jaxdyn

DATA = os.path.join(os.path.dirname(__file__), "data", "pinocchio")
ROBOTS = ("double_pendulum", "ur5", "panda", "solo12", "talos")
CASES = [(r, b) for r in ROBOTS for b in ("fixed", "floating")]


def swap6(x, axis=-1):
    """[lin; ang] <-> [ang; lin] along ``axis``."""
    x = np.moveaxis(np.asarray(x), axis, -1)
    return np.moveaxis(np.concatenate([x[..., 3:], x[..., :3]], -1), -1, axis)


class Ref:
    def __init__(self, robot, base):
        self.d = np.load(os.path.join(DATA, f"{robot}_{base}.npz"))
        self.model = jaxdyn.load_robot(robot, floating_base=(base == "floating"))
        m, d = self.model, self.d
        names = list(d["joint_names"])
        pq, pv = [], []
        self.pin_joint = []
        for j, name in enumerate(m.joint_names):
            pj = names.index(name)
            self.pin_joint.append(pj)
            iq, iv = int(d["joint_idx_q"][pj]), int(d["joint_idx_v"][pj])
            t = m.joint_types[j]
            if t == "free":
                pq += [iq, iq + 1, iq + 2, iq + 6, iq + 3, iq + 4, iq + 5]
                pv += [iv + 3, iv + 4, iv + 5, iv, iv + 1, iv + 2]
            else:
                assert int(d["joint_nq"][pj]) == 1, f"{name}: unexpected pinocchio joint {d['joint_shortnames'][pj]}"
                pq.append(iq)
                pv.append(iv)
        self.pq, self.pv = np.array(pq), np.array(pv)
        self.K = d["q"].shape[0]

    def q(self, k, key="q"):
        return self.d[key][k][self.pq]

    def vec(self, k, key):
        return self.d[key][k][self.pv]

    def mat(self, k, key):
        return self.d[key][k][np.ix_(self.pv, self.pv)]

    def fext(self, k):
        f = self.d["fext"][k]  # (nj, 6) pinocchio joint order, [lin; ang]
        return swap6(f[self.pin_joint])

    def body_pose(self, k):
        return self.d["oMi_R"][k][self.pin_joint], self.d["oMi_p"][k][self.pin_joint]

    def body_motion(self, k, key):
        return swap6(self.d[key][k][self.pin_joint])

    def jac(self, k, key, i):
        """Jacobian of jac frame i: rows to [ang; lin], columns to jaxdyn's v order."""
        J = self.d[key][k][i]
        return swap6(J, axis=0)[:, self.pv]
