"""Deviceless ahead-of-time XLA GPU (H100) compilation of jaxdyn kernels on a CPU-only host.

Compiles (does not run) the kernels for an H100 described by a GpuTargetConfig text proto
(``benchmarks/gpu_targets/h100_sxm.txtpb``, the H100 SXM's published hardware parameters) to
measure XLA GPU / Triton compile time, executable size and XLA's buffer sizes before a GPU is
available, and to catch kernels whose GPU compile would stall a benchmark run. Speed needs a GPU.

Set-up (a separate environment; the CUDA plugin is not a jaxdyn dependency), no GPU or driver:

  python -m venv /tmp/cudaenv
  /tmp/cudaenv/bin/pip install jax==0.10.2 jaxlib==0.10.2 "jax-cuda12-plugin[with-cuda]==0.10.2" -e .
  JAX_PLATFORMS=cpu /tmp/cudaenv/bin/python benchmarks/gpu_aot.py all --timeout 240 \
      > benchmarks/results/gpu-aot-h100.jsonl
  JAX_PLATFORMS=cpu /tmp/cudaenv/bin/python benchmarks/gpu_aot.py one aba_batch panda [--batch B] [--traversal T]
  JAX_PLATFORMS=cpu /tmp/cudaenv/bin/python benchmarks/gpu_aot.py one aba_pallas_scan talos --registers

KERNEL: trivial | aba_batch | aba_vmap | rnea_batch | crba_batch | aba_jacobian_batch | jacobian_vmap |
        pallas_triton | rnea_pallas_triton | crba_pallas_triton | jacobian_pallas_triton |
        aba_pallas_scan | rnea_pallas_scan | crba_pallas_scan
Each ``all`` case runs in its own subprocess (one at a time) under a timeout; one JSON line each.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.environ.get("GPU_TARGET_CONFIG", os.path.join(HERE, "gpu_targets", "h100_sxm.txtpb"))
KERNELS = [
    "aba_batch",
    "aba_vmap",
    "rnea_batch",
    "crba_batch",
    "aba_jacobian_batch",
    "jacobian_vmap",
    "pallas_triton",
]
ROBOTS = ["ur5", "panda", "solo12", "talos:floating"]


def h100_device(target=TARGET):
    """A compile-only H100 device (no GPU needed): the CUDA PJRT plugin's topology from a
    GpuTargetConfigProto text proto; the topology string is slices x hosts x devices."""
    from jax.experimental import topologies

    with open(target) as f:
        cfg = f.read()
    topo = topologies.get_topology_desc("", "cuda", target_config=cfg, topology="1x1x1")
    return topo.devices[0]


def build(kernel, robot, traversal, pack=True):
    import jax
    import jax.numpy as jnp
    from harness import _model

    import jaxdyn

    if kernel == "trivial":
        return (lambda x: jnp.sin(x) @ x), [(1024, 1024)], None, {}
    model = _model(robot, jnp.float32)
    info = {"nq": model.nq, "nv": model.nv, "links": len(model.layout.link_bodies)}
    # what chunk="auto" and the packing of scan outputs are on a GPU backend (this host runs with
    # JAX_PLATFORMS=cpu)
    kw = {"chunk": None, "_pack": pack}
    if traversal:
        kw["traversal"] = traversal
    if kernel == "aba_batch":
        f = lambda q, qd, tau: jaxdyn.kernels.aba_batch(model, q, qd, tau, **kw)  # noqa: E731
    elif kernel == "rnea_batch":
        f = lambda q, qd, qdd: jaxdyn.kernels.rnea_batch(model, q, qd, qdd, **kw)  # noqa: E731
    elif kernel == "crba_batch":
        return (lambda q: jaxdyn.kernels.crba_batch(model, q, **kw)), None, model, {**info, "args": "q"}
    elif kernel == "aba_jacobian_batch":
        kw.pop("chunk")
        f = lambda q, qd, tau: jaxdyn.kernels.aba_jacobian_batch(model, q, qd, tau, **kw)  # noqa: E731
    elif kernel == "jacobian_vmap":
        g = jax.vmap(jax.jacfwd(jaxdyn.aba, argnums=(1, 2, 3)), in_axes=(None, 0, 0, 0))
        f = lambda q, qd, tau: g(model, q, qd, tau)  # noqa: E731
    elif kernel == "aba_vmap":
        g = jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0))

        def f(q, qd, tau):  # traced inside the override (on this CPU-only host "auto" resolves as on a CPU)
            with jaxdyn.executor(traversal=traversal or "auto"):
                return g(model, q, qd, tau)
    elif kernel in ("aba_pallas_scan", "rnea_pallas_scan", "crba_pallas_scan"):
        from jaxdyn.kernels.pallas_scan import looped

        f = looped(model, kernel[: -len("_pallas_scan")], interpret=False)
        if kernel.startswith("crba"):
            return f, None, model, {**info, "args": "q"}
    elif kernel.startswith("crba_pallas_"):
        from jaxdyn.kernels.pallas import crba_pallas

        return crba_pallas(model, interpret=False), None, model, {**info, "args": "q"}
    elif kernel.startswith(("pallas_", "rnea_pallas_", "jacobian_pallas_")):  # pallas_triton, rnea_pallas_triton, ...
        from jaxdyn.kernels.pallas import aba_jacobian_pallas, aba_pallas, rnea_pallas

        build_fn = {"rnea": rnea_pallas, "jacobian": aba_jacobian_pallas}.get(kernel.split("_")[0], aba_pallas)
        f = build_fn(model, interpret=False)
    else:
        raise ValueError(kernel)
    return f, None, model, info


def _flops(stage):
    """XLA's flop estimate of a lowered or compiled stage, or why there is none."""
    try:
        ca = stage.cost_analysis()
        return ca.get("flops") if ca else None
    except Exception as e:  # noqa: BLE001
        return f"n/a: {e}"[:80]


