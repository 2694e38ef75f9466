#!/usr/bin/env python3
"""Stores `kess-run lobpcg --json` reports as Google Benchmark entries for perf_pages.py.

  kess_run_to_gbench.py --context BENCH.json --out FILE [--command C] [--date D] REPORT.json...

Each report (a Heisenberg run: `--generate heisenberg --L L`) becomes
BM_lobpcg_kess/L:<L>/nev:<nev>/block:<b>/precond:<0 none, 1 jacobi, 2 fom> with the lobpcg call's
time and the counters bench_lobpcg writes; the context (machine, build) is taken from BENCH.json, a
benchmark file written on the same machine by the same build, and its command replaced by the
reports' commands.
"""

import argparse
import json
import re

PRECOND = {"none": 0, "jacobi": 1, "fom": 2}


def entry(report):
    m = re.search(r"heisenberg L=(\d+)", report["problem"])
    if not m:
        raise SystemExit("kess_run_to_gbench.py: %s is not a Heisenberg run" % report["problem"])
    name = "BM_lobpcg_kess/L:%s/nev:%d/block:%d/precond:%d" % (
        m.group(1), report["nev"], report["block_size"], PRECOND[report["preconditioner"]])
    return {
        "name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
        "repetition_index": 0, "threads": 1, "iterations": 1,
        "real_time": report["time_total_s"], "cpu_time": report["time_total_s"], "time_unit": "s",
        "lobpcg_iterations": report["iterations"], "spmm_count": report["spmm_count"],
        "converged": 1 if report["converged"] in ("yes", True) else 0,
        "spmm_s": report["time_spmm_s"], "ortho_s": report["time_orthonormalization_s"],
        "rr_s": report["time_rayleigh_ritz_s"], "precond_s": report["time_preconditioner_s"],
        "n": report["n"], "stored_nnz": report["stored_nonzeros"],
        "eigenvalue0": report["eigenvalues"][0],
        "label": "%s, kess::lobpcg (kess-run), %s" % (report["problem"], report["preconditioner"]),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--context", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--command", default="", help="the kess-run commands that wrote the reports")
    p.add_argument("--date", default="", help="when the reports were written (ISO 8601)")
    p.add_argument("reports", nargs="+")
    a = p.parse_args()
    context = json.load(open(a.context))["context"]
    if a.command:
        context["kess_command"] = a.command
    if a.date:
        context["date"] = a.date
    out = {"context": context, "benchmarks": [entry(json.load(open(r))) for r in a.reports]}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
