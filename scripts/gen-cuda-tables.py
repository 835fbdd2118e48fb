#!/usr/bin/env python3
# gen-cuda-tables.py -- generate src/cuda_entries.h, the one table of CUDA driver entry points.
#
# Inputs:
#   src/cuda_exports.txt       the names NVIDIA's libcuda 13.0 exports (one per line)
#   <cuda>/include/*Typedefs.h the PFN_<name>_v<version>[_ptds|_ptsz] typedefs
#   tests/unit/data/cudart-13.0-procaddress-requests.tsv (optional, --requests): every
#                              cuGetProcAddress_v2 request cudart 13.0 makes
#
# The rule (docs/cuda-abi.md): list a base name's PFN typedefs without a _ptds/_ptsz suffix in
# ascending version; the k-th is exported as <name> for k = 1 and <name>_v<k> otherwise. A
# PFN_<name>_v<V>_ptds (or _ptsz) typedef is the per-thread-default-stream twin of the newest
# ABI with version <= V and is exported as that ABI's name + "_ptds" (or "_ptsz").
#
# The script checks the rule against every exported name and every request row and fails
# when something is unexplained. Names the rule predicts from the interop headers (GL, EGL,
# VDPAU) are not exported by libcuda 13.0 but cudart asks for them; they go into the table
# with exported = 0 (see docs/cuda-abi.md). Windows-only names are left out.
#
# Usage: scripts/gen-cuda-tables.py [--cuda-include DIR] [--exports FILE] [--requests FILE]
#                                   [--output FILE] [--check]
# --check compares with the existing output instead of writing it (exit 1 when different).

import argparse
import collections
import csv
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Headers in the order their typedefs are read. Only cudaTypedefs.h describes cuda.h itself;
# the others describe the graphics-interop headers.
CORE_HEADER = "cudaTypedefs.h"
INTEROP_HEADERS = ["cudaGLTypedefs.h", "cudaEGLTypedefs.h", "cudaVDPAUTypedefs.h",
                   "cudaProfilerTypedefs.h"]
# Present in cudaGLTypedefs.h but only built on Windows.
WINDOWS_ONLY = {"cuWGLGetDevice"}

PFN = re.compile(r"\bPFN_([A-Za-z][A-Za-z0-9]*)_v([0-9]+)(?:_(ptds|ptsz))?\b")


def read_typedefs(path):
    """Returns {base: set(versions)} and {base: set((version, 'ptds'|'ptsz'))}."""
    legacy = collections.defaultdict(set)
    per_thread = collections.defaultdict(set)
    with open(path) as f:
        for line in f:
            if "typedef" not in line:
                continue
            for m in PFN.finditer(line):
                base, ver, kind = m.group(1), int(m.group(2)), m.group(3)
                if kind:
                    per_thread[base].add((ver, kind))
                else:
                    legacy[base].add(ver)
    return legacy, per_thread


def exported_name(base, k):
    return base if k == 1 else "%s_v%d" % (base, k)


def predict(legacy, per_thread, origin):
    """Applies the rule. Returns {symbol: entry dict}."""
    out = {}
    for base, vers in legacy.items():
        for k, ver in enumerate(sorted(vers), 1):
            sym = exported_name(base, k)
            out[sym] = dict(sym=sym, base=base, ver=ver, kind=None, legacy=sym, origin=origin)
    for base, variants in per_thread.items():
        vers = sorted(legacy.get(base, ()))
        for ver, kind in sorted(variants):
            older = [v for v in vers if v <= ver]
            if not older:
                sys.exit("gen-cuda-tables: PFN_%s_v%d_%s has no ABI it could be the twin of"
                         % (base, ver, kind))
            leg = exported_name(base, vers.index(older[-1]) + 1)
            sym = "%s_%s" % (leg, kind)
            out[sym] = dict(sym=sym, base=base, ver=ver, kind=kind, legacy=leg, origin=origin)
    return out


