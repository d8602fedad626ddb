"""The ground half-space, the contact law's parameters and the state of the stick-capable
friction (:mod:`jaxdyn.contact`)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import geometry
from ..model import Model


def array(x):
    """Leaves stay JAX arrays (tracers included) or become numpy arrays (no device work at
    construction)."""
    return x if isinstance(x, jax.Array) else np.asarray(x, np.float64)


class Ground(eqx.Module):
    """The half-space ``normal . x <= height`` (world frame). ``normal`` is normalised when
    used. Default: the plane ``z = 0``, ground below.

    friction: the ground's own sliding friction; a geom touches it with the larger of the two
      (MuJoCo's combination), so the default 0 leaves each geom's own.
    geom (static): the plane geom of ``model.geoms`` this ground stands for (``-1``: none); a
      geom in an explicit pair with it (MJCF ``<pair>``) touches it with the pair's friction.
    """

    normal: Float[Array, " 3"] = eqx.field(default_factory=lambda: np.array([0.0, 0.0, 1.0]), converter=array)
    height: Float[Array, ""] = eqx.field(default_factory=lambda: np.array(0.0), converter=array)
    friction: Float[Array, ""] = eqx.field(default_factory=lambda: np.array(0.0), converter=array)
    geom: int = eqx.field(static=True, default=-1)

    @staticmethod
    def from_model(model: Model) -> Ground:
        """The first plane geom on the world body of ``model.geoms`` (MJCF ``<geom type="plane">``):
        normal its z axis, height ``normal . pos``, its sliding friction; the default ground if
        there is none."""
        g = model.geoms
        assert g is not None  # a model with geoms (make_model gives every model its Geoms)
        for i, (t, b) in enumerate(zip(g.type, g.body)):
            if t == geometry.PLANE and b < 0:
                n = g.R[i][:, 2]
                return Ground(normal=n, height=jnp.dot(n, g.pos[i]), friction=g.friction[i, 0], geom=i)
        return Ground()


class ContactParams(eqx.Module):
    """Contact law parameters (array leaves: differentiable, e.g. for identification).

    stiffness ``k`` [N/m^p], exponent ``p``: ``k d^p``. Defaults ``k = 1e6 N/m^1.5`` and the
      Hertz exponent ``p = 1.5`` (a sphere on a plane, HuntCrossley75): a 1 kg sphere rests
      0.46 mm deep, a 12.5 kg share of a 50 kg quadruped 2.5 mm; the contact frequency
      ``sqrt(p k d^(p-1) / m)`` stays near or below 200 rad/s for links of a kilogram and more,
      so ``omega h`` is about 0.2 at ``h = 1 ms``, far inside the explicit limit 2.
    damping ``c_d`` [s/m]: Hunt-Crossley damping, the fraction of the spring force added per
      m/s of penetration rate. Default 10 s/m. Near rest the damping coefficient is
      ``k d^p c_d = m g c_d``, so the contact settles with the time constant ``2 / (g c_d)``
      (0.02 s) whatever the stiffness; impacts at 0.1-1 m/s lose most of their energy.
    friction_velocity ``eps`` [m/s]: regularisation scale of Coulomb friction. Default 1e-3 m/s.
      In ``"implicit_euler"`` the contact force is implicit in velocity (a Newton solve of the
      backward-Euler velocity equation, :func:`jaxdyn.sim.step`), so the steep friction slope
      ``mu f_n / eps`` is stable and a body held by friction creeps only at ``eps r / sqrt(1 -
      r^2)`` (module docstring): 0.64 mm/s for a block on a slope at 54 % of its friction
      angle's tangent, where MuJoCo's soft friction drifts about 1 mm/s (docs/contact.md,
      "Friction that holds"); a sphere rolls down a slope at the rolling solution without
      chatter at 1-4 ms. Narrower zones hold tighter (1e-4 m/s: 0.064 mm/s) but make the
      step's map steep in places where sliding turns to sticking within a step, which finite
      differences of a rollout then see as jumps (1e-3 keeps them exact at 1e-7 on a rolling
      ball, tests/test_contact.py). The explicit integrators need ``h mu f_n / (eps m_eff) < 2``, which no
      value meets for a light legged robot (docs/contact.md, "Time steps"); there, or to
      compare with the former default, ``eps ~ 2 h mu g`` (0.02 m/s at 1 ms). Used by
      ``friction="regularised"`` only.
    spin_velocity ``eps_w`` [rad/s]: regularisation scale of the torsional and rolling friction
      (contacts of MuJoCo ``condim`` 4 and 6, :mod:`jaxdyn.contact.laws` (R1)-(R2)), as ``eps`` is for
      sliding. Default 0.1 rad/s. Under a static twisting or rolling load ``r`` times the bound
      the contact turns at ``eps_w r / sqrt(1 - r^2)``. Used by both friction laws.
    tangential_stiffness ``k_t`` [N/m], tangential_damping ``b_t`` [N s/m]: the bristle of
      ``friction="spring"`` (:mod:`jaxdyn.contact.laws`, (S2)-(S5)), per contact point or pair. Defaults
      ``1e4`` N/m and ``100`` N s/m: a 1 kg block held on four corners by a tangential load of
      ``m g / 2`` deflects ``m g / (8 k_t)`` = 0.12 mm, its tangential mode ``sqrt(4 k_t / m)``
      = 200 rad/s is critically damped (``4 b_t = 2 sqrt(4 k_t m)``), and an unloaded bristle
      relaxes with the time constant ``b_t / k_t`` = 10 ms. The bristle is implicit in the
      ``"implicit_euler"`` step, so ``k_t`` is limited by the deflection wanted, not by stability.
      ``b_t`` must be positive.
    """

    stiffness: Float[Array, ""] = eqx.field(default=1e6, converter=array)
    exponent: Float[Array, ""] = eqx.field(default=1.5, converter=array)
    damping: Float[Array, ""] = eqx.field(default=10.0, converter=array)
    friction_velocity: Float[Array, ""] = eqx.field(default=1e-3, converter=array)
    tangential_stiffness: Float[Array, ""] = eqx.field(default=1e4, converter=array)
    tangential_damping: Float[Array, ""] = eqx.field(default=100.0, converter=array)
    spin_velocity: Float[Array, ""] = eqx.field(default=0.1, converter=array)


def pairs_converter(x):
    return tuple((str(a), str(b)) for a, b in x)


FRICTION_LAWS = ("regularised", "spring")


class ContactState(eqx.Module):
    """The state of ``friction="spring"``: the bristle elongation ``u`` (:mod:`jaxdyn.contact.laws`, (S1)-(S5)),
    world frame, ``ground (m, 3)`` one row per ground contact point in the order of
    :func:`contact_points`, ``pairs (p, 3)`` one row per contact of :func:`pair_contacts` (the
    second body's relative to the first). Zero rows where a kind of contact is off. A pytree;
    :meth:`Contact.init_state` gives the relaxed state (zeros)."""

    ground: Float[Array, "m 3"]
    pairs: Float[Array, "p 3"]
