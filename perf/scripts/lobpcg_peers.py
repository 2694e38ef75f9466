#!/usr/bin/env python3
"""The peers of kess-run lobpcg / spmm on the same matrix (a Matrix Market file, e.g. written by
`kess-run lobpcg --generate ... --write-matrix FILE`): scipy.sparse.linalg.lobpcg on the CPU, or
torch.lobpcg and torch's sparse CSR product (cuSPARSE) on a CUDA GPU. Prints one JSON object.

Usage:
  lobpcg_peers.py (--matrix FILE | --generate heisenberg --L L [--sz2 S2] [--open]
                                 | --generate laplace2d --nx NX [--ny NY])
                  [--nev K] [--block B] [--tol T] [--largest] [--maxiter M]
                  [--norm X] [--device cpu|cuda] [--spmm K] [--repeat R] [--seed S]
                  [--torch-index int32|int64] [--torch-shift S] [--compare VALUES_FILE]
                  [--gbench-out FILE]

--generate builds the full symmetric CSR matrix in memory (vectorized numpy), exactly the matrix
of `kess-run lobpcg --generate ...` (kess::gen): no multi-GB Matrix Market file for the benchmark
case (heisenberg --L 26: n = 10,400,600, 151M nonzeros in full).
- heisenberg: the spin-1/2 ring of L sites (J = 1; --open for the chain; the ring bond only for
  L >= 3) in the sector of (L + S2)/2 up spins, S2 = 2 S^z (default L mod 2), basis states the
  bit patterns of that popcount ascending; every diagonal entry stored, zeros included.
- laplace2d: the Dirichlet 5-point Laplacian on NX x NY interior points (NY defaults to NX; NY = 1
  is kess's 1D Laplacian, diagonal 2), natural ordering, x fastest.

SpMM (--spmm K; cuda: torch's CSR @ dense, i.e. cuSPARSE SpMM on the full matrix, X row-major and
column-major): median of --repeat timed runs after a warm-up, GB/s against kess's byte floor
12 * stored + 16 * n * K bytes, stored = (nonzeros + diagonal entries) / 2 (the lower triangle).

Tolerances. kess stops when ||r_i|| / ((||H|| + |lambda_i|) ||x_i||) < tol for every wanted pair.
- scipy (absolute test ||r_i|| < tol_abs with ||x_i|| = 1): the script passes
  tol_abs = tol * ||H||, ||H|| from --norm or else ||H||_1. With --norm set to kess's
  `norm_estimate` (from its JSON) this is at least as strict as kess's test; ||H||_1 >= ||H||_2
  may be looser. scipy waits for all B columns, not only the K wanted (B defaults to K).
- torch (||r_i|| / (||x_i|| (A_norm + lambda_i)) < tol, lambda_i signed in torch's source,
  A_norm = ||A X0||_F / ||X0||_F from the random start, an estimate below ||H||_2): the same tol
  is passed, so torch's test is the stricter for positive spectra; torch.lobpcg needs n >= 3 B.
  With eigenvalues below -A_norm (Heisenberg) the measure is negative and passes at once, so
  its "converged" pairs may not be: --torch-shift S runs
  torch on H + S I (S = ||H||_1 makes it positive semidefinite), eigenvalues shifted back.
  torch.lobpcg gets the CSR tensor (torch.matmul) and, should that fail, a COO tensor
  (torch.sparse.mm); "matrix_format" says which ran. "iterations" counts tracker calls (one per
  LOBPCG step); "torch_rerr" is torch's own last convergence measure.
- Every torch step is guarded: a failure is an "error" entry in the JSON (exit code 4 when
  torch.lobpcg failed in every format), not a crash.
--gbench-out FILE also writes the timings as Google Benchmark JSON for perf/scripts/perf_pages.py
(added to FILE when it exists, so several runs make one file), named as perf/bench/lobpcg's:
BM_lobpcg_scipy|torch/L:<L>/nev:<K>/block:<B>/precond:0 (counters lobpcg_iterations, converged,
eigenvalue0, max_residual) and, with --spmm K, BM_spmm_torch_csr/L:<L>/k:<K> (row-major),
BM_spmm_torch_csr_colmajor/... (cuda) or BM_spmm_scipy_csr/... (cpu), one repetition per timed
run, counters GBs, floor_s, floor_ratio as bench_spmm's (the rate: KESS_PEAK_GBS, else kess's
3000 GB/s on a GPU, 20 GB/s on a host); n:<n> instead of L:<L> without --generate heisenberg.
The residuals reported are recomputed here for the nev wanted pairs with kess's measure
(||H|| as above), so the runs can be compared on one scale.
"""