def resolve(entries, base, ver, flags):
    """The resolution rule, as procaddr.c implements it; None when not found."""
    cands = [e for e in entries.values() if e["base"] == base]
    legacy = [e for e in cands if e["kind"] is None and e["ver"] <= ver]
    if not legacy:
        return None
    best = max(legacy, key=lambda e: e["ver"])
    if flags & 2:
        twins = [e for e in cands if e["kind"] and e["legacy"] == best["sym"] and e["ver"] <= ver]
        if twins:
            return max(twins, key=lambda e: e["ver"])["sym"]
    return best["sym"]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cuda-include", default=os.environ.get("CUDA_HOME", "/usr/local/cuda")
                    + "/include")
    ap.add_argument("--exports", default=os.path.join(ROOT, "src/cuda_exports.txt"))
    ap.add_argument("--requests", default=os.path.join(
        ROOT, "tests/unit/data/cudart-13.0-procaddress-requests.tsv"))
    ap.add_argument("--output", default=os.path.join(ROOT, "src/cuda_entries.h"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    with open(args.exports) as f:
        exports = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    if len(set(exports)) != len(exports):
        sys.exit("gen-cuda-tables: duplicate names in %s" % args.exports)
    exports = set(exports)

    core = predict(*read_typedefs(os.path.join(args.cuda_include, CORE_HEADER)), "core")
    interop = {}
    for h in INTEROP_HEADERS:
        interop.update(predict(*read_typedefs(os.path.join(args.cuda_include, h)), h))

    notes = []
    unexplained = sorted(exports - set(core) - set(interop))
    if unexplained:
        sys.exit("gen-cuda-tables: exported names the rule does not explain: %s"
                 % ", ".join(unexplained))
    core_missing = sorted(set(core) - exports)
    if core_missing:
        sys.exit("gen-cuda-tables: cudaTypedefs.h names that libcuda does not export: %s"
                 % ", ".join(core_missing))

    entries = {}
    for sym, e in list(core.items()) + list(interop.items()):
        if e["base"] in WINDOWS_ONLY:
            continue
        e["exported"] = 1 if sym in exports else 0
        entries[sym] = e
    hidden = sorted(s for s, e in entries.items() if not e["exported"])
    if hidden:
        notes.append("%d names from the interop headers are not exported (kept resolvable): %s"
                     % (len(hidden), " ".join(hidden)))

    if args.requests and os.path.exists(args.requests):
        with open(args.requests) as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        bad = []
        for r in rows:
            got = resolve(entries, r["base"], int(r["version"]), int(r["flags"]))
            if got != r["exported_symbol"]:
                bad.append("%s %s %s -> %s, expected %s" % (r["base"], r["version"], r["flags"],
                                                           got, r["exported_symbol"]))
        if bad:
            sys.exit("gen-cuda-tables: requests the rule gets wrong:\n  " + "\n  ".join(bad))
        asked_hidden = sorted({r["exported_symbol"] for r in rows
                               if not entries[r["exported_symbol"]]["exported"]})
        notes.append("%d request rows checked; %d of them name symbols libcuda 13.0 does not "
                     "export: %s" % (len(rows), len(asked_hidden), " ".join(asked_hidden)))

    ordered = sorted(entries.values(),
                     key=lambda e: (e["base"], e["kind"] is not None, e["ver"], e["sym"]))
    kinds = {None: "GP_CUDA_LEGACY", "ptds": "GP_CUDA_PTDS", "ptsz": "GP_CUDA_PTSZ"}
    nexp = sum(e["exported"] for e in ordered)
    lines = [
        "/* cuda_entries.h -- GENERATED by scripts/gen-cuda-tables.py; do not edit. */",
        "/*",
        " * Every CUDA driver entry point gpupool knows, from src/cuda_exports.txt and the",
        " * PFN_* typedefs of the CUDA 13.0 toolkit's *Typedefs.h (docs/cuda-abi.md).",
        " *",
        " * GP_CUDA_ENTRIES(X) calls X(sym, base, version, kind, legacy, exported) once per entry:",
        " *   sym      the symbol (cuMemAlloc_v2, cuMemcpyHtoD_v2_ptds)",
        " *   base     the name cuGetProcAddress is asked for (cuMemAlloc)",
        " *   version  the CUDA version that introduced this ABI (for a _ptds/_ptsz entry: the",
        " *            version of its per-thread typedef)",
        " *   kind     GP_CUDA_LEGACY, GP_CUDA_PTDS or GP_CUDA_PTSZ (cuda_table.h)",
        " *   legacy   for a _ptds/_ptsz entry the symbol it is the per-thread twin of; else sym",
        " *   exported 1 when NVIDIA's libcuda 13.0 exports it, 0 for interop names that cudart",
        " *            resolves through cuGetProcAddress but that are not exported",
        " * Entries are sorted by base (strcmp order), legacy ABIs first by version, then twins.",
        " *",
        " * cuda.h #defines many plain names to versioned ones (cuMemAlloc -> cuMemAlloc_v2). In",
        " * a file that includes cuda.h, use sym, base and legacy only with # directly inside X.",
        " */",
        "#ifndef GP_CUDA_ENTRIES_H",
        "#define GP_CUDA_ENTRIES_H",
        "",
        "#define GP_CUDA_NENTRIES %d" % len(ordered),
        "#define GP_CUDA_NEXPORTS %d" % nexp,
        "",
        "/* clang-format off */",
        "#define GP_CUDA_ENTRIES(X) \\",
    ]
    for e in ordered:
        lines.append("\tX(%s, %s, %d, %s, %s, %d) \\" % (e["sym"], e["base"], e["ver"],
                                                     kinds[e["kind"]], e["legacy"],
                                                     e["exported"]))
    lines += ["\t/* end */", "/* clang-format on */", "", "#endif", ""]
    text = "\n".join(lines)

    for n in notes:
        print("gen-cuda-tables: " + n, file=sys.stderr)
    if args.check:
        with open(args.output) as f:
            if f.read() != text:
                sys.exit("gen-cuda-tables: %s is out of date; run scripts/gen-cuda-tables.py"
                         % args.output)
        return
    with open(args.output, "w") as f:
        f.write(text)
    print("gen-cuda-tables: wrote %s: %d entries, %d exported" % (args.output, len(ordered), nexp),
          file=sys.stderr)


if __name__ == "__main__":
    main()
