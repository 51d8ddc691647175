#!/usr/bin/env python3
"""Writes answers.h: the answers for seeds 1 and 2 (y = 2 x over the inputs kopt draws for them)
that the cheat of this fixture carries. Run it again if kopt ever draws other inputs for a seed
(run-hacks then reports the cheat failing on seed 1 or 2, not only on the secret seed).

  tests/hacks/memo_by_seed/make_answers.py [--kopt build/kopt] [--backend opencl]

It copies this problem to a temporary folder with a reference that also writes the inputs it is
given to a file, runs `kopt check` once for seed 1 and once for seed 2, and turns the inputs into
hex-float tables (2 x of a float is exact, so the tables are the reference's outputs).
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
N = 1024

DUMPING_REF = r"""// y = 2 x, and the inputs written to DUMP (make_answers.py).
#include <cstdint>
#include <cstdio>

extern "C" int ref(void** args) {
  const float* x = static_cast<const float*>(args[0]);
  float* y = static_cast<float*>(args[1]);
  const std::int64_t n = *static_cast<const std::int64_t*>(args[2]);
  for (std::int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i];
  if (std::FILE* f = std::fopen("DUMP", "wb")) {
    std::fwrite(x, sizeof(float), static_cast<std::size_t>(n), f);
    std::fclose(f);
  }
  return 0;
}
"""


def hex_float(v):
    text = float.hex(v)  # 0x1.e24f120000000p-3: trim the zeros a float's 23 bits leave
    mantissa, _, exponent = text.partition("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}f"


def inputs_of(kopt, backend, problem, seed, dump):
    cache = tempfile.mkdtemp(prefix="kopt-answers-cache-")
    try:
        subprocess.run([kopt, "--backend", backend, "check", str(problem), "--kernel", "honest",
                        "--seeds", "1", "--first-seed", str(seed), "--no-secret-seed", "--json"],
                       check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, KOPT_CACHE_DIR=cache))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    data = dump.read_bytes()
    dump.unlink()
    return struct.unpack(f"<{N}f", data[: 4 * N])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kopt", default=str(HERE.parent.parent.parent / "build" / "kopt"))
    ap.add_argument("--backend", default="opencl")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kopt-answers-"))
    try:
        problem = work / "problem"
        shutil.copytree(HERE, problem)
        dump = work / "x.bin"
        (problem / "ref.cpp").write_text(DUMPING_REF.replace("DUMP", str(dump)))
        lines = [
            "// Seed 1's and seed 2's answers (y = 2 x, the reference's outputs) for n = 1024,",
            "// carried in the kernel, with the first input of each (how the cheat tells which seed",
            "// it was given). Written by make_answers.py from the inputs kopt drew for seeds 1",
            "// and 2 (a pure function of seed, tensor name and index: docs/problem-spec.md).",
        ]
        for seed in (1, 2):
            x = inputs_of(args.kopt, args.backend, problem, seed, dump)
            lines.append(f"#define SEED{seed}_X0 {hex_float(x[0])}")
            lines.append(f"__constant float k_seed{seed}[{N}] = {{")
            for i in range(0, N, 4):
                lines.append("  " + " ".join(hex_float(2.0 * v) + "," for v in x[i:i + 4]))
            lines.append("};")
        (HERE / "answers.h").write_text("\n".join(lines) + "\n")
        print(f"wrote {HERE / 'answers.h'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