_NOT_KERNELS = ("parameter", "get-tuple-element", "tuple", "constant", "bitcast")


def loop_kernels(hlo_text):
    """Per while-loop body of a compiled GPU module (in text order), the instructions that
    launch work: fusions, copies, custom calls and any other op that is not a parameter, tuple
    access, constant or bitcast. For the scanned kernels each body is one link step of a sweep."""
    import re

    from harness import hlo_computations

    bodies = {m.group(1) for m in re.finditer(r" while\(.*?body=%?([\w.\-]+)", hlo_text)}
    out = []
    for name, lines in hlo_computations(hlo_text).items():
        if name not in bodies:
            continue
        ops = (re.match(r"\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s([a-z][\w\-]*)\(", ln) for ln in lines)
        out.append(sum(1 for op in ops if op and op.group(1) not in _NOT_KERNELS))
    return out


def one(kernel, robot, batch, traversal, pack=True):
    t_start = time.perf_counter()
    import jax
    import jax.numpy as jnp

    res = {"kernel": kernel, "robot": robot, "batch": batch, "traversal": traversal or "auto", "pack": pack}
    dev = h100_device()
    res["device_kind"] = dev.device_kind
    sh = jax.sharding.SingleDeviceSharding(dev)
    f, shapes, model, info = build(kernel, robot, traversal, pack)
    res.update(info)
    if shapes is None:
        shapes = (
            [(batch, model.nq)]
            if info.get("args") == "q"
            else [(batch, model.nq), (batch, model.nv), (batch, model.nv)]
        )
    args = [jax.ShapeDtypeStruct(s, jnp.float32, sharding=sh) for s in shapes]
    t0 = time.perf_counter()
    lowered = jax.jit(f).trace(*args).lower()
    t1 = time.perf_counter()
    res["lower_s"] = round(t1 - t0, 3)
    res["hlo_flops_unopt"] = _flops(lowered)
    compiled = lowered.compile()
    res["compile_s"] = round(time.perf_counter() - t1, 3)
    ma = compiled.memory_analysis()
    if ma is not None:
        for k in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes"):
            res[k.replace("_size_in_bytes", "_bytes")] = getattr(ma, k)
    res["flops"] = _flops(compiled)  # None for this target so far
    txt = compiled.as_text()
    entry = txt[txt.rfind("ENTRY") :]
    res["entry_fusions"] = entry.count(" fusion(")
    res["entry_custom_calls"] = entry.count("custom-call(")
    res["entry_while"] = entry.count(" while(")
    res["loop_body_kernels"] = loop_kernels(txt)
    try:
        from jax.experimental import serialize_executable as se

        res["executable_bytes"] = len(se.serialize(compiled)[0])
    except Exception as e:  # noqa: BLE001
        res["executable_bytes"] = f"n/a: {e}"[:80]
    res["total_s"] = round(time.perf_counter() - t_start, 3)
    res["ok"] = True
    return res


