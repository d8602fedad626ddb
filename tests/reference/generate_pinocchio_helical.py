"""Stored Pinocchio values for a small tree with helical (screw) joints.

URDF and MJCF have no helical joint, so the model is written here in numbers: five bodies,
parents ``[-1, 0, 1, 1, 3]``, joints helical / revolute / helical / prismatic / helical on
unit axes that are not aligned with the joint frames, random placements and inertias (seed 0),
pitches of both signs. Pinocchio 4.1 builds it with ``JointModelHelicalUnaligned(axis, pitch)``
(rotation by ``q`` about ``axis`` and translation by ``pitch q`` along it; checked below against
that formula), ``JointModelRevoluteUnaligned`` and ``JointModelPrismaticUnaligned``.

How to run (needs Pinocchio, which jaxdyn itself does not depend on)::

    python tests/reference/generate_pinocchio_helical.py [--out tests/data/pinocchio/helical_tree.npz]

Stored (float64): the model numbers (``parents``, ``kinds`` 0 revolute / 1 prismatic / 2
helical, ``placement_R/p``, ``axis``, ``pitch``, ``mass``, ``com``, ``inertia_com``, gravity)
and, for ``K = 4`` random states ``q, v, a, tau``: ``rnea`` (``pin.rnea(q, v, a)``), ``crba``
(``pin.crba``, symmetrised), ``aba`` (``pin.aba(q, v, tau)``) and the body poses ``oMi_R/p``.
Joint-space quantities need no conversion of Pinocchio's ``[linear; angular]`` convention.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate_pinocchio import save_npz_deterministic  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "pinocchio", "helical_tree.npz")

PARENTS = [-1, 0, 1, 1, 3]
KINDS = [2, 0, 2, 1, 2]  # 0 revolute, 1 prismatic, 2 helical


def _rotation(rng):
    return pin.Quaternion(*rng.standard_normal(4)).normalized().toRotationMatrix()


def model_numbers(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n = len(PARENTS)
    R = np.stack([_rotation(rng) for _ in range(n)])
    p = rng.uniform(-0.4, 0.4, (n, 3))
    axis = rng.standard_normal((n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    pitch = np.where(np.array(KINDS) == 2, [0.25, 0.0, -0.15, 0.0, 0.4], 0.0)
    mass = rng.uniform(0.5, 2.0, n)
    com = rng.uniform(-0.2, 0.2, (n, 3))
    inertia = []
    for m in mass:
        d = rng.uniform(0.02, 0.05, 3) * m  # any two moments exceed the third
        Q = _rotation(rng)
        inertia.append(Q @ np.diag(d) @ Q.T)
    return dict(
        parents=np.array(PARENTS),
        kinds=np.array(KINDS),
        placement_R=R,
        placement_p=p,
        axis=axis,
        pitch=pitch,
        mass=mass,
        com=com,
        inertia_com=np.stack(inertia),
        gravity=np.array([0.0, 0.0, -9.81]),
    )


def pinocchio_model(nums: dict) -> pin.Model:
    model = pin.Model()
    model.gravity.linear = nums["gravity"]
    for i, (parent, kind) in enumerate(zip(nums["parents"], nums["kinds"])):
        u = nums["axis"][i]
        if kind == 0:
            jm = pin.JointModelRevoluteUnaligned(u)
        elif kind == 1:
            jm = pin.JointModelPrismaticUnaligned(u)
        else:
            jm = pin.JointModelHelicalUnaligned(u, float(nums["pitch"][i]))
        placement = pin.SE3(nums["placement_R"][i], nums["placement_p"][i])
        jid = model.addJoint(int(parent) + 1, jm, placement, f"joint{i}")
        inertia = pin.Inertia(float(nums["mass"][i]), nums["com"][i], nums["inertia_com"][i])
        model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
    return model


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    nums = model_numbers()
    model = pinocchio_model(nums)
    data = model.createData()
    rng = np.random.default_rng(1)
    K, nv = 4, model.nv
    q = rng.uniform(-1.5, 1.5, (K, model.nq))
    v, a, tau = rng.standard_normal((3, K, nv))
    out = {k: np.asarray(x) for k, x in nums.items()}
    rnea, crba, aba, oR, op = [], [], [], [], []
    for k in range(K):
        rnea.append(pin.rnea(model, data, q[k], v[k], a[k]).copy())
        M = pin.crba(model, data, q[k])
        M = np.triu(M) + np.triu(M, 1).T
        crba.append(M)
        aba.append(pin.aba(model, data, q[k], v[k], tau[k]).copy())
        pin.forwardKinematics(model, data, q[k])
        oR.append(np.stack([data.oMi[i].rotation for i in range(1, model.njoints)]))
        op.append(np.stack([data.oMi[i].translation for i in range(1, model.njoints)]))
        # self-checks: the helical joint's motion is rotation by q and translation by pitch q
        for i in range(model.nq):
            if nums["kinds"][i] != 2:
                continue
            parent = data.oMi[int(nums["parents"][i]) + 1]
            u, h = nums["axis"][i], nums["pitch"][i]
            joint = pin.SE3(pin.exp3(u * q[k, i]), h * q[k, i] * u)
            want = parent * pin.SE3(nums["placement_R"][i], nums["placement_p"][i]) * joint
            assert np.allclose(data.oMi[i + 1].homogeneous, want.homogeneous, atol=1e-12)
        assert np.allclose(crba[-1] @ aba[-1], tau[k] - pin.nle(model, data, q[k], v[k]), atol=1e-10)
    out.update(q=q, v=v, a=a, tau=tau, rnea=np.array(rnea), crba=np.array(crba), aba=np.array(aba))
    out.update(oMi_R=np.array(oR), oMi_p=np.array(op), pinocchio_version=np.array(pin.__version__))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    size = save_npz_deterministic(args.out, out)
    print(f"wrote {args.out} ({size} bytes)")


if __name__ == "__main__":
    main()
