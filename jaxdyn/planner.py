"""Which executor runs a call: the one module that decides, from the backend, the model's size, the
batch and measurements.

Every algorithm is written once (:mod:`jaxdyn.algorithms`, the link steps over an algebra); what
varies is how a call executes it:

* **the generic algorithms** (one sample; ``vmap`` batches them) walk the tree by
  :func:`jaxdyn.tree.scatter`/:func:`~jaxdyn.tree.gather` in one of three ways, chosen by
  :func:`traversal`: ``"scan"`` (``lax.scan`` over links; compile time flat in the link count),
  ``"unroll"`` (a Python loop over links; fastest for small trees) and ``"latency"``
  (unrolled, with the ABA's transforms as 6x6 products: the fewest XLA kernels for one sample
  on a CPU, never chosen by ``"auto"``);
* **the batch kernels** (:mod:`jaxdyn.kernels`: struct-of-arrays, the batch the last axis),
  unrolled or scanned (:func:`kernel_traversal`), in chunks on a CPU (:func:`chunk`);
* **the fused Pallas kernels** (:mod:`jaxdyn.kernels.pallas`, GPU), unrolled or looped
  (:func:`pallas_traversal`);
* **under** ``jax.vmap``, the public ``jaxdyn.aba``, ``rnea`` and ``crba`` (and through them
  :func:`jaxdyn.sim.step`, :func:`jaxdyn.sim.rollout` and the environments) send the batch to a
  batch kernel or to ``vmap`` of the generic algorithm (:func:`batch_kernel`, read by the
  batching rule of :mod:`jaxdyn.batching`), with thresholds of their own inside the implicit
  contact step (:func:`site`).

Every choice gives the same numbers to round-off; only speed and compile time differ. The
thresholds below are measurements (the records they cite are in ``benchmarks/results/``).

The one override, for experts and for measuring the executors against each other, is the
context manager :func:`executor`::

    with jaxdyn.executor(traversal="scan", batch="vmap"):
        f = jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))
        qdd = f(model, q, qd, tau)

It is part of ``jax.jit``'s cache key (``jax.make_user_context``): a function compiled outside
the block is traced and compiled again inside it, and the other way round.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator

import jax

from . import joints

TRAVERSALS = ("auto", "scan", "unroll", "latency")
BATCH = ("auto", "kernel", "vmap")
DENSE = ("auto", "elementwise", "library")
SKIP = ("auto", "branch", "select")

# -- the generic algorithms ---------------------------------------------------------------------
# "auto" unrolls trees with at most this many scanned links on a CPU, else scans. Measured on
# XLA CPU (benchmarks/results/traversal-cpu.md): for 2 links the unrolled aba is 1.7x faster per
# sample at batch 4096 and compiles as fast; for 6-7 links it is only ~10% faster, slower at
# batch 1 and 3x slower to compile. So tiny robots (pendulums, cart-pole, acrobot: the RL tasks)
# unroll and everything else scans.
UNROLL_MAX_LINKS = 3
# On a GPU "auto" unrolls up to this many links. Measured on an H100 (jax 0.11.2,
# benchmarks/results/h100-2026-11-23.md, "generic traversal"): a scanned program launches
# kernels for every scan step of every pass, so for ur5 (6 links) and panda (9) the unrolled
# `vmap(aba)` was 1.2x (ur5) and 2.2x (panda) faster at batch 131,072 and 1.9-2.0x faster for
# one sample (229-239 us against 440-500 us); compile 4.7-9.3 s against 1.1-1.3 s. Larger robots
# were not measured unrolled and keep the scan (flat compile time).
GPU_UNROLL_MAX_LINKS = 9
# "latency" is "unroll" with the ABA's transforms as 6x6 products (spatial.force_matrix): for one
# sample at a time on XLA CPU, where a call costs ~75 ns per XLA kernel launched and the
# arithmetic is negligible, it launches fewer kernels (panda 218 -> 110; 19-24 us per call with
# synchronous dispatch, benchmarks/results/latency-cpu*.md); batched it does more flops (panda
# 3.5 -> 4.9 us/sample at batch 4096), so "auto" never picks it.

# -- the batch kernels --------------------------------------------------------------------------
# The struct-of-arrays kernels unroll models with at most this many scanned links: their
# unrolled form is the fastest per sample, and its compile time grows with the link count
# (talos, 38 links: ~80 s on the 2-core CPU); the scanned form compiles in a time flat in the
# link count (benchmarks/results/kernels-cpu.md).
SOA_UNROLL_MAX_LINKS = 12
# Batches larger than this are processed in chunks of this many samples (``lax.map`` over
# chunks) on a CPU: every value a link step computes once is a (B,) buffer, so a chunk keeps
# them in cache and caps the memory (panda ABA at B = 2^20, every intermediate a buffer: 2.6 GB
# of XLA buffers unchunked). On other backends the batch goes in whole.
CPU_CHUNK = 16384
# Under ``vmap``, batches smaller than this run ``vmap`` of the generic algorithm on a CPU: the
# kernel launches one small XLA kernel per scalar of a link step, whose fixed cost a few samples
# do not pay back. Measured on the Go1 (13 bodies, float32, 2-core CPU, one thread,
# benchmarks/planner_batch.py): the ABA kernel's time per sample over vmap's was 1.94 at batch
# 1, 1.06 at 16, 0.29 at 64, 0.16 at 256-4096.
CPU_KERNEL_MIN_BATCH = 32
# Inside the implicit contact step (jaxdyn.sim: the RNEA and the ABA of its velocity solve) the
# kernels did not pay on a CPU at any batch measured: the Go1 feet-only contact step (float32, one
# thread, benchmarks/planner_batch.py --step, benchmarks/results/cpu-2026-11-29-small-solves.md)
# took 1.55x vmap's CPU time per env-step at 64 envs, 1.12x at 256, 1.01x at 1,024 and 1.06x at
# 4,096, and compiled in 1.6-3.7x the time. There a CPU batch takes the kernels from this many
# samples; None: never.
CPU_STEP_KERNEL_MIN_BATCH: int | None = None
# The CRBA kernel ran at 0.29-0.81x of ``vmap(crba)`` on the 2-core CPU (panda, solo12, talos,
# two 14-link humanoids; float32, batch 4096; benchmarks/results/cpu-2026-11-27-spherical.md,
# benchmarks/rule_ab.py), where on an H100 it is about twice as fast (2026-11-23 records): on a
# CPU the batching rule keeps ``vmap(crba)``. With spherical joints the scanned kernels (every
# link padded to three dof slots) ran at 0.48-0.64x of ``vmap`` for the ABA and RNEA of a
# 14-link humanoid with 9 ball joints, the unrolled ones at 2.5-3.4x: such models go to the
# kernels only where they unroll.

# -- small dense algebra (dense()) ---------------------------------------------------------------
# On a CPU: loops and sums of XLA element-wise operations. LAPACK's batched calls split the batch
# over XLA's intra-op pool and block their thread: two at once can hang the program (jaxlib
# 0.10.2, jaxdyn.linalg's docstring), and XLA CPU hands a fused reduction or a small matrix
# product to YNNPACK, slower at these sizes (feet-only Go1 contact step 14-22 % less CPU time
# with the sums, benchmarks/results/cpu-2026-11-30-sim-step-feet-explicit-sums.md). On a GPU
# each loop trip is a launch and a read of its predicate by the host, and XLA stops fusing the
# explicit sums of the congruence's 156 outer products above 8,192 envs: compiled for an H200,
# the dm_control humanoid's contact step took 383 loop trips per step, and its program 300 MiB
# at 4,096 envs but 5,696 MiB at 16,384, about 5,100 MiB of them those products written
# out (measured on the H200: 331 and 6,676 MB; 6.85e5 and 5.83e5 env-steps/s,
# benchmarks/results/gpu-2026-11-30-h200-sim-step.md). With the library, compiled the same way:
# 113 loop trips per step (the link traversals' and the Newton and line-search loops) and
# 1,099 MiB at 16,384 envs against 5,696 (benchmarks/results/gpu-aot-h200-dense.md; the Go1 with
# every geom 499 MiB against 1,919). Elsewhere: the library; its speed on a GPU is
# gpu_session.sh sim5's to measure.
CPU_DENSE = "elementwise"
# The contact rows' congruence on a CPU under "auto": the explicit sum up to this many dofs, one
# dot_general from it on. CPU time per env-step of sim_step.py's scenes, zero torque, float32,
# one core, the sum against the product (two alternated runs each,
# benchmarks/step_cpu_time.py; docs/benchmarks.md): the Go1 (18 dofs, feet only, 48 rows) 44.4
# and 45.5 against 52.9 and 58.8 us at 256 envs, 61.1 and 61.5 against 57.5 and 61.8 at 64; the
# Go1 with every geom (18 dofs, 156 rows) 237.5 and 241.0 against 255.4 and 230.2 at 64; the
# dm_control humanoid (27 dofs, 156 rows) 426.7 and 365.7 against 291.1 and 289.2 at 64, 342.4
# and 341.1 against 312.5 and 308.3 at 256.
CPU_CONGRUENCE_PRODUCT_MIN_DOFS = 24

# -- work the whole batch would skip (skip()) ----------------------------------------------------
# Work that a sample may skip (a kind of shape pair with every pair out of reach, the contact
# rows beyond the touching ones) runs inside a lax.cond or lax.switch on the batch's verdict
# (jaxdyn.batching.batch_any, batch_max): skipped where every sample of the batch skips it. On a
# CPU the branch costs a reduction and spares the work: Playground's Go1 with every collision
# geom (64 envs, zero torque, float32) spent 63 us of CPU per env-step in its six hip
# cylinder-cylinder pairs, whose bounding spheres never met along 300-step falls
# (benchmarks/step_parts.py; benchmarks/executor_ab.py: 191-203 -> 134-143 us per env-step).
# Elsewhere the select: on a GPU a conditional's predicate is read by the host, and the branch
# is not measured there.
CPU_SKIP = "branch"
# With the branch, the implicit contact solve takes, of its budget's rows sorted by distance,
# only the first k of the sizes CPU_SOLVE_ROWS_MIN, twice that, four times, ... (below the
# budget) where no sample of the batch has more touching ones (contact_row_sizes). One step at
# 64 envs, float32, CPU time per env-step (alternated in one process): dm_control's humanoid
# 221-268 us with its 52 rows, 115-153 with 16, 112-132 with 8; the Go1 with every geom 101-128
# with its 30, 74-105 with 12, 71-94 with 8. The humanoid's 100-step fall at 64 envs (4 rows
# touching standing, 10-17 once it lands): sizes (0, 8, 16, 32, 52) against (0, 13, 52) took
# 0.85x the CPU time (best 113.6 against 127.3 us per env-step), 0.75x over the 20 steps after
# the landing; the program compiled in 52 against 38 s.
CPU_SOLVE_ROWS_MIN = 8

# -- the fused kernels --------------------------------------------------------------------------
# Largest robot (scanned links) each Pallas kernel is unrolled for: Triton's compile time grows
# steeply with the unrolled body (deviceless H100 compile of the ABA: 12 links 40 s, 32 > 240
# s; of the RNEA: 12 links 5.7 s, 32 links 20 s). Beyond it the ABA, RNEA and CRBA loop over
# links (:mod:`jaxdyn.kernels.pallas_scan`); the Jacobian has no looped form.
PALLAS_MAX_LINKS = {"aba_pallas": 12, "aba_jacobian_pallas": 12, "rnea_pallas": 32, "crba_pallas": 12}
PALLAS_LOOPED = ("aba_pallas", "rnea_pallas", "crba_pallas")
PALLAS_TRAVERSALS = ("auto", "unroll", "scan")


@dataclasses.dataclass(frozen=True)
class Executor:
    """The override in force (:func:`executor`): ``traversal`` one of :data:`TRAVERSALS`,
    ``batch`` one of :data:`BATCH`; ``"auto"`` leaves the choice to the planner."""

    traversal: str = "auto"
    batch: str = "auto"
    dense: str = "auto"
    skip: str = "auto"


# part of jax.jit's cache key (jax.make_user_context): a function traced under one override is
# traced again under another
_CURRENT = jax.make_user_context(default_value=Executor())


@contextlib.contextmanager
def executor(
    traversal: str = "auto", batch: str = "auto", dense: str = "auto", skip: str = "auto"
) -> Iterator[Executor]:
    """Override the planner's choice for the calls traced inside the ``with`` block.

    Args:
      traversal: how the tree is walked: ``"scan"``, ``"unroll"``, ``"latency"`` (the generic
        algorithms only; the kernels read it as ``"unroll"``) or ``"auto"`` (the planner's).
      batch: under ``jax.vmap``, ``"kernel"`` (the batch kernels of :mod:`jaxdyn.kernels`),
        ``"vmap"`` (``vmap`` of the generic algorithms: the reference the kernels are tested
        against) or ``"auto"``.
      dense: the small dense algebra of one sample (:func:`dense`): ``"elementwise"`` (loops
        and sums of XLA element-wise operations), ``"library"`` (the backend's batched
        factorisations and matrix products) or ``"auto"``.
      skip: how work that a sample may skip is executed (:func:`skip`): ``"branch"`` (skipped
        where every sample of the batch skips it), ``"select"`` (done for every sample, then a
        select) or ``"auto"``.

    Results are the same to round-off whatever the choice. Part of ``jax.jit``'s cache key, so
    a jitted function is traced again under another override (module docstring).
    """
    if traversal not in TRAVERSALS:
        raise ValueError(f"executor: unknown traversal {traversal!r}, choose one of {', '.join(TRAVERSALS)}")
    if batch not in BATCH:
        raise ValueError(f"executor: unknown batch {batch!r}, choose one of {', '.join(BATCH)}")
    if dense not in DENSE:
        raise ValueError(f"executor: unknown dense {dense!r}, choose one of {', '.join(DENSE)}")
    if skip not in SKIP:
        raise ValueError(f"executor: unknown skip {skip!r}, choose one of {', '.join(SKIP)}")
    chosen = Executor(traversal, batch, dense, skip)
    with _CURRENT(chosen):
        yield chosen


def current() -> Executor:
    """The override in force (``Executor("auto", "auto", "auto", "auto")`` outside :func:`executor`)."""
    return _CURRENT.value


def dense() -> str:
    """How the small dense algebra of one sample runs (the override's ``dense``, else the
    backend's, :data:`CPU_DENSE`): ``"elementwise"``, the factorisations and substitutions of
    :mod:`jaxdyn.linalg` as loops of XLA element-wise operations and the contact rows'
    congruence ``sum_c G_c^T K_c G_c`` as an explicit sum (on a CPU for models under
    :data:`CPU_CONGRUENCE_PRODUCT_MIN_DOFS` dofs, :func:`congruence_product`); ``"library"``,
    the backend's batched factorisations and triangular solves (``jax.lax.linalg``: cuSOLVER and
    cuBLAS on a GPU) and that congruence as one ``dot_general``."""
    d = current().dense
    if d != "auto":
        return d
    return CPU_DENSE if jax.default_backend() == "cpu" else "library"


def congruence_product(nv: int) -> bool:
    """Whether the contact rows' congruence ``sum_c G_c^T K_c G_c`` of a model with ``nv`` dofs
    is one ``dot_general`` (else an explicit sum of the rows' outer products): with the
    library's executor (:func:`dense`), and on a CPU from
    :data:`CPU_CONGRUENCE_PRODUCT_MIN_DOFS` dofs."""
    d = current().dense
    if d != "auto":
        return d == "library"
    return dense() == "library" or nv >= CPU_CONGRUENCE_PRODUCT_MIN_DOFS


def skip() -> str:
    """How work that a sample may skip is executed (the override's ``skip``, else the
    backend's, :data:`CPU_SKIP`): ``"branch"``, inside a ``lax.cond`` or ``lax.switch`` on the
    batch's verdict (:func:`jaxdyn.batching.batch_any`, :func:`~jaxdyn.batching.batch_max`), so
    skipped where every sample of the batch skips it; ``"select"``, done for every sample, then
    a select. Both give each sample what it gets alone, to round-off. Used by the narrow phase
    of pairs out of reach (:func:`jaxdyn.contact.pairs.pair_slots`) and the implicit contact
    solve's rows beyond the touching ones (:func:`contact_row_sizes`)."""
    b = current().skip
    if b != "auto":
        return b
    return CPU_SKIP if jax.default_backend() == "cpu" else "select"


def contact_row_sizes(rows: int, by_distance: bool = True) -> tuple[int, ...]:
    """The sizes, smallest first, among which the implicit contact solve takes the first rows of
    its ``rows`` contacts (:func:`jaxdyn.sim.implicit.implicit_contact`): the smallest that holds
    every touching row of every sample of the batch (a row apart carries no force). With the
    branch (:func:`skip`): ``0`` (no row touches: the solve without contact), then, where the
    rows are sorted by distance (``by_distance``, a budget's), :data:`CPU_SOLVE_ROWS_MIN` and
    its doublings below ``rows``, and ``rows``; else ``(0, rows)``; without the branch
    ``(rows,)``. The solve's cost grows with its rows (the Newton and polish matrices are sums
    over them), and each size compiles the solve once more."""
    if skip() != "branch" or rows == 0:
        return (rows,)
    if not by_distance:
        return (0, rows)
    sizes, k = [0], CPU_SOLVE_ROWS_MIN
    while k < rows:
        sizes.append(k)
        k *= 2
    return (*sizes, rows)


def scanned_links(topology) -> int:
    """The links a traversal walks: every body but a free root (which every algorithm handles on
    its own)."""
    n = len(topology.parents)
    return n - 1 if n and joints.get(topology.joint_types[0]).floating else n


def traversal(topology) -> str:
    """How the generic algorithms walk ``topology``: the override's ``traversal`` or, on
    ``"auto"``, ``"unroll"`` up to :data:`UNROLL_MAX_LINKS` scanned links on a CPU and
    :data:`GPU_UNROLL_MAX_LINKS` on a GPU, else ``"scan"``."""
    t = current().traversal
    if t != "auto":
        return t
    limit = GPU_UNROLL_MAX_LINKS if jax.default_backend() == "gpu" else UNROLL_MAX_LINKS
    return "unroll" if scanned_links(topology) <= limit else "scan"


def kernel_traversal(model, traversal: str | None = None) -> str:
    """The batch kernels' traversal for ``model``: ``traversal`` (a kernel's argument), else the
    override's; ``"latency"`` is ``"unroll"`` here; ``"auto"`` unrolls up to
    :data:`SOA_UNROLL_MAX_LINKS` scanned links."""
    t = traversal or current().traversal
    if t == "latency":
        t = "unroll"
    if t not in TRAVERSALS:
        raise ValueError(f"unknown traversal '{t}', choose one of {', '.join(TRAVERSALS)}")
    if t == "auto":
        t = "unroll" if scanned_links(model.topology) <= SOA_UNROLL_MAX_LINKS else "scan"
    return t


def pallas_traversal(model, name: str, traversal: str | None = None) -> str:
    """The traversal a fused kernel ``name`` (e.g. ``"aba_pallas"``) uses for ``model``:
    ``traversal`` or the override's (``"latency"`` is ``"unroll"``); ``"auto"`` unrolls up to
    :data:`PALLAS_MAX_LINKS` scanned links and loops beyond (the ABA, RNEA and CRBA; the
    Jacobian is unrolled only)."""
    t = traversal or current().traversal
    if t == "latency":
        t = "unroll"
    if t not in PALLAS_TRAVERSALS:
        raise ValueError(f"{name}: traversal must be one of {', '.join(PALLAS_TRAVERSALS)}, got '{t}'")
    looped = name in PALLAS_LOOPED
    if t == "auto":
        t = "unroll" if scanned_links(model.topology) <= PALLAS_MAX_LINKS[name] or not looped else "scan"
    if t == "scan" and not looped:
        raise ValueError(
            f"{name}: only the unrolled form exists (traversal='unroll'); the looped one is "
            "written for aba_pallas, rnea_pallas and crba_pallas"
        )
    return t


_SITE: contextvars.ContextVar[str] = contextvars.ContextVar("jaxdyn_planner_site", default="call")


@contextlib.contextmanager
def site(name: str) -> Iterator[None]:
    """Mark the calls traced inside as made from ``name`` (``"contact_step"``: the implicit
    contact solve of :func:`jaxdyn.sim.step`), whose measured thresholds then apply. Set while a
    function is traced, inside it, so it needs no place in ``jit``'s cache key."""
    token = _SITE.set(name)
    try:
        yield
    finally:
        _SITE.reset(token)


def batch_kernel(model, kernel: str, batch: int) -> bool:
    """Whether ``vmap`` over the state of ``batch`` samples of ``model`` runs the batch kernel
    ``jaxdyn.kernels.<kernel>`` (``"aba_batch"``, ``"rnea_batch"``, ``"crba_batch"``) rather
    than ``vmap`` of the generic algorithm: the override's ``batch``, or on ``"auto"`` the
    measured choice (module constants): ``vmap`` for the CRBA and for batches under
    :data:`CPU_KERNEL_MIN_BATCH` on a CPU (:data:`CPU_STEP_KERNEL_MIN_BATCH`, none, inside the
    implicit contact step, :func:`site`), and for models with multi-dof joints (padded to three
    dof slots) too large to unroll."""
    b = current().batch
    if b != "auto":
        return b == "kernel"
    cpu = jax.default_backend() == "cpu"
    smallest = CPU_STEP_KERNEL_MIN_BATCH if _SITE.get() == "contact_step" else CPU_KERNEL_MIN_BATCH
    if cpu and (kernel == "crba_batch" or smallest is None or batch < smallest):
        return False
    multi_dof = joints.link_flags(model.layout.link_types).any_quaternion
    return not multi_dof or kernel_traversal(model) == "unroll"


def chunk(chunk, batch: int, fn: str) -> int | None:
    """The samples per piece a batch kernel ``fn`` works through (``None``: the whole batch):
    ``chunk`` (a kernel's argument: a positive int, ``None`` or ``"auto"``), ``"auto"`` meaning
    :data:`CPU_CHUNK` on a CPU and the whole batch elsewhere."""
    if chunk == "auto":
        chunk = CPU_CHUNK if jax.default_backend() == "cpu" else None
    if chunk is not None and (not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"{fn}: argument 'chunk' must be a positive int, None or 'auto', got {chunk!r}")
    return chunk if chunk is not None and batch > chunk else None