def run_all(a):
    for kernel in a.kernels.split(","):
        for robot in [""] if kernel == "trivial" else a.robots.split(","):
            cmd = [sys.executable, __file__, "one", kernel, robot or "-", "--batch", str(a.batch)]
            if a.traversal:
                cmd += ["--traversal", a.traversal]
            if a.no_pack:
                cmd += ["--no-pack"]
            t0 = time.perf_counter()
            p = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
                env={**os.environ, "JAX_PLATFORMS": "cpu"},
            )
            try:
                out, err = p.communicate(timeout=a.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                out, err = "", f"TIMEOUT after {a.timeout} s"
            line = [ln for ln in out.splitlines() if ln.startswith("{")]
            if line:
                r = json.loads(line[-1])
            else:
                errs = [ln for ln in err.splitlines() if ln.strip() and "cuInit" not in ln]
                tail = [ln for ln in errs if "Error" in ln or "error" in ln][-3:] or errs[-3:]
                r = {"kernel": kernel, "robot": robot, "ok": False, "error": " | ".join(tail)[:600]}
            r["wall_s"] = round(time.perf_counter() - t0, 1)
            print(json.dumps(r), flush=True)


def registers(dump_dir, min_bytes=10000):
    """``{ptx file: "N registers, S bytes spill stores"}`` for the PTX files of an XLA dump larger
    than ``min_bytes`` (the fused kernels; XLA's small loop fusions are left out), from the
    ``ptxas`` of the CUDA toolkit wheel (``nvidia-cuda-nvcc``) compiling for sm_90a. Registers are
    allocated per kernel (the maximum over its code), and they bound how many programs an SM
    runs at once (65,536 registers per SM)."""
    import glob
    import re
    import shutil

    ptxas = shutil.which("ptxas")
    if ptxas is None:  # the CUDA toolkit wheel that jax-cuda12-plugin[with-cuda] installs
        import nvidia.cuda_nvcc

        ptxas = os.path.join(list(nvidia.cuda_nvcc.__path__)[0], "bin", "ptxas")
    out = {}
    for f in sorted(glob.glob(os.path.join(dump_dir, "*.ptx"))):
        if os.path.getsize(f) < min_bytes:
            continue
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", f, "-o", os.devnull], capture_output=True, text=True)
        regs = re.search(r"Used (\d+) registers", r.stderr)
        spill = re.search(r"(\d+) bytes spill stores", r.stderr)
        # Static instruction counts of the PTX (each loop body appears once: per link step, not
        # per call): floating-point arithmetic and global-memory loads/stores.
        with open(f) as fh:
            ptx = fh.read()
        arith = len(re.findall(r"^\s*(?:fma|mul|add|sub|neg|div|rcp)\.[\w.]*f(?:32|64)\b", ptx, re.M))
        mem = len(re.findall(r"^\s*(?:@%p\d+\s+)?(?:ld|st)\.global", ptx, re.M))
        out[os.path.basename(f)] = (
            f"{regs.group(1) if regs else '?'} registers, "
            f"{spill.group(1) if spill else '?'} bytes spill stores, "
            f"{arith} fp arithmetic and {mem} global ld/st instructions (static)"
        )
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["one", "all"])
    p.add_argument("kernel", nargs="?")
    p.add_argument("robot", nargs="?")
    p.add_argument("--batch", type=int, default=131072)
    p.add_argument("--traversal", default=None)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--robots", default=",".join(ROBOTS))
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument(
        "--no-pack",
        action="store_true",
        help="SoA scans: per-leaf scan outputs (as on CPU) instead of jaxdyn.tree.Packed (the GPU default)",
    )
    p.add_argument(
        "--registers",
        action="store_true",
        help="also report each large GPU kernel's registers and spills (ptxas -v on XLA's PTX dump)",
    )
    a = p.parse_args()
    if a.mode == "one":
        dump = None
        if a.registers:  # XLA reads XLA_FLAGS when the backend starts: set before jax is imported
            import tempfile

            dump = tempfile.mkdtemp(prefix="jaxdyn-aot-")
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={dump}").strip()
        res = one(a.kernel, a.robot, a.batch, a.traversal, pack=not a.no_pack)
        if dump:
            res["registers"] = registers(dump)
        print(json.dumps(res), flush=True)
    else:
        run_all(a)


if __name__ == "__main__":
    main()
