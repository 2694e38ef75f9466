#!/usr/bin/env bash
# Runs the benchmark suites of a CPU build of kess and stores their Google Benchmark JSON in
# perf/results/<machine>/<suite>.json, the input of perf/scripts/perf_pages.py. Each JSON's context
# holds the exact command and environment of its run (docs/performance/README.md).
# Usage, from the repository root:
#   perf/scripts/run_cpu_suite.sh [--build DIR] [--machine NAME] [--sizes REGEX|all]
#                                 [--repetitions R] [suite...]
#   suites: eigh hh_chase eigh_elpa gauss_jordan matrix_functions block_sparse (default: all)
#           lobpcg (on request: kess-run lobpcg against scipy's lobpcg, one thread each, JSON in
#           <results>/lobpcg/, not read by perf_pages.py)
#   --build DIR      build directory with the benchmarks (default build-a)
#   --machine NAME   results folder (default from the CPU: cpu-<model>-<cores>c)
#   --sizes REGEX    the orders (n, m, k) to run (default 500|1000|2000); all: every registered
#                    size (the full measurement; hh_chase then runs every shape too)
#   --repetitions R  Google Benchmark repetitions, medians reported (default 3)
# Environment: OPENBLAS_NUM_THREADS (default: the core count; 1 for ELPA's ranks),
# OPENBLAS_CORETYPE (default SkylakeX on AVX-512 CPUs, Haswell on AVX2 ones: Debian's OpenBLAS
# may not recognize newer CPUs and fall back to SSE3 kernels).
set -eu
build=build-a
machine=
sizes='500|1000|2000'
repetitions=3
suites=()
while [ $# -gt 0 ]; do
  case $1 in
  --build) build=$2; shift 2 ;;
  --machine) machine=$2; shift 2 ;;
  --sizes) sizes=$2; shift 2 ;;
  --repetitions) repetitions=$2; shift 2 ;;
  -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
  *) suites+=("$1"); shift ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=(eigh hh_chase eigh_elpa gauss_jordan matrix_functions block_sparse)

cores=$(nproc --all)
if [ -z "$machine" ]; then
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  model=$(printf '%s' "${model:-unknown}" | sed -E 's/\((R|TM|tm)\)//g; s/ CPU//; s/@.*//' |
          tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-//; s/-$//')
  machine=cpu-$model-${cores}c
fi
out=perf/results/$machine
mkdir -p "$out"

export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$cores}
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -q avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell
  fi
fi

# A filter per suite: the chosen orders, and the benchmarks without an order (shapes) always.
if [ "$sizes" = all ]; then
  filter_n=. filter_gj=. filter_hh=.
else
  filter_n="/(n|k):($sizes)/"
  filter_gj="/(n|m):($sizes)/|/shape:"
  filter_hh='/n:(1024|4096)/cols:1024/'
fi
common=(--benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true
        --benchmark_out_format=json)

run() {  # run <suite> <command...>: prints the command, runs it, keeps its JSON
  local suite=$1; shift
  echo "== $suite: $*" >&2
  "$@" --benchmark_out="$out/$suite.json"
}

for suite in "${suites[@]}"; do
  case $suite in
  eigh) run eigh "$build/perf/bench_eigh" --benchmark_filter="$filter_n" "${common[@]}" ;;
  hh_chase) run hh_chase "$build/perf/bench_hh_chase" --benchmark_filter="$filter_hh" "${common[@]}" ;;
  eigh_elpa)  # one rank per core, one BLAS thread per rank
    root=()
    [ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
    OPENBLAS_NUM_THREADS=1 run eigh_elpa mpiexec "${root[@]}" -n "$cores" "$build/perf/bench_eigh_elpa" \
      --benchmark_filter="$filter_n" "${common[@]}" ;;
  gauss_jordan) run gauss_jordan "$build/perf/bench_gauss_jordan" --benchmark_filter="$filter_gj" "${common[@]}" ;;
  matrix_functions) run matrix_functions "$build/perf/bench_matrix_functions" --benchmark_filter="$filter_n" "${common[@]}" ;;
  block_sparse)  # one rank per core, one thread per rank (as DBCSR's comparison runs)
    root=()
    [ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
    OPENBLAS_NUM_THREADS=1 KESS_NUM_THREADS=1 OMP_NUM_THREADS=1 run block_sparse \
      mpiexec "${root[@]}" -n "$cores" "$build/perf/bench_block_sparse" "${common[@]}" ;;
  lobpcg)  # the same matrices through kess-run (fom, none) and scipy at kess's ||H|| and tol
    mkdir -p "$out/lobpcg"
    tmp=$(mktemp -d)
    for p in "heisenberg --L 18" "heisenberg --L 20" "laplace2d --nx 150"; do
      tag=$(printf '%s' "$p" | tr -d ' -')
      for pc in fom none; do
        echo "== lobpcg: kess-run lobpcg --generate $p --precond $pc" >&2
        OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 KESS_NUM_THREADS=1 "$build/perf/kess-run" lobpcg \
          --generate $p --nev 8 --block-size 16 --tol 1e-8 --precond $pc \
          --write-matrix "$tmp/$tag.mtx" --json "$out/lobpcg/kess_${tag}_$pc.json" >&2
      done
      norm=$(/usr/bin/python3 -c \
             'import json, sys; print(json.load(open(sys.argv[1]))["norm_estimate"])' \
             "$out/lobpcg/kess_${tag}_none.json")
      echo "== lobpcg: scipy on $tag" >&2
      OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 perf/scripts/lobpcg_peers.py \
        --matrix "$tmp/$tag.mtx" --nev 8 --block 16 --tol 1e-8 --norm "$norm" \
        > "$out/lobpcg/scipy_$tag.json"
    done
    rm -rf "$tmp" ;;
  *) echo "run_cpu_suite.sh: unknown suite '$suite'" >&2; exit 2 ;;
  esac
done
echo "results in $out; docs/performance/ from them: /usr/bin/python3 perf/scripts/perf_pages.py" >&2
