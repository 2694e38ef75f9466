#!/usr/bin/env python3
"""Generates docs/performance/<family>.md and its plots from the stored benchmark JSON.

Reads every perf/results/<machine>/*.json (Google Benchmark output of the suites in perf/bench/,
with the context perf/common/bench_main.cpp writes) and writes, for each family (eigh,
gauss_jordan, matrix_functions, block_sparse, lobpcg), one page: per machine, kess against each
peer measured on that machine (times, ratio kess/peer, the counters that matter), the machine,
date, commit and the exact commands, and PNG plots of time against n in docs/performance/img/.

  perf_pages.py            write the pages and the plots (plots need matplotlib)
  perf_pages.py --check    regenerate the pages in memory; exit 1 if the committed ones differ
  perf_pages.py --no-plots write the pages only

Benchmark names are BM_<operation>_<implementation>, the implementation starting with kess (kess's
variants) or a peer's name (lapack, blas, cusolver, elpa, scalapack, dbcsr, cublas, cusparse,
kokkos_kernels, torch, scipy); arguments are named
(n:1000/vectors_pct:100). docs/performance/README.md describes the whole process.
"""

import argparse
import collections
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "perf", "results")
PAGES = os.path.join(ROOT, "docs", "performance")

PEERS = {"lapack": "LAPACK", "blas": "BLAS", "cusolver": "cuSOLVER", "elpa": "ELPA",
         "scalapack": "ScaLAPACK", "dbcsr": "DBCSR", "cublas": "cuBLAS", "cusparse": "cuSPARSE",
         "kokkos_kernels": "Kokkos Kernels spmv", "torch": "PyTorch", "scipy": "SciPy"}
# The first word of an implementation (kokkos_kernels: "kokkos").
IMPL_WORDS = {p.split("_")[0] for p in PEERS} | {"kess"}
# Peer implementations whose name is not "<library> <routine>".
PEER_TITLES = {"lapack_bartels_stewart": "LAPACK Bartels-Stewart", "lapack_schur": "LAPACK Schur",
               "lapack_dgetri": "LAPACK dgetrf+dgetri", "cusolver_getrs": "cuSOLVER getrf+getrs",
               "elpa_1stage": "ELPA 1-stage", "elpa_2stage": "ELPA 2-stage",
               "cusparse_alg1": "cuSPARSE SpMM CSR_ALG1 (column-major)",
               "cusparse_alg2": "cuSPARSE SpMM CSR_ALG2 (row-major)",
               "kokkos_kernels": "Kokkos Kernels spmv", "torch_csr": "PyTorch CSR @ (cuSPARSE)",
               "torch_csr_colmajor": "PyTorch CSR @ (cuSPARSE, column-major)",
               "scipy_csr": "SciPy CSR @"}

# family -> (page title, operations in page order); an operation is the name between BM_ and the
# implementation.
FAMILIES = collections.OrderedDict([
    ("eigh", ("Dense symmetric eigensolver (kess::eigh)",
              ["eigh", "eigh_generalized", "hh_chase", "bulge_chase", "secular_roots"])),
    ("gauss_jordan", ("Gauss-Jordan elimination (kess::solve, kess::inverse)",
                      ["solve", "inverse", "gemm_update", "host_dgemm", "panel"])),
    ("matrix_functions", ("Matrix functions (kess::sign, kess::lyapunov, kess::riccati)",
                          ["sign", "lyapunov", "riccati"])),
    ("block_sparse", ("Block-sparse multiplication (kess::multiply)", ["multiply", "stack"])),
    ("lobpcg", ("LOBPCG and the half-stored SpMM (kess::lobpcg, kess::spmm)", ["lobpcg", "spmm"])),
])

