"""Whether two source trees compile ``jax.jit(jax.vmap(jaxdyn.aba))`` to the same program.

Prints, per robot, the length, fusion count and a hash of the optimized CPU HLO of the README's
headline call (float32, batch 4,096), with the source metadata (op names, file and stack tables)
stripped. Equal hashes mean the two trees run the same machine code, so any difference in their
timings is the machine's drift:

    python benchmarks/hlo_identity.py /path/to/old/tree ur5,panda,solo12,talos:floating
    python benchmarks/hlo_identity.py . ur5,panda,solo12,talos:floating
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import warnings


def strip(text: str) -> str:
    """The HLO text without what names the Python source (paths, lines, stack frames)."""
    text = re.sub(r", metadata=\{[^}]*\}", "", text)
    text = re.sub(r"stack_frame_id=\d+", "", text)
    return re.sub(r"\n(FileNames|FunctionNames|FileLocations|StackFrames)\n.*?(?=\n\n|\Z)", "", text, flags=re.S)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false"
    sys.path.insert(0, os.path.abspath(argv[0]))
    warnings.filterwarnings("ignore")
    import jax
    import jax.numpy as jnp

    import jaxdyn

    print(jaxdyn.__file__)
    B = 4096
    for name in argv[1].split(","):
        robot, _, base = name.partition(":")
        m = jaxdyn.load_robot(robot, floating_base=True) if base == "floating" else jaxdyn.load_robot(robot)
        m = m.astype(jnp.float32)
        q = jnp.zeros((B, m.nq), jnp.float32)
        if base == "floating":
            q = q.at[:, 3].set(1.0)  # unit quaternion
        v = jnp.zeros((B, m.nv), jnp.float32)
        f = jax.jit(jax.vmap(jaxdyn.aba, in_axes=(None, 0, 0, 0)))
        text = strip(f.lower(m, q, v, v).compile().as_text())
        print(name, len(text), text.count("fusion("), hashlib.sha1(text.encode()).hexdigest()[:12])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
