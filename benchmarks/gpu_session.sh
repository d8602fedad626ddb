#!/usr/bin/env bash
# One call on a GPU machine without network access: `bash benchmarks/gpu_session.sh PART`.
# The machine has jax (CUDA) preinstalled and no network: the peers (frax, mujoco + mujoco-mjx and
# their missing pure-Python needs) travel as wheels in .whl/ (see benchmarks/README.md, "On a GPU").
# Each step runs under its own `timeout`, so a stalled case cannot eat the whole call; the
# harness saves its results after every row, so a step cut short keeps what it measured.
# Results land in $OUT (the tool brings that folder back), logs included.
set -u
OUT=${OUT:-/tmp/jaxdyn-gpu-out}
W=/tmp/jaxdyn-gpu-work  # the device tool brings back at most 8 files: everything is packed into one
mkdir -p "$OUT" "$W"
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
if [ -d .whl ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD || exit 1
else
  export PYTHONPATH=$PWD
fi
B="131072,1048576"
bench() {  # bench SECONDS TAG ARGS...: one harness process
  local secs=$1 tag=$2; shift 2
  echo "=== $(date +%T) bench $tag ($secs s): $*"
  timeout "$secs" $PY benchmarks/run.py --out "$W" --tag="-$tag" --force "$@" 2>&1 | grep --line-buffered -v "^WARNING\|^  warnings.warn" | tee "$W/log-$tag.txt"
  tar czf "$OUT/results-${PART}.tgz" -C "$W" .
}
simstep() {  # simstep SECONDS TAG ARGS...: one benchmarks/sim_step.py process (a record per row)
  local secs=$1 tag=$2; shift 2
  echo "=== $(date +%T) sim_step $tag ($secs s): $*"
  timeout "$secs" $PY benchmarks/sim_step.py --out "$W" --tag="-$tag" --repeats 3 --steps 100 "$@" 2>&1 \
    | grep --line-buffered -v "^WARNING\|^Module \|^  warnings.warn" | tee "$W/log-$tag.txt"
  tar czf "$OUT/results-${PART}.tgz" -C "$W" .
}
peers_site() {  # sim4, sim5: the peers' wheels and the scenes' XML from .gpu/, a compilation cache
  export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX processes side by side on one device
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
    && cp -r .gpu/site/* /tmp/site/ || exit 1
  export PYTHONPATH=/tmp/site:$PWD JAX_COMPILATION_CACHE_DIR=/tmp/jcache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
  bash "$0" info | tee "$OUT/info.txt"
}
PART=${1:-info}
case "$PART" in
  info)
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
    $PY -c "import jax, jaxlib, equinox; print('jax', jax.__version__, jaxlib.__version__, 'equinox', equinox.__version__, jax.devices())"
    ;;
  part1)  # smoke (GPU, float64, Pinocchio reference values), then aba / rnea on the shipped robots
    bash "$0" info | tee "$OUT/info.txt"
    echo "=== $(date +%T) smoke: Pinocchio reference tests on the GPU"
    timeout 120 $PY -m pytest tests/test_pinocchio_reference.py -q -x -p no:cacheprovider -k "dynamics or layout" 2>&1 | tail -5 | tee "$OUT/smoke.txt"
    bench 420 h100-aba-rnea --algos aba,aba_soa,rnea,rnea_soa --robots panda,talos:fixed,ur5,solo12 \
      --batches $B --peers frax,mjx --repeats 10
    ;;
  part2)  # the Pallas kernel; device peak memory (one case per process); crba; batch-1 latency
    bench 100 h100-pallas --algos aba,aba_pallas,rnea,rnea_pallas --robots ur5,panda --batches $B --peers frax --repeats 10
    bench 50 h100-mem-aba-soa --algos aba_soa --robots panda --batches 1048576 --peers "" --repeats 5
    bench 25 h100-mem-aba --algos aba --robots panda --batches 1048576 --peers "" --repeats 5
    bench 170 h100-crba --algos crba,crba_soa --robots panda,talos:fixed,ur5,solo12 --batches $B --peers frax,mjx --repeats 10
    bench 130 h100-batch1 --algos aba,rnea --robots panda,talos:floating,ur5 --batches 1 --peers frax,mjx --repeats 50
    ;;
  part3)  # CRBA after the full-precision fix; batch-1 latency of the fused paths; the Jacobian against
          # frax's jacfwd; solo12 at 2^20; chains against MJX
    bench 60 h100-crba-fullprec --algos crba,crba_soa --robots panda,talos:fixed --batches 131072 --peers frax --repeats 10
    bench 110 h100-batch1-fused --algos aba,aba_pallas,aba_soa --robots ur5,panda --batches 1 --peers frax --repeats 50
    bench 30 h100-batch1-latency --algos aba --robots ur5,panda --batches 1 --peers "" --repeats 50 --traversal latency
    bench 120 h100-jacobian --algos aba_jacobian,aba_jacobian_soa --robots panda --batches 131072 --peers frax --repeats 10
    bench 70 h100-solo12 --algos aba,aba_soa,rnea_soa --robots solo12 --batches 1048576 --peers frax,mjx --repeats 10
    bench 130 h100-chains --algos aba,aba_soa,rnea,rnea_soa --robots chain32,chain128,chain1024 --batches 131072 \
      --peers mjx --repeats 10
    ;;
  part4a)  # written after the 2026-11-23 run (part 4 split in two: one call runs at most 600 s):
           # the fused RNEA, the SoA Jacobian scanned, the generic path unrolled, the long chains
    bash "$0" info | tee "$OUT/info.txt"
    bench 150 h100-rnea-pallas --algos rnea,rnea_soa,rnea_pallas --robots ur5,panda,solo12,talos:fixed \
      --batches $B --peers frax,mjx --repeats 10
    bench 60 h100-jacobian-soa-scan --algos aba_jacobian,aba_jacobian_soa --robots panda --batches 131072 \
      --peers "" --repeats 10 --traversal scan
    # generic path unrolled: at batch 1 the scans cost 440-500 us against 204-214 us unrolled
    # ("latency", 2026-11-23): per-step while-loop overhead (launches; maybe a host sync for the
    # loop condition, not verified). Is "unroll" also faster in bulk?
    bench 60 h100-generic-unroll --algos aba,rnea --robots ur5,panda --batches 1,131072 --peers "" --repeats 20 --traversal unroll
    bench 150 h100-chains-long --algos aba,aba_soa,rnea,rnea_soa --robots chain128,chain1024 --batches 131072 \
      --peers mjx --repeats 10
    ;;
  part4b)  # the fused Jacobian (deviceless compile: panda 153 s); solo12 RNEA and at 2^20
    bash "$0" info | tee "$OUT/info.txt"
    bench 300 h100-jacobian-pallas --algos aba_jacobian,aba_jacobian_pallas --robots ur5,panda \
      --batches 131072 --peers frax --repeats 10
    bench 140 h100-solo12-b --algos rnea,rnea_soa,aba_soa --robots solo12 --batches $B --peers frax --repeats 10
    ;;
  part5)  # after part 4: the Jacobian from the inverse-dynamics identity, the fused CRBA, talos with
          # the GPU default (SoA by depth levels) and the fused RNEA, the long chains (MJX did not
          # compile chain128 within 145 s in part4a), float64
    bash "$0" info | tee "$OUT/info.txt"
    bench 150 h100-jacobian-identity --algos aba_jacobian,aba_jacobian_pallas --robots ur5,panda --batches 131072 \
      --peers frax --repeats 10
    bench 120 h100-crba-pallas --algos crba,crba_pallas --robots ur5,panda,solo12 --batches $B --peers frax,mjx --repeats 10
    bench 140 h100-talos-default --algos aba_soa,rnea_soa,rnea_pallas --robots talos:fixed --batches $B \
      --peers frax,mjx --repeats 10
    bench 60 h100-chains-jaxdyn --algos aba_soa,rnea_soa --robots chain128,chain1024 --batches 131072 --peers "" --repeats 10
    bench 80 h100-float64 --algos aba,aba_soa,rnea_soa --robots panda --batches 131072 --dtypes float64 \
      --peers frax,mjx --repeats 10
    ;;
  part6)  # the last 245 s of a 30-minute GPU budget: what part5's steps did not reach
    bench 90 h100-talos-rnea-pallas --algos rnea_pallas --robots talos:fixed --batches 131072 --peers mjx --repeats 10
    bench 50 h100-solo12-crba-pallas --algos crba_pallas --robots solo12 --batches 131072 --peers mjx --repeats 10
    ;;
  # part8, part7a and part9 (panda) ran on 2026-11-27 (results/h100-2026-11-27.md: 4, 3.5 and
  # 4 minutes on a warm H100); part10 at 1, 1024 and 16384 environments and part11 (6 and 3
  # minutes, NaN from the first epoch) on an H200 the same day
  # (results/gpu-2026-11-27-h200-envs-quadruped.md, docs/rl.md). On an H200 on 2026-11-28
  # (results/gpu-2026-11-28-h200.md): part10 at 64, 4096 and 16384 environments, part11 (5
  # minutes: finite, learned to walk), part9t without frax, part7b at 131072 without frax, part7c's
  # panda rows. On an H200 on 2026-11-30 (results/gpu-2026-11-30-h200-*.md): sim4, then part12,
  # part7e (its CRBA step with warps 0 and 4 only) and sim4's humanoid MJX row at 16384 from the
  # warm machine's compilation cache. Still to run, in order of value: part7d (talos launch
  # parameters), part7c's chains, the frax columns of part9t and part7b (carry frax's wheel).
  # Afterwards: python benchmarks/targets.py <the new JSONs> <the earlier ones> for the status.
  part7a)  # not yet run on a GPU: the looped fused kernels (kernels/pallas_scan.py, traversal
           # "scan"; deviceless compile ABA 8-12 s, RNEA 1-2 s, CRBA 1.5-2.2 s at any depth) against
           # the SoA scan and the peers on talos, with the generic path in the same process as the
           # correctness reference (column "rel. err vs generic")
    bash "$0" info | tee "$OUT/info.txt"
    bench 260 h100-looped-talos-aba --algos aba,aba_soa,aba_pallas --robots talos:fixed --batches $B \
      --peers frax,mjx --repeats 10 --traversal scan
    bench 200 h100-looped-talos-rnea --algos rnea,rnea_soa,rnea_pallas --robots talos:fixed --batches $B \
      --peers frax,mjx --repeats 10 --traversal scan
    ;;
  part7b)  # the looped CRBA on talos; solo12 looped (its unrolled ABA/CRBA compile 40 s / ?)
    bash "$0" info | tee "$OUT/info.txt"
    bench 200 h100-looped-talos-crba --algos crba,crba_soa,crba_pallas --robots talos:fixed --batches $B \
      --peers frax,mjx --repeats 10 --traversal scan
    bench 280 h100-looped-solo12 --algos aba,aba_pallas,rnea,rnea_pallas,crba,crba_pallas --robots solo12 \
      --batches $B --peers frax,mjx --repeats 10 --traversal scan
    ;;
  part7c)  # the looped kernels on the chains (MJX did not compile chain128 in 150 s: chain32 only)
           # and on panda (against the unrolled kernel: ABA 5.9e8 at 131k in part2)
    bash "$0" info | tee "$OUT/info.txt"
    bench 200 h100-looped-chain32 --algos aba,aba_pallas,rnea,rnea_pallas,crba,crba_pallas --robots chain32 \
      --batches 131072 --peers mjx --repeats 10 --traversal scan
    bench 150 h100-looped-chains --algos aba,aba_pallas,rnea,rnea_pallas --robots chain128,chain1024 \
      --batches 131072 --peers "" --repeats 10 --traversal scan
    bench 120 h100-looped-panda --algos aba,aba_pallas,rnea,rnea_pallas,crba,crba_pallas --robots panda \
      --batches $B --peers "" --repeats 10 --traversal scan
    ;;
  part7d)  # launch parameters of the looped kernels on talos (block x warps) against the generic path
    bash "$0" info | tee "$OUT/info.txt"
    echo "=== $(date +%T) pallas_tune talos"
    timeout 420 $PY benchmarks/pallas_tune.py --robots talos:fixed --algos aba,rnea,crba --warps 0,4,8 \
      --out "$W" 2>&1 \
      | grep --line-buffered -v "^WARNING" | tee "$W/log-tune-talos.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    ;;
  part7e)  # panda: loop against unrolled; the arms' unrolled CRBA launch parameters (10x MJX at 131k
           # missed: 7.5x / 8.6x with block 128)
    bash "$0" info | tee "$OUT/info.txt"
    echo "=== $(date +%T) pallas_tune panda: loop against unrolled"
    timeout 200 $PY benchmarks/pallas_tune.py --robots panda --algos aba,rnea --traversals scan,unroll \
      --blocks 128 --warps 0,4 --out "$W" 2>&1 | grep --line-buffered -v "^WARNING" | tee "$W/log-tune-panda.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    echo "=== $(date +%T) pallas_tune ur5/panda CRBA"
    timeout 250 $PY benchmarks/pallas_tune.py --robots ur5,panda --algos crba --traversals unroll \
      --blocks 64,128,256 --warps 0,2,4 --out "$W" 2>&1 | grep --line-buffered -v "^WARNING" | tee "$W/log-tune-crba.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    ;;
  part8)  # not yet run on a GPU: the SoA scans with each link step's outputs packed into one
          # array (jaxdyn.tree.Packed, now the GPU default). Deviceless H100 compile, kernels per link
          # step: talos ABA 56 -> 20, RNEA 18 -> 13, CRBA 30 -> 16, temporaries unchanged. The same-process
          # A/B first (packed against per-leaf outputs), then the harness rows for the targets.
    bash "$0" info | tee "$OUT/info.txt"
    echo "=== $(date +%T) pack_ab: packed against per-leaf scan outputs"
    timeout 180 $PY benchmarks/pack_ab.py --robots talos:fixed talos chain128 --algos aba,rnea,crba --batch 131072 \
      --rounds 2 --out "$W/pack-ab-talos.md" 2>&1 | grep --line-buffered -v "^WARNING" | tee "$W/log-pack-ab.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    bench 260 h100-packed-talos --algos aba,aba_soa,rnea_soa,crba_soa --robots talos:fixed --batches $B \
      --peers frax,mjx --repeats 10
    ;;
  part9)  # not yet run on a GPU: jaxdyn.aba_derivatives, the closed-form Jacobian of ABA
          # (world-frame subtree sums, masked dense products, CRBA + batched Cholesky for M^-1), against
          # jacfwd(aba), the SoA / Pallas Jacobians and frax's jacfwd. CPU: 5.8-11x jacfwd(aba).
    bash "$0" info | tee "$OUT/info.txt"
    bench 240 h100-derivatives --algos aba_jacobian,aba_jacobian_soa,aba_jacobian_pallas,aba_derivatives \
      --robots panda,talos:fixed --batches 131072 --peers frax --repeats 10
    ;;
  part10)  # the quadruped environment's steps/s against MJX on the same robot, contact geometry,
           # control and time step (benchmarks/envs_quadruped.py), compile time and peak memory;
           # NENVS (default 1 64 1024 4096 16384) and SECS (default 420) size it
    bash "$0" info | tee "$OUT/info.txt"
    echo "=== $(date +%T) envs_quadruped"
    timeout "${SECS:-420}" $PY benchmarks/envs_quadruped.py --n-envs ${NENVS:-1 64 1024 4096 16384} --steps 20 \
      --repeats 3 --out "$W/envs-quadruped.md" 2>&1 | grep --line-buffered -v "^WARNING" | tee "$W/log-envs.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    ;;
  part11)  # PPO (brax.training) on the quadruped for MINUTES of wall time (default 6; stops at the
           # first evaluation after it), the policy saved at every evaluation in $OUT/train (not packed:
           # it comes back even when the call is cut short); the curve and the GIF
           # are drawn afterwards on any machine (examples/train_quadruped.py --render DIR). Also
           # needs in .whl/: brax==0.14.2 jaxopt ml-collections (the machine has flax, optax, orbax)
    bash "$0" info | tee "$OUT/info.txt"
    echo "=== $(date +%T) train_quadruped: ${TIMESTEPS:=300000000} steps at most, ${MINUTES:=6} minutes"
    timeout $((MINUTES * 60 + 150)) $PY examples/train_quadruped.py --timesteps "$TIMESTEPS" --evals "${EVALS:-60}" \
      --minutes "$MINUTES" --no-render --out "$OUT/train" 2>&1 | grep --line-buffered -v "^WARNING" | tee "$OUT/log-train.txt"
    ;;
  part12)  # the unrolled fused CRBA's steps, body-frame inputs (shipped) against common-frame inputs as
           # every other CRBA executor (benchmarks/crba_frames_ab.py; deviceless: 1.6-2.8x the fp
           # instructions, results/gpu-aot-h100-crba-frames.md); about 2 minutes
    bash "$0" info | tee "$OUT/info.txt"
    echo "=== $(date +%T) crba_frames_ab"
    timeout 240 $PY benchmarks/crba_frames_ab.py --robots ur5 panda solo12 --batch 131072 --rounds 3 \
      --out "$W/crba-frames-ab.md" 2>&1 | grep --line-buffered -v "^WARNING" | tee "$W/log-crba-frames.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    ;;
  part9t)  # part9's talos rows (the 2026-11-27 run reached panda only)
    bash "$0" info | tee "$OUT/info.txt"
    bench 200 h100-derivatives-talos --algos aba_jacobian,aba_jacobian_soa,aba_derivatives \
      --robots talos:fixed --batches 131072 --peers frax --repeats 10
    ;;
  sim1|sim2)  # the simulation step's GPU rows (benchmarks/sim_step.py) against MJX as Playground
          # configures each scene, MJX with MuJoCo's defaults, and MJWarp. Two calls back to back
          # on one warm machine: warp's library (75 MB compressed) travels in two halves, sim1's
          # in .gpu1/ with mujoco's wheels and the scenes' XML (the playground and dm_control
          # files, no code), sim2's in .gpu2/ with mujoco_warp; sim1 stashes its half in /tmp
    export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX and warp share the device's memory
    if [ "$PART" = sim1 ]; then
      mkdir -p /tmp/stash /tmp/site && cp .gpu1/warpzst.part.aa /tmp/stash/ || exit 1
      $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .gpu1/*.whl && cp -r .gpu1/site/* /tmp/site/ || exit 1
      export PYTHONPATH=/tmp/site:$PWD
      bash "$0" info | tee "$OUT/info.txt"
      $PY -c "import mujoco; from mujoco import mjx; print('mujoco', mujoco.__version__)"
      simstep 110 gpu-feet --scenes go1_feet --batches 1024,4096,16384 --peers mjx
      simstep 50 gpu-feet-default --scenes go1_feet --batches 4096 --peers mjx_default --no-jaxdyn
      simstep 80 gpu-humanoid --scenes humanoid --batches 4096,16384 --peers mjx
    else
      [ -f /tmp/stash/warpzst.part.aa ] && [ -d /tmp/site/mujoco ] || { echo "sim1's files are gone"; exit 1; }
      cat /tmp/stash/warpzst.part.aa .gpu2/warpzst.part.ab > /tmp/warp.so.zst
      [ "$(sha256sum /tmp/warp.so.zst | cut -c1-64)" = "$(cat .gpu2/warp.so.zst.sha256)" ] || { echo "bad warp.so"; exit 1; }
      tar xzf .gpu2/warp_py.tgz -C /tmp/site || exit 1
      if command -v zstd >/dev/null; then zstd -d -q -f /tmp/warp.so.zst -o /tmp/site/warp/bin/warp.so || exit 1
      else  # no zstd on the machine: the zstandard wheel beside it
        $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/zs .gpu2/zstandard-*.whl || exit 1
        PYTHONPATH=/tmp/zs $PY -c "import zstandard as z; z.ZstdDecompressor(max_window_size=2**31).copy_stream(
open('/tmp/warp.so.zst','rb'), open('/tmp/site/warp/bin/warp.so','wb'))" || exit 1
      fi
      $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .gpu2/mujoco_warp-*.whl && tar xzf .gpu2/mjx.tgz -C /tmp/site || exit 1
      export PYTHONPATH=/tmp/site:$PWD
      $PY -c "import warp, mujoco_warp; warp.init(); print('warp', warp.__version__, warp.get_cuda_devices())"
      simstep 150 gpu-mjwarp --scenes go1_feet,humanoid --batches 1024,4096,16384 --peers mjwarp --no-jaxdyn
      simstep 70 gpu-feet-mjx --scenes go1_feet --batches 4096,16384 --peers mjx --no-jaxdyn
      simstep 70 gpu-humanoid-mjx --scenes humanoid --batches 4096,16384 --peers mjx --no-jaxdyn
      simstep 120 gpu-full --scenes go1_full --batches 4096 --peers mjx,mjwarp
    fi
    ;;
  sim4)  # the simulation step's GPU rows after the 2026-11-29/30 contact changes, in one call: the
          # peers' wheels and the scenes' XML in .gpu/ (benchmarks/README.md, "On a GPU"; MJWarp's
          # 300 MB library does not travel with them). Compiles are the cost (jaxdyn's Go1 step
          # took 75-80 s on 2026-11-28), so every program is first compiled in parallel, one process
          # per row, into a persistent compilation cache (their compile times are the record's,
          # taken with the other processes compiling beside them); the rows are then timed one
          # process at a time, in order of value, reading the cache
    peers_site
    T0=$(date +%s)
    $PY -c "import mujoco; from mujoco import mjx; print('mujoco', mujoco.__version__)" || exit 1
    mkdir -p "$W/warm"
    echo "=== $(date +%T) compiling every row in parallel"
    for job in "go1_feet 4096 jaxdyn" "go1_feet 16384 jaxdyn" "humanoid 4096 jaxdyn" "humanoid 16384 jaxdyn" \
        "go1_full 4096 jaxdyn" "go1_feet 1024 jaxdyn" "humanoid 1024 jaxdyn" "go1_full 16384 jaxdyn" \
        "go1_full 1024 jaxdyn" "go1_feet 4096 mjx" "go1_feet 16384 mjx" "humanoid 4096 mjx" "humanoid 16384 mjx" \
        "go1_full 4096 mjx" "go1_feet 1024 mjx" "humanoid 1024 mjx" "go1_full 16384 mjx" "go1_full 1024 mjx" \
        "go1_feet 4096 mjx_default" "humanoid 4096 mjx_default" "go1_full 4096 mjx_default"; do
      set -- $job
      if [ "$3" = jaxdyn ]; then who=--peers=; else who="--peers=$3 --no-jaxdyn"; fi
      # shellcheck disable=SC2086
      timeout "${WARM_SECS:-300}" $PY benchmarks/sim_step.py --out "$W/warm" --tag="-warm-$1-$2-$3" --repeats 1 \
        --steps 100 --scenes "$1" --batches "$2" $who >"$W/warm/log-$1-$2-$3.txt" 2>&1 &
    done
    wait
    echo "=== $(date +%T) compiled ($(( $(date +%s) - T0 )) s since the start)"
    grep -h "compile" "$W"/warm/log-*.txt | tee "$W/log-warm.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    simstep 60 gpu-feet --scenes go1_feet --batches 4096,16384 --peers mjx
    simstep 50 gpu-humanoid --scenes humanoid --batches 4096,16384 --peers mjx
    simstep 50 gpu-full --scenes go1_full --batches 4096 --peers mjx
    simstep 50 gpu-default --scenes go1_feet,humanoid,go1_full --batches 4096 --peers mjx_default --no-jaxdyn
    simstep 60 gpu-1024 --scenes go1_feet,humanoid,go1_full --batches 1024 --peers mjx
    simstep 50 gpu-full-16k --scenes go1_full --batches 16384 --peers mjx
    LEFT=$(( ${DEADLINE:-560} - $(date +%s) + T0 ))
    echo "=== $(date +%T) $LEFT s left for part12"
    if [ "$LEFT" -gt 100 ]; then
      timeout "$LEFT" $PY benchmarks/crba_frames_ab.py --robots ur5 panda solo12 --batch 131072 --rounds 3 \
        --out "$W/crba-frames-ab.md" 2>&1 | grep --line-buffered -v "^WARNING" | tee "$W/log-crba-frames.txt"
      tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    fi
    ;;
  sim5)  # the A/B of the small dense algebra on a GPU (jaxdyn.planner.dense), as sim4 (wheels and XML in
          # .gpu/ from benchmarks/gpu_wheels.sh, parallel compiles into a persistent cache, then
          # one process at a time): jaxdyn's default (the library's factorisations and one matrix
          # product for the contact rows' congruence; deviceless H200 compile of the humanoid at
          # 16,384 envs: 1,099 MiB of program against 5,696, 113 loop trips per step against 383),
          # the CPU's executor (dense=elementwise: the step measured by sim4 on 2026-11-30), the
          # link traversals unrolled too, and MJX as Playground configures it
    peers_site
    T0=$(date +%s)
    mkdir -p "$W/warm"
    echo "=== $(date +%T) compiling every row in parallel"
    for scene in go1_feet humanoid go1_full; do for b in 4096 16384; do
      for v in default dense=elementwise traversal=unroll mjx; do
        case $v in default) who="--peers=";; mjx) who="--peers=mjx --no-jaxdyn";; *) who="--peers= --executor=$v";; esac
        # shellcheck disable=SC2086
        timeout "${WARM_SECS:-240}" $PY benchmarks/sim_step.py --out "$W/warm" --tag="-warm-$scene-$b-${v//=/-}" \
          --repeats 1 --steps 100 --scenes $scene --batches $b $who >"$W/warm/log-$scene-$b-${v//=/-}.txt" 2>&1 &
      done
    done; done
    wait
    echo "=== $(date +%T) compiled ($(( $(date +%s) - T0 )) s since the start)"
    grep -h "compile" "$W"/warm/log-*.txt | tee "$W/log-warm.txt"
    tar czf "$OUT/results-${PART}.tgz" -C "$W" .
    simstep 90 gpu-dense-library --scenes go1_feet,humanoid,go1_full --batches 4096,16384 --peers mjx
    simstep 70 gpu-dense-elementwise --scenes go1_feet,humanoid,go1_full --batches 4096,16384 --peers= \
      --executor dense=elementwise
    simstep 70 gpu-unroll --scenes go1_feet,humanoid,go1_full --batches 4096,16384 --peers= --executor traversal=unroll
    ;;
  sim3)  # on sim2's machine: MJX (it needs trimesh, in .gpu2/) and the rows sim1 and sim2 did not reach
    export XLA_PYTHON_CLIENT_PREALLOCATE=false
    [ -d /tmp/site/mujoco_warp ] || { echo "sim2's files are gone"; exit 1; }
    $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu2/trimesh-*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
    simstep 80 gpu-feet-mjx --scenes go1_feet --batches 4096,16384 --peers mjx --no-jaxdyn
    simstep 60 gpu-humanoid-mjx --scenes humanoid --batches 4096,16384 --peers mjx --no-jaxdyn
    simstep 45 gpu-feet-default --scenes go1_feet --batches 4096 --peers mjx_default --no-jaxdyn
    simstep 50 gpu-full-mjwarp --scenes go1_full --batches 4096,16384 --peers mjwarp --no-jaxdyn
    simstep 90 gpu-feet-jaxdyn --scenes go1_feet --batches 16384 --peers ""
    ;;
  *) echo "unknown part $1"; exit 2 ;;
esac
echo "=== $(date +%T) done"