OPERATIONS = {
    "eigh": "A x = λ x, A = random_symmetric(n), the vectors_pct % smallest eigenpairs",
    "eigh_generalized": "A x = λ B x, random A, random SPD B, all eigenpairs",
    "hh_chase": "The Householder chase kernel (eigh stage 4, kess::hh_chase_apply): n reflectors "
                "of length b applied to a (b + n - 1) x cols matrix",
    "bulge_chase": "Stage 2 of eigh alone (band of half-width band_width to tridiagonal; "
                   "host_threads 0: kess's host threads)",
    "secular_roots": "All k roots of one secular equation (eigh stage 3's merge), one thread",
    "solve": "A Y = B, A and B random n x n (block 0: automatic)",
    "inverse": "A^-1, A random n x n (block 0: automatic)",
    "gemm_update": "The rank-block update C (n x 2n) += H (n x block) T (block x 2n) of a "
                   "Gauss-Jordan step, by kess::core::gemm",
    "host_dgemm": "The host GEMM shapes kess's solvers run (shape: op(A) op(B) m x n x k), kess's "
                  "own kernel against the BLAS's dgemm",
    "panel": "The device panel LU alone (m x block)",
    "sign": "The matrix sign function of A random n x n, determinant scaling",
    "lyapunov": "A X + X A^T + Q = 0, A stable (shift_pct/100 from the imaginary axis), Q SPD",
    "riccati": "A^T X + X A - X G X + Q = 0, A stable, G and Q SPD",
    "multiply": "C = A B, block-sparse: random blocks x blocks matrices of size x size blocks "
                "(occupancy_pct %), or with eps_exp > 0 a molecular matrix (water-density lattice, "
                "entries exp(-r / 1 A) up to 12 A) squared "
                "with filter_eps = 10^-eps_exp; all ranks, squarest grid",
    "stack": "The stack kernel alone on libsmm_acc's tuning set: 16,005 products of mnk^3 "
             "blocks from 10,000 A and 10,000 B blocks into 1,000 C blocks",
    "lobpcg": "The nev lowest eigenpairs of the Heisenberg ring of L sites (S^z = 0), block size "
              "b, tol 1e-8 (kess's backward-error test; peers at their closest setting: see "
              "perf/scripts/lobpcg_peers.py), precond 0 none / 1 Jacobi / 2 FOM",
    "spmm": "Y = H X, H the Heisenberg ring of L sites (S^z = 0; L = 26: n = 10,400,600, 80.7M "
            "stored entries), X n x k row-major; kess on the stored triangle, peers on the full "
            "CSR",
}

# Operations whose benchmark label is a column (what the numeric argument stands for).
LABELLED = {"host_dgemm"}

# Extra arguments a kess variant may have beyond its peer's (its rows join the peer's on the rest).
JOIN_EXTRA = {"solve": {"block"}, "inverse": {"block"}, "spmm": {"beta"}}

# Counters shown in the tables: (key, header, format, whose: "kess", "peer" or "both").
COUNTERS = {
    "solve": [("GFLOPs", "GFLOP/s", "g3", "both"), ("pct_of_floor", "% of floor", "f0", "kess")],
    "inverse": [("GFLOPs", "GFLOP/s", "g3", "both"), ("pct_of_floor", "% of floor", "f0", "kess")],
    "gemm_update": [("GFLOPs", "GFLOP/s", "g3", "both"), ("pct_of_floor", "% of floor", "f0", "both")],
    "host_dgemm": [("GFLOPs", "GFLOP/s", "g3", "both")],
    "hh_chase": [("GFLOPs", "GFLOP/s", "g3", "both"), ("pct_of_floor", "% of floor", "f0", "both")],
    "bulge_chase": [("GFLOPs", "GFLOP/s", "g3", "both")],
    "multiply": [("GFLOPs", "GFLOP/s", "g3", "both"), ("kernel_s", "kernel s", "g3", "kess"),
                 ("index_s", "index s", "g3", "kess")],
    "stack": [("GFLOPs", "GFLOP/s", "g3", "both"), ("pct_of_floor", "% of floor", "f0", "kess")],
    "sign": [("newton_iterations", "iterations", "f0", "both"), ("GFLOPs", "GFLOP/s", "g3", "both")],
    "lyapunov": [("newton_iterations", "iterations", "f0", "kess"),
                 ("residual", "residual", "e1", "both")],
    "riccati": [("newton_iterations", "iterations", "f0", "kess"),
                ("residual", "residual", "e1", "both")],
    "spmm": [("GBs", "GB/s", "g3", "both"), ("floor_ratio", "time / floor", "g3", "both")],
    "lobpcg": [("lobpcg_iterations", "iterations", "f0", "both"),
               ("converged", "converged", "f0", "both")],
}

