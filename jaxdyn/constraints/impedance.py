"""MuJoCo's soft-constraint parameters, shared by the equality constraints
(:mod:`jaxdyn.constraints.solve`) and the contacts of ``Contact(normal="mujoco")``
(:mod:`jaxdyn.contact.soft`). MuJoCo's documentation, chapter "Computation", section "Solver
parameters" (MuJoCoComputation): ``solref = (timeconst, dampratio)`` or, with non-positive
numbers, ``(-stiffness, -damping)``, sets the reference acceleration ``aref = -B v - K imp r``;
``solimp = (dmin, dmax, width, midpoint, power)`` the impedance ``imp`` of the violation ``r``."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

MINVAL = 1e-15  # MuJoCo's mjMINVAL
MINIMP, MAXIMP = 0.0001, 0.9999  # MuJoCo's bounds on solimp's dmin, dmax, midpoint


def gains(solref: Float[Array, "m 2"], solimp: Float[Array, "m 5"], dt=None):
    """``(K, B)`` of the reference acceleration ``aref = -B v - K imp r`` per row:

        K = 1 / (dmax^2 timeconst^2 dampratio^2),  B = 2 / (dmax timeconst)    (solref > 0)
        K = -solref[0] / dmax^2,                   B = -solref[1] / dmax        (solref <= 0)

    with ``dmax`` solimp's second number; ``dt``: the step, whose ``2 dt`` bounds ``timeconst``
    from below (MuJoCo's ``refsafe``; ``None``: no bound)."""
    tc, dr = solref[:, 0], solref[:, 1]
    if dt is not None:
        tc = jnp.where(tc > 0, jnp.maximum(tc, 2 * jnp.asarray(dt, tc.dtype)), tc)
    dmax = jnp.clip(solimp[:, 1], MINIMP, MAXIMP)
    K = jnp.where(tc > 0, 1 / jnp.maximum(MINVAL, dmax**2 * tc**2 * dr**2), -tc / jnp.maximum(MINVAL, dmax**2))
    B = jnp.where(dr > 0, 2 / jnp.maximum(MINVAL, dmax * tc), -dr / jnp.maximum(MINVAL, dmax))
    return K, B
