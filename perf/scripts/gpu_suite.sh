#!/usr/bin/env bash
# Runs a CUDA build of kess on a GPU machine and leaves logs in OUT_DIR: the unit tests of every
# backend, kess-run checks, a tuning sweep and the benchmarks. The binaries are built elsewhere
# (docs/getting_started.md) and copied with the host libraries they need:
#   BIN_DIR/bin/{test_*,kess-run,bench_*}   BIN_DIR/libs.tar.xz (optional)
# Usage: perf/scripts/gpu_suite.sh BIN_DIR OUT_DIR [phase...]
#   phases: info tests hh sweep bench eigh gj sass (default: info tests hh sweep bench)
# The benchmark phases write Google Benchmark JSON (OUT_DIR/<suite>.json: hh_chase, eigh,
# gauss_jordan); copied to perf/results/<machine>/, perf/scripts/perf_pages.py makes
# docs/performance/ from them (docs/performance/README.md).
set -u
BIN=$1; OUT=$2; shift 2
phases=${*:-info tests hh sweep bench}
if [ -f "$BIN/libs.tar.xz" ]; then mkdir -p /tmp/kess-libs && tar xJf "$BIN/libs.tar.xz" -C /tmp/kess-libs; fi
export LD_LIBRARY_PATH=/tmp/kess-libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The host LAPACK steps (panels, dstedc, the bulge chase) need the cores: with Kokkos's OpenMP host
# threads at full count they compete with OpenBLAS's for the cores (dstedc several times slower).
# The unit tests keep OpenMP threads; the timed phases give the cores to the host BLAS.
# (nproc --all: GPU images may set OMP_NUM_THREADS=1, which plain nproc reports.) Debian's OpenBLAS
# may not know the node's CPU: its AVX-512 or AVX2 kernels are named explicitly.
coretype=$(grep -q avx512f /proc/cpuinfo && echo SkylakeX || echo Haswell)
timed_env() { OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$(nproc --all)} \
              OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$coretype} "$@"; }
mkdir -p "$OUT"
for phase in $phases; do
  case $phase in
  info)
    date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
    nproc --all; which mpiexec && mpiexec --version | head -1
    ;;
  tests)
    for t in "$BIN"/bin/test_*; do
      name=$(basename "$t")
      case $name in
      *_Serial|*_OpenMP|*_Cuda)
        echo "== $name"
        OMP_PROC_BIND=false "$t" --gtest_brief=1 > "$OUT/$name.log" 2>&1; echo "rc=$?"; tail -1 "$OUT/$name.log" ;;
      *)  # MPI suites: 1, 2 and 4 ranks
        for np in 1 2 4; do
          echo "== $name np=$np"
          mpiexec -n $np --oversubscribe "$t" --gtest_brief=1 > "$OUT/$name.np$np.log" 2>&1
          echo "rc=$?"; tail -1 "$OUT/$name.np$np.log"
        done ;;
      esac
    done
    ;;
  hh)
    for v in paper fast; do
      timed_env "$BIN"/bin/kess-run hh-chase --band-width 64 --n 16384 --cols 1024 --variant $v --repeat 10
      timed_env "$BIN"/bin/kess-run hh-chase --band-width 64 --n 4096 --cols 8192 --variant $v --repeat 10
    done
    ;;
  sweep)
    for m in ${SWEEP_M:-8 16 32 64}; do for c in ${SWEEP_C:-2 4 8 16}; do
      printf 'm=%-3s c=%-3s ' $m $c
      timed_env "$BIN"/bin/kess-run hh-chase --band-width 64 --n 16384 --cols 1024 --block $m --cols-per-team $c --repeat 5 --no-check | awk '/time/ {printf "%s ms  ", $2} /rate/ {print $2, "GFLOP/s"}'
    done; done
    ;;
  eigh)  # kess::eigh two-stage against cuSOLVER syevd, same run
    timed_env "$BIN"/bin/kess-run eigh --n 4096 | tail -12
    timed_env "$BIN"/bin/bench_eigh \
      --benchmark_filter="${EIGH_FILTER:-^BM_eigh_(kess_two_stage|cusolver_syevd)/n:(4096|8192)/vectors_pct:100/|^BM_eigh_kess_two_stage/n:(4096|8192)/vectors_pct:20/}" \
      --benchmark_out="$OUT/eigh.json" --benchmark_out_format=json 2>&1 | grep -E '^BM_'
    ;;
  gj)  # Gauss-Jordan solve / inverse against cuSOLVER getrf+getrs, same run
    timed_env "$BIN"/bin/bench_gauss_jordan --benchmark_min_time=0.1 \
      --benchmark_filter="${GJ_FILTER:-^BM_(solve|inverse)_kess[a-z_]*/n:(8192|16384)/block:(64|128)/|^BM_(solve|inverse)_cusolver_getrs/}" \
      --benchmark_out="$OUT/gauss_jordan.json" --benchmark_out_format=json 2>&1 | grep -E '^BM_'
    ;;
  sass)  # instruction mix of the compile-time Householder chase kernel
    cuobjdump -sass "$BIN"/bin/kess-run > /tmp/kess.sass 2>&1
    awk '/Function : .*HhChaseApplyWYFixed/ {f = 1; print; next} /Function :/ {f = 0} f' /tmp/kess.sass > "$OUT/hh_fixed.sass"
    grep -o -E '(LDS|STS|LDG|STG|DFMA|DADD|DMUL|BAR)[.A-Z0-9]*' "$OUT/hh_fixed.sass" | sort | uniq -c | sort -rn | head -20
    ;;
  bench)
    timed_env "$BIN"/bin/bench_hh_chase --benchmark_filter="${BENCH_FILTER:-.}" --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true --benchmark_out="$OUT/hh_chase.json" \
      --benchmark_out_format=json 2>&1 | grep -E 'median|^Run|^---|Benchmark'
    ;;
  esac
done