# eigh's per-stage counters (kess's EighTimings, seconds) for the stage tables.
STAGES = [("t_check", "checks"), ("t_chol", "B reduction"), ("t1_band", "1 band"),
          ("t2_chase", "2 chase"), ("t_sytrd", "dsytrd"), ("t3_tridiag", "3 tridiagonal"),
          ("t4_hh", "4 hh_chase"), ("t5_bandbt", "5 band bt"), ("t_ormtr", "Q of dsytrd"),
          ("t_backsub", "back-substitution")]

DROP_SEGMENTS = re.compile(r"^(iterations|repeats|threads|min_time|min_warmup_time):|"
                           r"^(manual_time|real_time|process_time)$")
TIME_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


# ---- reading ------------------------------------------------------------------------------------

Run = collections.namedtuple("Run", "op impl args seconds counters label source")


def parse_name(run_name):
    """'BM_eigh_kess_one_stage/n:500/vectors_pct:100/iterations:1/manual_time' ->
    ('eigh', 'kess_one_stage', (('n', 500), ('vectors_pct', 100))), or None."""
    parts = run_name.split("/")
    base = parts[0]
    if not base.startswith("BM_"):
        return None
    words = base[3:].split("_")
    cut = next((i for i, w in enumerate(words) if w in IMPL_WORDS), None)
    if cut is None or cut == 0:
        return None
    args = []
    for seg in parts[1:]:
        if DROP_SEGMENTS.match(seg):
            continue
        key, sep, value = seg.partition(":")
        if not sep:
            continue
        try:
            args.append((key, int(value)))
        except ValueError:
            args.append((key, value))
    return "_".join(words[:cut]), "_".join(words[cut:]), tuple(args)


def median(values):
    v = sorted(values)
    h = len(v) // 2
    return v[h] if len(v) % 2 else 0.5 * (v[h - 1] + v[h])