import argparse
import json
import os
import platform
import resource
import sys
import time
import warnings


def read_matrix(path):
    import scipy.io
    import scipy.sparse as sp
    A = sp.csr_matrix(scipy.io.mmread(path), dtype="float64")
    if A.shape[0] != A.shape[1]:
        sys.exit("lobpcg_peers.py: %s is not square (%d x %d)" % (path, A.shape[0], A.shape[1]))
    return A


def _index_dtype(limit):
    import numpy as np
    return np.int32 if limit < 2**31 - 1 else np.int64


def _csr_from_slots(cols, vals, n):
    """CSR from per-row slots (n x S; absent slots hold the index dtype's maximum, every row's
    present columns ascending): rows compressed in order."""
    import numpy as np
    present = cols != np.iinfo(cols.dtype).max
    counts = present.sum(axis=1)
    nnz = int(counts.sum())
    idx = _index_dtype(max(n, nnz))
    indptr = np.zeros(n + 1, dtype=idx)
    np.cumsum(counts, out=indptr[1:])
    indices = cols[present].astype(idx, copy=False)
    data = vals[present] if vals is not None else None
    return indptr, indices, data, nnz


def patterns(L, k):
    """The L-bit patterns with k ones, ascending: S(l, j) = S(l - 1, j) then S(l - 1, j - 1) with
    bit l - 1 set, built upwards keeping only the (l, j) that can still reach (L, k)."""
    import numpy as np
    dt = np.uint32 if L <= 32 else np.uint64
    prev = {0: np.zeros(1, dtype=dt)}
    for l in range(1, L + 1):
        cur = {}
        for j in range(max(0, k - (L - l)), min(l, k) + 1):
            parts = [prev[j]] if j in prev else []
            if j - 1 in prev:
                parts.append(prev[j - 1] | dt(1 << (l - 1)))
            cur[j] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        prev = cur
    return prev[k]


def gen_heisenberg(L, sz2, periodic, J=1.0):
    """kess::gen::heisenberg(L, sz2, J, periodic) in full as scipy CSR (see the module text)."""
    import numpy as np
    import scipy.sparse as sp
    if not 1 <= L <= 62:
        sys.exit("lobpcg_peers.py: --L %d is outside 1..62" % L)
    if (L + sz2) % 2 != 0 or abs(sz2) > L:
        sys.exit("lobpcg_peers.py: --sz2 %d must have L's parity and |sz2| <= L = %d" % (sz2, L))
    states = patterns(L, (L + sz2) // 2)
    dt = states.dtype.type
    n = len(states)
    bonds = [(i, i + 1) for i in range(L - 1)] + ([(L - 1, 0)] if periodic and L >= 3 else [])
    nb = len(bonds)
    idx = _index_dtype(n)
    absent = np.iinfo(idx).max
    # slot c < nb: the state reached by swapping bond c's antiparallel pair; slot nb: the diagonal
    cols = np.full((n, nb + 1), absent, dtype=idx)
    cols[:, nb] = np.arange(n, dtype=idx)
    anti_count = np.zeros(n, dtype=np.int16)  # antiparallel bonds of each state
    below = np.zeros(n, dtype=np.int16)  # of them, those leading to a smaller state (index)
    for c, (a, b) in enumerate(bonds):
        anti = (((states >> dt(a)) ^ (states >> dt(b))) & dt(1)).astype(bool)
        anti_count += anti
        mine = states[anti]
        flipped = mine ^ dt((1 << a) | (1 << b))
        below[anti] += flipped < mine
        cols[anti, c] = np.searchsorted(states, flipped).astype(idx, copy=False)
        del anti, mine, flipped
    cols.sort(axis=1)  # absent slots last
    indptr, indices, _, nnz = _csr_from_slots(cols, None, n)
    del cols
    # the diagonal J/4 (parallel - antiparallel bonds) at its place in the row: after the
    # row's antiparallel partners of smaller index
    data = np.full(nnz, 0.5 * J)
    diag = 0.25 * J * (nb - 2 * anti_count.astype(np.float64))
    data[indptr[:-1].astype(np.int64) + below] = diag
    name = "heisenberg L=%d Sz=%s %s%s" % (
        L, str(sz2 // 2) if sz2 % 2 == 0 else "%d/2" % sz2, "ring" if periodic else "open",
        "" if J == 1.0 else " J=%g" % J)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n), copy=False), name