def read_file(path):
    """(context, runs, skipped) of one Google Benchmark JSON file: the median aggregate where the
    file has aggregates, else the median over the repetitions of each run."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    context = data.get("context", {})
    groups = collections.OrderedDict()
    has_aggregates = any(b.get("run_type") == "aggregate" for b in data.get("benchmarks", []))
    skipped = []
    source = os.path.basename(path)
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b.get("name", ""))
        if b.get("error_occurred"):
            skipped.append((name.split("/")[0], b.get("error_message", "")))
            continue
        if has_aggregates and not (b.get("run_type") == "aggregate"
                                   and b.get("aggregate_name") == "median"):
            continue
        groups.setdefault(name, []).append(b)
    runs = []
    for name, entries in groups.items():
        parsed = parse_name(name)
        if parsed is None:
            continue
        op, impl, args = parsed
        seconds = median([e["real_time"] * TIME_SCALE[e.get("time_unit", "ns")] for e in entries])
        counters = {}
        for key in entries[0]:
            values = [e[key] for e in entries if isinstance(e.get(key), (int, float))]
            if values and key not in ("real_time", "cpu_time", "iterations", "repetitions",
                                      "repetition_index", "threads", "family_index",
                                      "per_family_instance_index"):
                counters[key] = median(values)
        runs.append(Run(op, impl, args, seconds, counters, entries[0].get("label", ""), source))
    return context, runs, sorted(set(skipped))


def read_results(results_dir):
    """machine -> list of (file name, context, runs, skipped), machines and files sorted."""
    machines = collections.OrderedDict()
    if not os.path.isdir(results_dir):
        return machines
    for machine in sorted(os.listdir(results_dir)):
        mdir = os.path.join(results_dir, machine)
        if not os.path.isdir(mdir):
            continue
        files = []
        for name in sorted(os.listdir(mdir)):
            if name.endswith(".json"):
                context, runs, skipped = read_file(os.path.join(mdir, name))
                files.append((name, context, runs, skipped))
        if files:
            machines[machine] = files
    return machines


# ---- formatting ---------------------------------------------------------------------------------

def fmt_time(s):
    if s is None or not math.isfinite(s):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return "%s %s" % (sig3(s / scale), unit)
    return "%s ns" % sig3(s / 1e-9)


def sig3(x):
    if x == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return "%.*f" % (digits, x)


def fmt_value(x, how):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if how == "g3":
        return sig3(x)
    if how == "f0":
        return "%.0f" % x
    if how == "e1":
        return "%.1e" % x
    return str(x)


def fmt_ratio(kess, peer):
    if not peer or kess is None or peer is None:
        return "–"
    return "%.2f" % (kess / peer)


def impl_title(impl):
    """'lapack_dsyevd' -> 'LAPACK dsyevd', 'kess_one_stage_in_a' -> 'kess one_stage_in_a'."""
    if impl in PEER_TITLES:
        return PEER_TITLES[impl]
    head, _, rest = impl.partition("_")
    name = PEERS.get(head, head)
    return name + (" " + rest if rest else "")


def variant_title(impl):
    """kess variants by their variant name ('kess' alone: 'default')."""
    return impl[len("kess_"):] if impl.startswith("kess_") else impl


def union_names(name_lists):
    """The argument names of several benchmarks, in order of first appearance."""
    out = []
    for names in name_lists:
        out += [n for n in names if n not in out]
    return out


def arg_cells(run, names):
    args = dict(run.args)
    return [str(args[n]) if n in args else "–" for n in names]


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def context_value(ctx, key, default="unknown"):
    v = ctx.get(key)
    return v if v not in (None, "") else default


def command_of(ctx):
    command = context_value(ctx, "kess_command", "")
    if not command:
        return "unknown (the JSON has no kess_command: results from before the context keys)"
    words = []
    env = context_value(ctx, "kess_environment", "")
    if env:
        words.append(env)
    ranks = int(context_value(ctx, "kess_mpi_ranks", "1") or 1)
    if ranks > 1:
        words.append("mpiexec -n %d" % ranks)
    words.append(command)
    return " ".join(words)


def commit_of(ctx):
    commit = context_value(ctx, "kess_git_commit")
    if ctx.get("kess_git_dirty") == "yes":
        commit += " (with uncommitted changes)"
    return commit


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# ---- one family's page --------------------------------------------------------------------------

def join_names(kess_args, peer_args, op):
    """Whether a kess variant with argument names kess_args joins a peer with peer_args."""
    if kess_args == peer_args:
        return True
    extra = kess_args[len(peer_args):]
    return kess_args[:len(peer_args)] == peer_args and set(extra) <= JOIN_EXTRA.get(op, set())


def counter_cells(op, run, whose):
    return [fmt_value(run.counters.get(key) if run else None, how)
            for key, _, how, side in COUNTERS.get(op, []) if side in ("both", whose)]


def counter_headers(op, whose, suffix):
    return ["%s%s" % (header, suffix) for _, header, _, side in COUNTERS.get(op, [])
            if side in ("both", whose)]


def operation_section(family, machine, op, runs, plots):
    """Markdown lines for one operation on one machine; appends (file name, title, panels) of
    its plot to plots."""
    by_impl = collections.OrderedDict()
    for r in sorted(runs, key=lambda r: (not r.impl.startswith("kess"), r.impl, r.args)):
        by_impl.setdefault(r.impl, []).append(r)
    kess = [i for i in by_impl if i.startswith("kess")]
    peers = [i for i in by_impl if not i.startswith("kess")]
    names = {i: tuple(k for k, _ in by_impl[i][0].args) for i in by_impl}
    what = OPERATIONS.get(op, op)
    lines = ["### %s" % op, "", what + ".", ""]
    joined = set()  # kess runs shown against a peer
    for peer in peers:
        pnames = names[peer]
        variants = [k for k in kess if join_names(names[k], pnames, op)]
        if not variants:
            continue
        arg_names = union_names(names[k] for k in variants)
        rows = []
        for pr in by_impl[peer]:
            for k in variants:
                for kr in by_impl[k]:
                    if kr.args[:len(pnames)] != pr.args:
                        continue
                    joined.add(id(kr))
                    rows.append(arg_cells(kr, arg_names) + [
                        variant_title(k), fmt_time(kr.seconds), fmt_time(pr.seconds),
                        fmt_ratio(kr.seconds, pr.seconds)] + counter_cells(op, kr, "kess") +
                        counter_cells(op, pr, "peer") + ([pr.label] if op in LABELLED else []))
        if not rows:
            continue
        title = impl_title(peer)
        sources = sorted({r.source for k in variants for r in by_impl[k]} |
                         {r.source for r in by_impl[peer]})
        lines.append("kess variants against %s on %s (%s; %s)." % (
            title, machine, ", ".join(sources),
            "same process" if len(sources) == 1 else "separate processes, run back to back"))
        lines.append("")
        lines += table(arg_names + ["kess variant", "kess", title, "kess / %s" % title] +
                       counter_headers(op, "kess", " kess") +
                       counter_headers(op, "peer", " " + title.split(" ")[0]) +
                       (["shape"] if op in LABELLED else []), rows)
        lines.append("")
    # kess runs without a peer run of their arguments: one table per argument list.
    groups = collections.OrderedDict()
    for k in kess:
        for r in by_impl[k]:
            if id(r) not in joined:
                groups.setdefault(names[k], collections.OrderedDict()).setdefault(k, []).append(r)
    for arg_names, variants in groups.items():
        rows = []
        for k, rs in variants.items():
            for r in rs:
                rows.append([str(v) for _, v in r.args] + [variant_title(k), fmt_time(r.seconds)] +
                            counter_cells(op, r, "kess") + ([r.label] if op in LABELLED else []))
        sources = sorted({r.source for rs in variants.values() for r in rs})
        which = "" if list(variants) == ["kess"] else " (%s)" % ", ".join(
            variant_title(k) for k in variants)
        lines.append("kess%s on %s, without a peer run of these arguments (%s)." % (
            which, machine, ", ".join(sources)))
        lines.append("")
        lines += table(list(arg_names) + ["kess variant", "time"] +
                       counter_headers(op, "kess", "") + (["shape"] if op in LABELLED else []),
                       rows)
        lines.append("")
    # Peers that no kess variant joins (e.g. BLAS on its own arguments).
    for peer in peers:
        if any(join_names(names[k], names[peer], op) for k in kess):
            continue
        rows = [[str(v) for _, v in r.args] + [fmt_time(r.seconds)] + counter_cells(op, r, "peer")
                for r in by_impl[peer]]
        lines.append("%s on %s (%s)." % (impl_title(peer), machine,
                                         ", ".join(sorted({r.source for r in by_impl[peer]}))))
        lines.append("")
        lines += table([k for k, _ in by_impl[peer][0].args] + ["time"] +
                       counter_headers(op, "peer", ""), rows)
        lines.append("")
    if op.startswith("eigh"):
        lines += stage_table(machine, op, by_impl, kess)
    # One plot: time against n of the implementations in the tables against peers.
    shown = [i for i in by_impl if not i.startswith("kess") or
             any(id(r) in joined for r in by_impl[i])]
    panels = plot_series(by_impl, shown)
    if panels and peers and any(len(p) > 1 for p in panels.values()):
        name = "%s-%s-%s.png" % (family, slug(machine), op)
        plots.append((name, "%s on %s" % (op, machine), panels))
        lines += ["![%s on %s: time against n](img/%s)" % (op, machine, name), ""]
    return lines


def stage_table(machine, op, by_impl, kess):
    used = [(key, title) for key, title in STAGES
            if any(r.counters.get(key) for k in kess for r in by_impl[k])]
    if not used:
        return []
    arg_names = union_names(tuple(a for a, _ in by_impl[k][0].args) for k in kess)
    rows = []
    for k in kess:
        for r in by_impl[k]:
            rows.append(arg_cells(r, arg_names) + [variant_title(k)] +
                        [fmt_time(r.counters.get(key)) if r.counters.get(key) else "–"
                         for key, _ in used] + [r.label])
    lines = ["kess::eigh's stages on %s (EighTimings, medians over the repetitions)." % machine, ""]
    lines += table(arg_names + ["kess variant"] + [t for _, t in used] + ["path"], rows)
    return lines + [""]


def plot_series(by_impl, impls):
    """{panel title: {label: [(n, seconds)]}} for the implementations impls that have an argument
    n: one panel per value of the other arguments (the tuning arguments of JOIN_EXTRA at their
    best), one line per implementation."""
    panels = collections.OrderedDict()
    for impl in impls:
        runs = by_impl[impl]
        if not runs or "n" not in dict(runs[0].args):
            continue
        best = {}
        for r in runs:
            other = tuple((k, v) for k, v in r.args if k != "n" and k != "block")
            key = (other, dict(r.args)["n"])
            best[key] = min(best.get(key, float("inf")), r.seconds)
        for (other, n), s in sorted(best.items()):
            title = ", ".join("%s=%s" % kv for kv in other)
            panels.setdefault(title, collections.OrderedDict()).setdefault(
                impl_title(impl), []).append((n, s))
    return panels


def wrap_command(command, width=96):
    """A shell command as lines of at most about `width` characters, joined by backslashes."""
    out, line = [], ""
    for word in command.split(" "):
        if line and len(line) + 1 + len(word) > width:
            out.append(line + " \\")
            line = "    " + word
        else:
            line = word if not line else line + " " + word
    out.append(line)
    return out


def machine_lines(machine, files):
    """The machine's description and the commands of its files."""
    ctx = files[0][1]
    gpu = ctx.get("kess_gpu", "")
    rows = [["CPU", "%s (%s hardware threads)" % (context_value(ctx, "kess_cpu_model"),
                                                 context_value(ctx, "kess_hardware_threads"))]]
    if gpu:
        rows.append(["GPU", gpu])
    rows += [
        ["Kokkos", "%s, default execution space %s, host %s (concurrency %s)" % (
            context_value(ctx, "kess_kokkos_version"), context_value(ctx, "kess_kokkos_backend"),
            context_value(ctx, "kess_kokkos_host_backend"),
            context_value(ctx, "kess_kokkos_host_concurrency"))],
        ["BLAS", context_value(ctx, "kess_blas")],
        ["kess", "%s, %s build, %s; kess host threads %s" % (
            context_value(ctx, "kess_version"), context_value(ctx, "kess_build_type"),
            context_value(ctx, "kess_compiler"), context_value(ctx, "kess_host_threads"))],
        ["ceilings (floors)", context_value(ctx, "kess_ceilings")],
    ]
    lines = table(["machine", machine], rows) + [""]
    lines += table(["file", "date", "commit"],
                   [["`%s`" % name, context_value(c, "date"), commit_of(c)]
                    for name, c, _, _ in files])
    lines += ["", "The commands that made them:", ""]
    for name, c, _, _ in files:
        lines += ["- `%s`:" % name, "", "  ```"]
        lines += ["  " + part for part in wrap_command(command_of(c))]
        lines += ["  ```", ""]
    skipped = [(name, s) for name, _, _, sk in files for s in sk]
    if skipped:
        lines += ["Skipped on this machine (the benchmark reported an error):", ""]
        lines += table(["file", "benchmark", "reason"],
                       [["`%s`" % n, b, r] for n, (b, r) in skipped])
        lines.append("")
    return lines