def gen_laplace2d(nx, ny):
    """kess::gen::laplace2d(nx, ny) in full as scipy CSR: 5-point, Dirichlet, x fastest."""
    import numpy as np
    import scipy.sparse as sp
    if nx < 1 or ny < 1:
        sys.exit("lobpcg_peers.py: --nx and --ny must be at least 1")
    n = nx * ny
    dims = 2 if ny > 1 else 1
    idx = _index_dtype(n)
    absent = np.iinfo(idx).max
    i = np.arange(n, dtype=np.int64)
    x, y = i % nx, i // nx
    cols = np.full((n, 5), absent, dtype=idx)
    for c, (step, ok) in enumerate(((-nx, y > 0), (-1, x > 0), (0, None), (1, x < nx - 1),
                                    (nx, y < ny - 1))):
        cols[:, c] = np.where(ok, i + step, absent) if ok is not None else i
    vals = np.full((n, 5), -1.0)
    vals[:, 2] = 2.0 * dims
    indptr, indices, data, _ = _csr_from_slots(cols, vals, n)
    name = "laplace2d %dx%d" % (nx, ny) if dims == 2 else "laplace1d nx=%d" % nx
    return sp.csr_matrix((data, indices, indptr), shape=(n, n), copy=False), name


def diagonal_entries(A):
    """The number of stored (structural) diagonal entries of the CSR matrix A, by row chunks."""
    import numpy as np
    count, n, step = 0, A.shape[0], 1 << 20
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        lo, hi = int(A.indptr[r0]), int(A.indptr[r1])
        rows = np.repeat(np.arange(r0, r1), np.diff(A.indptr[r0:r1 + 1]))
        count += int(np.count_nonzero(A.indices[lo:hi] == rows))
    return count


def norm1(A):
    """||A||_1 (= ||A||_inf, A symmetric): the largest absolute row sum, by row chunks."""
    import numpy as np
    best, n, step = 0.0, A.shape[0], 1 << 20
    for r0 in range(0, n, step):
        r1 = min(n, r0 + step)
        ptr = A.indptr[r0:r1 + 1].astype(np.int64)
        rows = np.repeat(np.arange(r1 - r0), np.diff(ptr))
        sums = np.bincount(rows, weights=np.abs(A.data[ptr[0]:ptr[-1]]), minlength=r1 - r0)
        best = max(best, float(sums.max()))
    return best


def backward_residuals(A, lam, X, hnorm):
    import numpy as np
    R = A @ X - X * lam
    return (np.linalg.norm(R, axis=0) /
            ((hnorm + np.abs(lam)) * np.linalg.norm(X, axis=0))).tolist()


def run_scipy(A, args, hnorm, out):
    import numpy as np
    import scipy
    from scipy.sparse.linalg import lobpcg
    n = A.shape[0]
    rng = np.random.default_rng(args.seed)
    X0 = rng.uniform(-1, 1, size=(n, args.block))
    tol_abs = args.tol * hnorm
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.perf_counter()
        lam, X, lh, rh = lobpcg(A, X0, tol=tol_abs, maxiter=args.maxiter, largest=args.largest,
                                retLambdaHistory=True, retResidualNormsHistory=True)
        secs = time.perf_counter() - t
    order = np.argsort(lam)[::-1] if args.largest else np.argsort(lam)
    lam, X = lam[order][:args.nev], X[:, order][:, :args.nev]
    res = backward_residuals(A, lam, X, hnorm)
    out.update({
        "peer": "scipy.sparse.linalg.lobpcg", "scipy": scipy.__version__,
        "numpy": np.__version__, "device": "cpu", "seconds": secs,
        "iterations": len(rh) - 1, "tol_abs": tol_abs,
        "converged": "yes" if max(res) < args.tol else "no",
        "eigenvalues": sorted(lam.tolist()), "residuals": res,
        "warnings": [" ".join(str(w.message).split()) for w in caught],
    })