def family_page(family, machines, plots):
    title, ops = FAMILIES[family]
    lines = ["# Performance: " + title, "",
             "Generated by `perf/scripts/perf_pages.py` from the benchmark results in "
             "`perf/results/`; do not edit by hand. [README.md](README.md) says how the results "
             "are made and how to add some.", "",
             "Times are medians over the repetitions of a run; `kess / peer` is kess's time over "
             "the peer's (below 1: kess is faster).", ""]
    any_machine = False
    for machine, files in machines.items():
        runs = [r for _, _, rs, _ in files for r in rs if r.op in ops]
        if not runs:
            continue
        any_machine = True
        used = [f for f in files if any(r.op in ops for r in f[2])]
        lines += ["## %s" % machine, ""] + machine_lines(machine, used)
        for op in ops:
            op_runs = [r for r in runs if r.op == op]
            if op_runs:
                lines += operation_section(family, machine, op, op_runs, plots)
    if not any_machine:
        lines += ["No results yet: [README.md](README.md) says how to add some.", ""]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def render(results_dir):
    """{file name: Markdown} for the family pages, and the plots to draw."""
    machines = read_results(results_dir)
    pages, plots = {}, []
    for family in FAMILIES:
        pages[family + ".md"] = family_page(family, machines, plots)
    return pages, plots