def floor_bytes(A, k):
    """kess's SpMM byte floor: 12 bytes a stored lower-triangle nonzero (value and two 16-bit
    in-block indices), X read and Y written once (8 bytes a value each)."""
    if not hasattr(A, "_kess_diag"):
        A._kess_diag = diagonal_entries(A)
    stored = (A.nnz + A._kess_diag) // 2
    return 12.0 * stored + 16.0 * A.shape[0] * k


def _error(e):
    return "%s: %s" % (type(e).__name__, " ".join(str(e).split())[:2000])


def run_torch(A, args, hnorm, out):
    """torch on CUDA: CSR SpMM timings (--spmm) and torch.lobpcg (--nev > 0). Every torch step is
    guarded: a failure is reported in the JSON (an "error" key) and the script goes on."""
    import numpy as np
    import torch
    dev = torch.device("cuda")
    out.update({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
                "device": "cuda"})
    n = A.shape[0]

    def to_csr(index, A=A):
        crow = torch.from_numpy(np.ascontiguousarray(A.indptr, dtype=np.dtype(index)))
        col = torch.from_numpy(np.ascontiguousarray(A.indices, dtype=np.dtype(index)))
        vals = torch.from_numpy(np.ascontiguousarray(A.data, dtype=np.float64))
        return torch.sparse_csr_tensor(crow.to(dev), col.to(dev), vals.to(dev), size=A.shape,
                                       dtype=torch.float64, device=dev)

    def to_coo(A=A):
        coo = A.tocoo()
        ij = torch.from_numpy(np.vstack([coo.row.astype(np.int64), coo.col.astype(np.int64)]))
        vals = torch.from_numpy(np.ascontiguousarray(coo.data, dtype=np.float64))
        del coo
        return torch.sparse_coo_tensor(ij.to(dev), vals.to(dev), size=A.shape,
                                       dtype=torch.float64, device=dev).coalesce()

    index = args.torch_index if max(n, A.nnz) < 2**31 - 1 else "int64"
    csr = None
    for ix in [index] + (["int64"] if index == "int32" else []):
        try:
            csr = to_csr(ix)
            probe = csr @ torch.ones(n, 1, dtype=torch.float64, device=dev)
            torch.cuda.synchronize()
            del probe
            out["torch_csr_index"] = ix
            break
        except Exception as e:  # noqa: BLE001 (any torch failure is reported, not fatal)
            out.setdefault("torch_csr_errors", []).append("%s indices: %s" % (ix, _error(e)))
            csr = None
            torch.cuda.empty_cache()

    def timed(fn, repeat):
        fn()  # warm-up
        torch.cuda.synchronize()
        times = []
        for _ in range(max(1, repeat)):
            torch.cuda.synchronize()
            t = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        return sorted(times)[len(times) // 2], times

    if args.spmm:
        k = args.spmm
        fb = floor_bytes(A, k)
        out["spmm"] = {"k": k, "nonzeros": int(A.nnz), "diagonal_entries": A._kess_diag,
                       "stored_nonzeros": (A.nnz + A._kess_diag) // 2, "floor_bytes": fb,
                       "what": "torch.sparse_csr_tensor @ dense (cuSPARSE SpMM on the full "
                               "matrix), X row-major n x K; column_major: X column-major"}
        if csr is None:
            out["spmm"]["error"] = "no CSR tensor on the GPU (torch_csr_errors)"
        else:
            gen = torch.Generator(device=dev).manual_seed(args.seed)
            X = torch.rand(n, k, dtype=torch.float64, device=dev, generator=gen) * 2 - 1
            for key, Xl in (("row_major", X), ("column_major", X.t().contiguous().t())):
                entry = out["spmm"] if key == "row_major" else out["spmm"].setdefault(key, {})
                try:
                    med, times = timed(lambda: csr @ Xl, args.repeat)
                    entry.update({"layout": key.replace("_", "-"), "seconds": med,
                                  "ms": med * 1e3, "times": times, "gbs": fb / med * 1e-9,
                                  "full_csr_gbs": ((8.0 + (4 if out["torch_csr_index"] ==
                                                           "int32" else 8)) * A.nnz +
                                                   16.0 * n * k) / med * 1e-9})
                except Exception as e:  # noqa: BLE001
                    entry.update({"layout": key.replace("_", "-"), "error": _error(e)})
                torch.cuda.empty_cache()
            del X

    if args.nev > 0:
        out["peer"] = "torch.lobpcg"
        if n < 3 * args.block:
            out["error"] = "torch.lobpcg needs n >= 3 block (n = %d)" % n
            return
        gen = torch.Generator(device=dev).manual_seed(args.seed)
        X0 = torch.rand(n, args.block, dtype=torch.float64, device=dev, generator=gen) * 2 - 1
        # the matrix formats to try: the CSR tensor (torch.matmul), then COO (torch.sparse.mm)
        # torch.lobpcg's test divides by A_norm + lambda_i (signed): --torch-shift S > 0 runs it on
        # H + S I (same eigenvectors), the eigenvalues reported shifted back
        shift = args.torch_shift
        As = A
        if shift:
            import scipy.sparse as sp
            As = (A + shift * sp.identity(n, format="csr")).tocsr()
            As.sort_indices()
        csr_lobpcg = csr if not shift or csr is None else None
        if shift and csr is not None:
            try:
                csr_lobpcg = to_csr(out["torch_csr_index"], As)
            except Exception as e:  # noqa: BLE001
                out.setdefault("torch_csr_errors", []).append("shifted: " + _error(e))
        formats = ([("csr", lambda: csr_lobpcg)] if csr_lobpcg is not None else []) + [
            ("coo", lambda: to_coo(As))]
        out["torch_shift"] = shift
        errors = []
        for fmt, make in formats:
            M = None
            try:
                M = make()
                state = {"calls": 0, "istep": 0, "converged": 0, "rerr": None, "A_norm": None}

                def tracker(w):
                    state["calls"] += 1
                    state["istep"] = int(w.ivars.get("istep", 0))
                    state["converged"] = int(w.ivars.get("converged_count", 0))
                    state["rerr"] = w.tvars.get("rerr")  # a fresh tensor each step: no copy
                    state["A_norm"] = w.fvars.get("A_norm")

                torch.cuda.synchronize()
                t = time.perf_counter()
                lam, X = torch.lobpcg(M, k=args.nev, X=X0.clone(), tol=args.tol,
                                      niter=args.maxiter, largest=args.largest,
                                      tracker=tracker)
                torch.cuda.synchronize()
                secs = time.perf_counter() - t
                # kess's residual measure, on the GPU, for the nev wanted pairs
                order = torch.argsort(lam, descending=bool(args.largest))[:args.nev]
                lam, X = lam[order], X[:, order]
                R = (M @ X) - X * lam  # (H + S) X - X (lambda + S)
                lam = lam - shift
                res = (torch.linalg.vector_norm(R, dim=0) /
                       ((hnorm + lam.abs()) * torch.linalg.vector_norm(X, dim=0)))
                res = res.cpu().tolist()
                rerr = state["rerr"]
                out.update({"matrix_format": fmt, "seconds": secs,
                            "iterations": state["istep"] if state["calls"] else None,
                            "tracker_calls": state["calls"],
                            "torch_converged_count": state["converged"],
                            "torch_A_norm": state["A_norm"],
                            "torch_rerr": rerr.cpu().tolist() if rerr is not None else None,
                            "converged": "yes" if max(res) < args.tol else "no",
                            "eigenvalues": sorted(lam.cpu().tolist()), "residuals": res})
                break
            except Exception as e:  # noqa: BLE001
                errors.append("%s: %s" % (fmt, _error(e)))
            finally:
                if fmt == "coo":
                    M = None
                torch.cuda.empty_cache()
        if errors:
            out["lobpcg_errors"] = errors
        if "eigenvalues" not in out:
            out["error"] = "torch.lobpcg failed in every matrix format (lobpcg_errors)"


# ---- Google Benchmark JSON (--gbench-out) -------------------------------------------------------

def _peak_gbs(device):
    """The memory rate of kess's SpMM floor: KESS_PEAK_GBS, else kess::perf::ceilings()'s value
    (perf/common/perf_common.cpp: 3000 GB/s on a CUDA GPU, 20 GB/s assumed on a host)."""
    try:
        env = float(os.environ.get("KESS_PEAK_GBS", "0"))
    except ValueError:
        env = 0.0
    if env > 0:
        return env, "KESS_PEAK_GBS"
    if device == "cuda":
        return 3000.0, "H100 SXM measured copy, as kess::perf::ceilings"
    return 20.0, "assumed, as kess::perf::ceilings"


def _git(*words):
    import subprocess
    try:
        return subprocess.run(("git",) + words, cwd=os.path.dirname(os.path.abspath(__file__)),
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:  # noqa: BLE001 (no git: the commit is unknown)
        return ""


def gbench_context(args, out, gbs_source):
    """The context perf/scripts/perf_pages.py reads, with the keys perf/common/bench_main.cpp
    writes (those of Kokkos and kess's build describe this Python run instead)."""
    import datetime
    import shlex
    import socket
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    prefixes = ("KESS_", "OPENBLAS_", "OMP_", "MKL_", "GOTO_", "BLIS_", "CUDA_VISIBLE_DEVICES",
                "KOKKOS_")
    env = " ".join(sorted("%s=%s" % kv for kv in os.environ.items() if kv[0].startswith(prefixes)))
    try:
        import numpy
        import scipy
        libs = "numpy %s, scipy %s" % (numpy.__version__, scipy.__version__)
    except ImportError:
        libs = "numpy, scipy"
    if "torch" in out:
        libs += ", torch %s" % out["torch"]
    ctx = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": os.path.abspath(sys.argv[0]),
        "num_cpus": os.cpu_count() or 0,
        "library_build_type": "release",
        "kess_version": "peer run (perf/scripts/lobpcg_peers.py)",
        "kess_git_commit": _git("rev-parse", "--short", "HEAD") or "unknown",
        "kess_git_dirty": "yes" if _git("status", "--porcelain", "--untracked-files=no") else "no",
        "kess_build_type": "Python %s" % platform.python_version(),
        "kess_compiler": platform.python_implementation(),
        "kess_command": "python3 " + shlex.join(sys.argv),
        "kess_environment": env,
        "kess_mpi_ranks": "1",
        "kess_cpu_model": cpu,
        "kess_hardware_threads": str(os.cpu_count() or 0),
        "kess_kokkos_version": "none (%s)" % libs,
        "kess_kokkos_backend": "torch CUDA" if args.device == "cuda" else "numpy/scipy",
        "kess_kokkos_host_backend": "Python",
        "kess_kokkos_host_concurrency": str(os.cpu_count() or 0),
        "kess_host_threads": str(os.cpu_count() or 0),
        "kess_kokkos": libs,
        "kess_blas": "numpy's BLAS (numpy.show_config())",
        "kess_ceilings": "%s GB/s (%s)" % (_peak_gbs(args.device)[0], gbs_source),
        "kess_peer": out.get("peer", ""),
    }
    if out.get("gpu"):
        ctx["kess_gpu"] = out["gpu"]
    try:
        ctx["load_avg"] = list(os.getloadavg())
    except OSError:
        pass
    return ctx


def gbench_entries(args, out, A):
    """The benchmark entries: one per timed run (repetitions of the SpMM, one LOBPCG call), named
    as perf/bench/lobpcg's so that perf_pages.py joins them to kess's rows."""
    problem = ("L:%d" % args.L) if args.generate == "heisenberg" else ("n:%d" % A.shape[0])
    gbs, _ = _peak_gbs(args.device)
    entries = []

    def add(name, seconds, counters, label, rep=0, reps=1):
        e = {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
             "run_type": "iteration", "repetitions": reps, "repetition_index": rep, "threads": 1,
             "iterations": 1, "real_time": seconds, "cpu_time": seconds, "time_unit": "s"}
        e.update(counters)
        e["label"] = label
        entries.append(e)

    def failed(name, message):
        entries.append({"name": name, "family_index": 0, "per_family_instance_index": 0,
                        "run_name": name, "run_type": "iteration", "repetitions": 1,
                        "repetition_index": 0, "threads": 1, "error_occurred": True,
                        "error_message": message})

    spmm = out.get("spmm")
    if spmm:
        k = spmm["k"]
        fb = spmm["floor_bytes"]
        floor = fb / (gbs * 1e9)
        stored = spmm.get("stored_nonzeros", (A.nnz + getattr(A, "_kess_diag", 0)) // 2)
        if args.device == "cuda":
            variants = [("BM_spmm_torch_csr", spmm, "torch CSR @ dense, X row-major"),
                        ("BM_spmm_torch_csr_colmajor", spmm.get("column_major", {}),
                         "torch CSR @ dense, X column-major")]
        else:
            variants = [("BM_spmm_scipy_csr", spmm, "scipy CSR @ dense, X row-major")]
        for base, entry, what in variants:
            name = "%s/%s/k:%d" % (base, problem, k)
            if "times" not in entry:
                failed(name, entry.get("error", spmm.get("error", "not run")))
                continue
            times = entry["times"]
            for i, t in enumerate(times):
                add(name, t, {"GBs": fb / t * 1e-9, "floor_s": floor, "floor_ratio": t / floor,
                              "n": A.shape[0], "stored_nnz": stored},
                    "%s, %s" % (out["matrix"], what), i, len(times))
    if args.nev > 0:
        impl = "torch" if args.device == "cuda" else "scipy"
        name = "BM_lobpcg_%s/%s/nev:%d/block:%d/precond:0" % (impl, problem, args.nev, args.block)
        if "eigenvalues" in out and "seconds" in out:
            add(name, out["seconds"],
                {"lobpcg_iterations": out.get("iterations") or 0,
                 "converged": 1 if out.get("converged") == "yes" else 0,
                 "eigenvalue0": out["eigenvalues"][0], "n": A.shape[0],
                 "max_residual": max(out["residuals"])},
                "%s, %s%s" % (out["matrix"], out.get("peer", impl),
                              ", %s" % out["matrix_format"] if "matrix_format" in out else ""))
        else:
            failed(name, out.get("error", out.get("skipped", "not run")))
    return entries


def write_gbench(path, args, out, A):
    """Writes FILE, or adds to it when it holds an earlier run's (entries of the same name
    replaced, the commands joined by " && ", the context otherwise this run's)."""
    ctx = gbench_context(args, out, _peak_gbs(args.device)[1])
    entries = gbench_entries(args, out, A)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        mine = {e["name"] for e in entries}
        entries = [e for e in old.get("benchmarks", []) if e.get("name") not in mine] + entries
        before = old.get("context", {}).get("kess_command", "")
        if before and before != ctx["kess_command"]:
            ctx["kess_command"] = before + " && " + ctx["kess_command"]
    for i, e in enumerate(entries):
        e["family_index"] = i
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"context": ctx, "benchmarks": entries}, f, indent=2)
        f.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--matrix", help="Matrix Market file (symmetric or general)")
    src.add_argument("--generate", choices=["heisenberg", "laplace2d"],
                     help="build kess's generated matrix in memory instead")
    p.add_argument("--L", type=int, help="heisenberg: sites")
    p.add_argument("--sz2", type=int, help="heisenberg: 2 S^z (default L mod 2)")
    p.add_argument("--open", action="store_true", help="heisenberg: open chain (default ring)")
    p.add_argument("--nx", type=int, help="laplace2d: interior points in x")
    p.add_argument("--ny", type=int, help="laplace2d: interior points in y (default --nx)")
    p.add_argument("--nev", type=int, default=4, help="eigenpairs wanted (0: spmm only)")
    p.add_argument("--block", type=int, default=0, help="block size (default: nev)")
    p.add_argument("--tol", type=float, default=1e-8, help="kess's relative tolerance")
    p.add_argument("--largest", action="store_true")
    p.add_argument("--maxiter", type=int, default=1000)
    p.add_argument("--norm", type=float, default=0.0,
                   help="||H|| of the tolerance (default: ||H||_1)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--spmm", type=int, default=0, metavar="K",
                   help="also time torch's CSR SpMM with K columns (cuda)")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--torch-shift", type=float, default=0.0, metavar="S",
                   help="run torch.lobpcg on H + S I (e.g. S = ||H||_1 where eigenvalues are "
                        "negative: torch's test divides by A_norm + lambda)")
    p.add_argument("--torch-index", choices=["int32", "int64"], default="int32",
                   help="index type of torch's CSR (int64 where int32 cannot hold it or fails)")
    p.add_argument("--compare", metavar="FILE",
                   help="eigenvalues to compare with (kess-run lobpcg --values); exit code 3 when "
                        "one differs by more than 10 tol (||H|| + |lambda|)")
    p.add_argument("--gbench-out", metavar="FILE",
                   help="also write the timings as Google Benchmark JSON (BM_lobpcg_scipy|torch/"
                        "L:<L>/nev/block/precond:0, BM_spmm_torch_csr[_colmajor]|scipy_csr/L/k; "
                        "n:<n> instead of L:<L> for --matrix and laplace2d) for perf_pages.py")
    args = p.parse_args()
    args.block = args.block or args.nev
    if args.nev < 0 or (args.nev > 0 and args.block < args.nev):
        sys.exit("lobpcg_peers.py: need 0 <= nev <= block")

    heis = args.L is not None or args.sz2 is not None or args.open
    lap = args.nx is not None or args.ny is not None
    if (args.generate != "heisenberg" and heis) or (args.generate != "laplace2d" and lap):
        sys.exit("lobpcg_peers.py: --L/--sz2/--open go with --generate heisenberg, --nx/--ny "
                 "with --generate laplace2d")
    if (args.generate == "heisenberg" and args.L is None) or (
            args.generate == "laplace2d" and args.nx is None):
        sys.exit("lobpcg_peers.py: --generate %s needs %s" %
                 (args.generate, "--L" if args.generate == "heisenberg" else "--nx"))

    import numpy as np
    t = time.perf_counter()
    if args.matrix:
        A, name = read_matrix(args.matrix), args.matrix
    elif args.generate == "heisenberg":
        args.sz2 = args.L % 2 if args.sz2 is None else args.sz2
        A, name = gen_heisenberg(args.L, args.sz2, not args.open)
    else:
        A, name = gen_laplace2d(args.nx, args.nx if args.ny is None else args.ny)
    read_s = time.perf_counter() - t
    n = A.shape[0]
    if args.nev > n:
        sys.exit("lobpcg_peers.py: --nev %d exceeds the order %d" % (args.nev, n))
    hnorm = args.norm or norm1(A)
    out = {"matrix": name, "n": n, "nonzeros": int(A.nnz), "nev": args.nev,
           "block_size": args.block, "tol": args.tol, "largest": args.largest,
           "norm": hnorm, "norm_source": "--norm" if args.norm else "||H||_1",
           "read_seconds": read_s, "python": platform.python_version(),
           "index_dtype": str(A.indices.dtype),
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
           "threads": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                  "MKL_NUM_THREADS") if k in os.environ}}
    if args.device == "cpu":
        if args.spmm:
            X = np.random.default_rng(args.seed).uniform(-1, 1, size=(n, args.spmm))
            times = []
            for _ in range(args.repeat + 1):
                t = time.perf_counter()
                A @ X
                times.append(time.perf_counter() - t)
            times = times[1:]
            med = sorted(times)[len(times) // 2]
            out["spmm"] = {"k": args.spmm, "seconds": med, "times": times,
                           "floor_bytes": floor_bytes(A, args.spmm),
                           "gbs": floor_bytes(A, args.spmm) / med * 1e-9,
                           "what": "scipy CSR @ dense on the full matrix"}
        if args.nev > 0:
            run_scipy(A, args, hnorm, out)
    else:
        try:
            import torch
            cuda = torch.cuda.is_available()
        except ImportError:
            cuda = False
        if not cuda:
            out.update({"peer": "torch.lobpcg", "skipped": "torch with CUDA is not available"})
        else:
            run_torch(A, args, hnorm, out)
    ok = True
    if args.compare and "eigenvalues" in out:
        with open(args.compare) as f:
            ref = [float(x) for x in f.read().split()]
        mine = out["eigenvalues"]
        diffs = [abs(a - b) for a, b in zip(mine, ref)]
        ok = len(ref) == len(mine) and all(
            d <= 10 * args.tol * (hnorm + abs(r)) for d, r in zip(diffs, ref))
        out["compare"] = {"file": args.compare, "max_abs_diff": max(diffs) if diffs else None,
                          "ok": ok}
    if args.gbench_out:
        write_gbench(args.gbench_out, args, out, A)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.exit(4 if "error" in out else 0 if ok else 3)


if __name__ == "__main__":
    main()