def draw(plots, img_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    os.makedirs(img_dir, exist_ok=True)
    for name, title, panels in plots:
        fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5), squeeze=False)
        for ax, (panel, series) in zip(axes[0], panels.items()):
            ns = set()
            for i, (label, points) in enumerate(series.items()):
                xs, ys = zip(*sorted(points))
                ns.update(xs)
                ax.plot(xs, ys, "-o" if label.startswith("kess") else "--s", label=label,
                        markersize=4, color="C%d" % (i % 10))
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sorted(ns))
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("n")
            ax.set_ylabel("time (s, median)")
            ax.set_title(panel or title, fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        if len(panels) > 1 or next(iter(panels)):
            fig.suptitle(title)
        fig.tight_layout()
        fig.savefig(os.path.join(img_dir, name), dpi=100, metadata={"Software": None})
        plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=RESULTS, help="results folder (default perf/results)")
    parser.add_argument("--out", default=PAGES, help="pages folder (default docs/performance)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the pages in --out differ from the regenerated ones")
    parser.add_argument("--no-plots", action="store_true", help="write the pages only")
    args = parser.parse_args()
    pages, plots = render(args.results)
    if args.check:
        stale = []
        for name, text in sorted(pages.items()):
            path = os.path.join(args.out, name)
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if old != text:
                stale.append(path)
        for path in stale:
            print("perf_pages.py: %s is not what perf/results/ gives; run "
                  "perf/scripts/perf_pages.py" % os.path.relpath(path, ROOT), file=sys.stderr)
        return 1 if stale else 0
    os.makedirs(args.out, exist_ok=True)
    for name, text in sorted(pages.items()):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(text)
    if not args.no_plots:
        draw(plots, os.path.join(args.out, "img"))
    print("perf_pages.py: %d pages, %d plots in %s" % (
        len(pages), 0 if args.no_plots else len(plots), os.path.relpath(args.out, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
