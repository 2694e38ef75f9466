// The Householder chase's compact-WY blocks on FP64 tensor cores (CUDA, sm_80 and newer).
//
// Same algorithm and data as the `fast` variant of hh_chase.hpp (blocks of M = 32 reflectors of
// length B = 64, X_w <- X_w - W (T (W^T X_w)) last block first), with the three products of a
// block done by warp-level FP64 MMAs instead of scalar FMAs. Two kernels:
//  - sm_90 (hh_chase_mma_kernel): m16n8k16 MMAs in the transposed form (z^T = X_w^T W, ...); each
//    warp owns 16 columns and keeps their whole 96-row window in registers as MMA accumulators,
//    which are also the next product's operands; shared memory holds only W and T (cp.async,
//    rings), one barrier a block, 128 columns a block of 8 warps (4 for fewer columns).
//  - sm_8x, and sm_90 with too few columns to fill the device with 4-warp blocks
//    (hh_chase_mma884_kernel): m8n8k4 MMAs, the window in shared memory, 32 columns a block.
//
// This is the one place where kess leaves Kokkos' parallel patterns: a tensor-core MMA has no
// portable spelling, and the shared memory a block needs (70-130 KB) is above what Kokkos'
// TeamPolicy grants (48 KB). Every other backend, and CUDA devices older than sm_80, run the
// portable kernels of hh_chase.hpp; the unit tests compare both on the GPU.
#pragma once

#include <kess/core/base/settings.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/mma.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdlib>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>

namespace kess::detail::eigh {

/// Shape of the tensor-core kernel. Shared memory (doubles): the window of X, column-major with a
/// padded leading dimension (C x LDS), the block's reflectors (M x LDV, V(i, j) at j LDV + i), its
/// T (M x LDT, T(j, l) at l LDT + j) and z = W^T X_w, later -T z (C x LDZ, z(l, c) at c LDZ + l).
/// The paddings make every fragment load of a half-warp hit 16 different banks.
struct HhChaseMmaShape {
  static constexpr int B = 64, M = 32, C = 32, NT = 256;
  static constexpr int S = 128;  // window slots: a power of two >= B + 2M - 1
  static constexpr int LDS = S + 4, LDV = B + 5, LDT = M + 4, LDZ = M + 4;
  static constexpr std::size_t smem_bytes =
      sizeof(double) * (std::size_t(C) * LDS + std::size_t(M) * LDV + std::size_t(M) * LDT +
                        std::size_t(C) * LDZ);
};

using core::detail::dmma_8x8x4;  // launched only where hh_chase_mma_supported

/// One thread block per 32 columns of X; V is b x n contiguous, T is M x M x nblk (LayoutLeft),
/// X(r, c) at X[r + c ldx]. Eight warps: in the first two products warp w owns rows
/// 8 (w % 4) .. +7 of z and columns 16 (w / 4) .. +15; in the update rows 24 (w % 4) .. +23 of the
/// window and the same columns.
template <class Shape>
__global__ void __launch_bounds__(Shape::NT, 2)
    hh_chase_mma884_kernel(const double* __restrict__ V, const double* __restrict__ T,
                        double* __restrict__ X, long long ldx, int n, int NC) {
  constexpr int B = Shape::B, M = Shape::M, C = Shape::C, NT = Shape::NT, S = Shape::S;
  constexpr int LDS = Shape::LDS, LDV = Shape::LDV, LDT = Shape::LDT, LDZ = Shape::LDZ;
  constexpr int PV = B * M / NT, PT = M * M / NT, PX = M * C / NT;
  static_assert(B * M % NT == 0 && M * M % NT == 0 && M * C % NT == 0, "prefetch split");
  extern __shared__ double smem[];
  double* xs = smem;
  double* vs = xs + C * LDS;
  double* ts = vs + M * LDV;
  double* zs = ts + M * LDT;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int col0 = blockIdx.x * C;
  const int nc = min(C, NC - col0);
  const int nblk = (n + M - 1) / M;
  auto xg = [&](int r, int c) -> double& { return X[r + (col0 + c) * ldx]; };
  auto slot = [](int r) { return r & (S - 1); };

  // Rows past the end of X are read (times zero) in a partial block: start from zeros.
  for (int e = tid; e < C * LDS; e += NT) xs[e] = 0.0;
  __syncthreads();
  {  // the last (possibly partial) block and its window, rows k0 .. b + n - 2
    const int p = nblk - 1, k0 = p * M, msz = n - k0, rows = B + msz - 1;
    for (int e = tid; e < B * M; e += NT) {
      const int j = e / B, i = e % B;
      vs[j * LDV + i] = j < msz ? V[std::size_t(k0 + j) * B + i] : 0.0;
    }
    for (int e = tid; e < M * M; e += NT) ts[(e / M) * LDT + e % M] = T[std::size_t(p) * M * M + e];
    for (int e = tid; e < rows * C; e += NT) {
      const int c = e / rows, r = e % rows;
      xs[c * LDS + slot(k0 + r)] = c < nc ? xg(k0 + r, c) : 0.0;
    }
  }
  __syncthreads();

  const int j0 = 8 * (warp & 3);   // products 1 and 2: rows j0 .. j0+7 of z
  const int c0 = 16 * (warp >> 2); // all products: columns c0 .. c0+15 (two 8-column tiles)
  const int R0 = 24 * (warp & 3);  // update: window rows R0 .. R0+23 (three 8-row tiles)
  double pv[PV], pt[PT], px[PX];
  for (int p = nblk - 1; p >= 0; --p) {
    const int k0 = p * M, msz = min(M, n - k0);
    if (p > 0) {  // block p-1 (full) into registers; stored after this block is applied
      const std::size_t vb = std::size_t(k0 - M) * B, tb = std::size_t(p - 1) * M * M;
#pragma unroll
      for (int q = 0; q < PV; ++q) pv[q] = V[vb + tid + q * NT];
#pragma unroll
      for (int q = 0; q < PT; ++q) pt[q] = T[tb + tid + q * NT];
#pragma unroll
      for (int q = 0; q < PX; ++q) {
        const int e = tid + q * NT, r = e % M, c = e / M;
        px[q] = c < nc ? xg(k0 - M + r, c) : 0.0;
      }
    }
    // 1. z = W^T X_w, W(r, j) = V(r - j, j): row j of z needs window rows j .. j + B - 1.
    {
      double z[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
      const int j = j0 + g;
#pragma unroll 2
      for (int kk = j0 / 4; kk <= (j0 + 7 + B - 1) / 4; ++kk) {
        const int r = 4 * kk + t4, i = r - j;
        const double a = (i >= 0 && i < B) ? vs[j * LDV + i] : 0.0;
        const int s = slot(k0 + r);
        dmma_8x8x4(z[0], a, xs[(c0 + g) * LDS + s]);
        dmma_8x8x4(z[1], a, xs[(c0 + 8 + g) * LDS + s]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 2; ++u) zs[(c0 + 8 * h + 2 * t4 + u) * LDZ + j0 + g] = z[h][u];
    }
    __syncthreads();
    // 2. z <- -T z (T upper triangular: row j needs l >= j).
    {
      double y[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
      const int j = j0 + g;
#pragma unroll 2
      for (int kk = j0 / 4; kk < M / 4; ++kk) {
        const int l = 4 * kk + t4;
        const double a = ts[l * LDT + j];
        dmma_8x8x4(y[0], a, zs[(c0 + g) * LDZ + l]);
        dmma_8x8x4(y[1], a, zs[(c0 + 8 + g) * LDZ + l]);
      }
      __syncthreads();
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 2; ++u) zs[(c0 + 8 * h + 2 * t4 + u) * LDZ + j0 + g] = -y[h][u];
    }
    __syncthreads();
    // 3. X_w <- X_w + W (-T z); window rows >= B-1 are final after this block.
    {
      double acc[3][2][2];
#pragma unroll
      for (int rt = 0; rt < 3; ++rt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int u = 0; u < 2; ++u)
            acc[rt][h][u] = xs[(c0 + 8 * h + 2 * t4 + u) * LDS + slot(k0 + R0 + 8 * rt + g)];
      const int klo = max(0, R0 - (B - 1)) / 4, khi = min(M - 1, R0 + 23) / 4;
      for (int kk = klo; kk <= khi; ++kk) {
        const int j = 4 * kk + t4;
        double a[3];
#pragma unroll
        for (int rt = 0; rt < 3; ++rt) {
          const int i = R0 + 8 * rt + g - j;
          a[rt] = (i >= 0 && i < B) ? vs[j * LDV + i] : 0.0;
        }
        const double b0 = zs[(c0 + g) * LDZ + j], b1 = zs[(c0 + 8 + g) * LDZ + j];
#pragma unroll
        for (int rt = 0; rt < 3; ++rt) {
          dmma_8x8x4(acc[rt][0], a[rt], b0);
          dmma_8x8x4(acc[rt][1], a[rt], b1);
        }
      }
      const bool last = p == 0;
      const int wrows = B + msz - 1;
#pragma unroll
      for (int rt = 0; rt < 3; ++rt) {
        const int r = R0 + 8 * rt + g;
        if (r >= wrows) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int c = c0 + 8 * h + 2 * t4 + u;
            if (last || r >= B - 1) {
              if (c < nc) xg(k0 + r, c) = acc[rt][h][u];
            } else {
              xs[c * LDS + slot(k0 + r)] = acc[rt][h][u];
            }
          }
      }
    }
    if (p == 0) break;
    __syncthreads();  // everyone is done with this block's V, T and z
#pragma unroll
    for (int q = 0; q < PV; ++q) {
      const int e = tid + q * NT;
      vs[(e / B) * LDV + e % B] = pv[q];
    }
#pragma unroll
    for (int q = 0; q < PT; ++q) {
      const int e = tid + q * NT;
      ts[(e / M) * LDT + e % M] = pt[q];
    }
#pragma unroll
    for (int q = 0; q < PX; ++q) {
      const int e = tid + q * NT;
      xs[(e / M) * LDS + slot(k0 - M + e % M)] = px[q];
    }
    __syncthreads();
  }
}

/// d += a b for one 16x8x16 FP64 tile (sm_90): a_i = A(g + 8 (i % 2), t + 4 (i / 2)),
/// b_s = B(t + 4 s, g), d_i = D(g + 8 (i / 2), 2 t + i % 2), g = lane / 4, t = lane % 4 (PTX ISA,
/// "Matrix Fragments for mma.m16n8k16 with floating point type"). The kernel below never uses the
/// k order of the instruction: its "slot" (t, s) holds the index kslot(t, s) of the product's sum in
/// both operands.
__device__ __forceinline__ void dmma_16x8x16(double (&d)[4], const double (&a)[8],
                                             const double (&b)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
      "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
        "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#else
  (void)d;
  (void)a;
  (void)b;
  __trap();  // never launched below sm_90 (hh_chase_mma_launch)
#endif
}

/// 8-byte asynchronous copy global -> shared (zeros when !valid), and its group fences.
__device__ __forceinline__ void cp_async8(double* dst, const double* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(src),
               "r"(valid ? 8 : 0)
               : "memory");
#else
  *dst = valid ? *src : 0.0;
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

/// Shape of the register-window kernel (sm_90): WARPS warps, 16 columns of X each. Each warp keeps
/// its 16 columns of the 96-row window in registers, as the accumulators of X_w^T (16 x 96) =
/// twelve 16x8 tiles, for the whole run; shared memory holds the block's W (32 x 96, W(r, j) =
/// V(r - j, j), zeros outside the band written once, rows j with r ^ swz(j) so that both products
/// read it without bank conflicts) and T (column-major), in rings of NW and 2 buffers, and 16
/// staging slots a thread (NS sets) for the window rows of the next block. SKEW: the upper half of
/// the warps runs half a block behind the lower half (see the kernel).
template <int WARPS, bool SKEW = false>
struct HhChaseMmaRegShape {
  static constexpr int B = 64, M = 32, NT = 32 * WARPS, C = 16 * WARPS;
  static constexpr int LDW = 104, LDT = 34;  // LDW = 8 mod 16, LDT = 2 mod 8: no bank conflicts
  static constexpr int WSZ = M * LDW, TSZ = M * LDT;
  static constexpr int NW = SKEW ? 3 : 2, NS = SKEW ? 2 : 1;
  static constexpr std::size_t smem_bytes =
      sizeof(double) * (std::size_t(NW) * WSZ + 2 * TSZ + 16 * NS * NT);
};

/// Index of W(r, j) in a W buffer (row j of W^T, r swizzled by bits 1-2 of j).
__device__ __forceinline__ constexpr int hh_wsw(int j, int r) {
  return j * 104 + (r ^ (((j >> 1) & 3) << 2));
}
/// The index a fragment slot (t, s) of a 16-long sum stands for: the slots a thread holds as
/// accumulator elements (2t, 2t+1 of two adjacent 8-column tiles), so that accumulators become the
/// next product's A operand without moving.
__device__ __forceinline__ constexpr int hh_kslot(int t, int s) {
  return 2 * t + (s & 1) + 8 * (s >> 1);
}
/// Zeroes four 16 x 8 accumulator tiles (a thread's 4 x 4 doubles).
__device__ __forceinline__ void hh_zero(double (&acc)[4][4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[q][e] = 0.0;
}
/// A fragment (16 x 16) from two adjacent accumulator tiles lo (sum indices 0-7), hi (8-15).
__device__ __forceinline__ void hh_afrag(double (&a)[8], const double (&lo)[4],
                                         const double (&hi)[4]) {
  a[0] = lo[0]; a[1] = lo[2]; a[2] = lo[1]; a[3] = lo[3];
  a[4] = hi[0]; a[5] = hi[2]; a[6] = hi[1]; a[7] = hi[3];
}

/// What one launch of the register-window kernel applies. Block i runs task t0 + i of a sequence
/// in which task t is column block t % ncb (columns C t % ncb ..) of sweep t / ncb; a launch of at
/// most ncb blocks meets two sweeps at most, s = t0 / ncb (V0, T0, X0, n0) and s + 1 (V1, ...).
/// A plain launch: t0 = 0, ncb = its number of blocks.
struct HhMmaJob {
  const double* V0;
  const double* T0;
  double* X0;
  const double* V1;
  const double* T1;
  double* X1;
  long long ldx;
  long long t0;
  int n0, n1, ncb, NC;
};

/// Y = H_0 ... H_{n-1} X as in hh_chase_mma884_kernel, one thread block per 16 WARPS columns, the
/// three products of a block as m16n8k16 MMAs in the transposed form
///   z^T = X_w^T W (16 x 32 per warp), y^T = -z^T T^T, X_w^T += y^T W^T,
/// so that X_w^T, z^T and y^T stay in registers (each product's accumulators are the next one's A
/// operand) and every warp works on its own columns: one barrier a block, for W and T.
/// SKEW (8 warps): warps 4-7 do product 3 of block p+1 before products 1-2 of block p, between the
/// same two barriers in which warps 0-3 do products 1-3 of block p, so that the two warps of a
/// scheduler are in different phases (one's MMA chain waits while the other's MMAs issue).
template <int WARPS, bool SKEW>
__global__ void __launch_bounds__(32 * WARPS, SKEW ? 1 : 8 / WARPS)
    hh_chase_mma_kernel(const HhMmaJob job) {
  const long long task = job.t0 + blockIdx.x;
  const bool second = task / job.ncb != job.t0 / job.ncb;
  const double* __restrict__ V = second ? job.V1 : job.V0;
  const double* __restrict__ T = second ? job.T1 : job.T0;
  double* __restrict__ X = second ? job.X1 : job.X0;
  const int n = second ? job.n1 : job.n0, NC = job.NC;
  const long long ldx = job.ldx;
  const int cblock = static_cast<int>(task % job.ncb);
  using Sh = HhChaseMmaRegShape<WARPS, SKEW>;
  constexpr int B = Sh::B, M = Sh::M, NT = Sh::NT, C = Sh::C, LDT = Sh::LDT;
  constexpr int WSZ = Sh::WSZ, TSZ = Sh::TSZ, NW = Sh::NW;
  static_assert(B * M % NT == 0 && M * M % NT == 0, "copy split");
  static_assert(!SKEW || WARPS == 8, "the skewed kernel pairs warps w and w + 4");
  extern __shared__ __align__(16) double smem[];
  double* wbuf = smem;             // NW x WSZ
  double* tbuf = smem + NW * WSZ;  // 2 x TSZ
  // Staging slots for the next block's window rows: slot e of thread i, set s at (16 s + e) NT + i.
  double* xstage = tbuf + 2 * TSZ + threadIdx.x;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const bool late = SKEW && warp >= WARPS / 2;  // runs half a block behind
  const int wcol = cblock * C + 16 * warp;  // the warp's first column
  const bool active = wcol < NC;
  const bool cok[2] = {wcol + g < NC, wcol + g + 8 < NC};
  double* xc[2] = {X + (long long)min(wcol + g, NC - 1) * ldx,
                   X + (long long)min(wcol + g + 8, NC - 1) * ldx};
  const int nblk = (n + M - 1) / M;
  auto wring = [&](int p) { return wbuf + (p % NW) * WSZ; };
  auto stage_set = [&](int p) { return xstage + (SKEW ? (p & 1) * 16 * NT : 0); };

  for (int e = tid; e < NW * WSZ; e += NT) wbuf[e] = 0.0;
  __syncthreads();
  // Block p's reflectors (zeros past the last one) and T, asynchronously, into their rings.
  auto load_block = [&](int p) {
    const int k0 = p * M, msz = min(M, n - k0);
    double* ws = wring(p);
    double* ts = tbuf + (p & 1) * TSZ;
    int zero;  // an opaque 0: the destinations are recomputed per block, not kept in registers
    asm volatile("mov.u32 %0, 0;" : "=r"(zero));
#pragma unroll
    for (int q = 0; q < B * M / NT; ++q) {
      const int e = tid + zero + q * NT, j = e / B, i = e % B;
      const bool ok = j < msz;
      cp_async8(ws + hh_wsw(j, i + j), ok ? V + (std::size_t(k0 + j) * B + i) : V, ok);
    }
#pragma unroll
    for (int q = 0; q < M * M / NT; ++q) {
      const int e = tid + q * NT;
      cp_async8(ts + (e / M) * LDT + e % M, T + std::size_t(p) * M * M + e, true);
    }
    cp_async_commit();
  };
  // Block p's new window rows 0 .. 31 (X rows p M .. p M + 31) into this thread's staging set.
  auto stage_rows = [&](int p) {
    double* st = stage_set(p);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 2; ++u)
          cp_async8(st + (4 * nt + 2 * h + u) * NT, xc[h] + (p * M + 8 * nt + 2 * t + u), cok[h]);
    cp_async_commit();
  };

  // xr[nt][2h + u] = X(k0 + 8 nt + 2t + u, column wcol + g + 8h): window rows 0 .. 95 (row 95 and
  // rows past the end of X are zero or stale, and only ever multiplied by W's zero rows).
  double xr[12][4];
  double yq[4][4];  // y^T = -(T W^T X_w)^T of the block being applied
  {
    const int k0 = (nblk - 1) * M, wrows = B + n - k0 - 1;
#pragma unroll
    for (int nt = 0; nt < 12; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int r = 8 * nt + 2 * t + u;
          xr[nt][2 * h + u] = (cok[h] && r < wrows) ? xc[h][k0 + r] : 0.0;
        }
  }
  // Products 1 and 2 of block p: yq = -(T (W^T X_w))^T.
  auto products12 = [&](int p) {
    const double* ws = wring(p);
    // Per-thread bases of the fragment loads (the rest of each address is a constant): product 1
    // reads W(16 kc + 8 hp + 2t + {0, 1}, 8q + g) at w1[hp] + 832 q + 16 kc, product 2
    // T(8q + g, 16 lc + kslot(t, s)) at t2 + (16 lc + kslot(0, s)) LDT + 8q.
    const double* w1[2] = {ws + hh_wsw(g, 2 * t), ws + hh_wsw(g, 8 + 2 * t)};
    const double* t2 = tbuf + (p & 1) * TSZ + 2 * t * LDT + g;
    // 1. z^T = X_w^T W: sum over window rows r (chunks kc of 16), columns j in tiles q of 8;
    //    W(r, j) = 0 unless j <= r <= j + 63, so tiles q = 0, 1 need kc <= 4, q = 2, 3 kc >= 1.
    double zq[4][4];
    hh_zero(zq);
#pragma unroll
    for (int kc = 0; kc < 6; ++kc) {
      double a[8];
      hh_afrag(a, xr[2 * kc], xr[2 * kc + 1]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (q < 2 ? kc > 4 : kc < 1) continue;
        const double2 b01 = *reinterpret_cast<const double2*>(w1[0] + 832 * q + 16 * kc);
        const double2 b23 = *reinterpret_cast<const double2*>(w1[1] + 832 * q + 16 * kc);
        const double b[4] = {b01.x, b01.y, b23.x, b23.y};
        dmma_16x8x16(zq[q], a, b);
      }
    }
    // 2. y^T = -z^T T^T: y(j) = sum over l >= j of T(j, l) z(l) (T upper triangular).
    hh_zero(yq);
#pragma unroll
    for (int lc = 0; lc < 2; ++lc) {
      double a[8];
      hh_afrag(a, zq[2 * lc], zq[2 * lc + 1]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (lc == 0 && q >= 2) continue;
        double b[4];
#pragma unroll
        for (int s = 0; s < 4; ++s) b[s] = t2[(16 * lc + hh_kslot(0, s)) * LDT + 8 * q];
        dmma_16x8x16(yq[q], a, b);
      }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int e = 0; e < 4; ++e) yq[q][e] = -yq[q][e];
  };
  // Product 3 of block p: X_w^T += y^T W^T, sum over j (chunks jc of 16), window rows in tiles nt
  // of 8 (j < 16 reaches rows 0 .. 78, nt <= 9; j >= 16 rows 16 .. 94, nt >= 2). W(8 nt + g,
  // 16 jc + kslot(t, s)) is at w3[nt % 2] + (16 jc + kslot(0, s)) 104 + 16 (nt / 2).
  auto product3 = [&](int p) {
    const double* ws = wring(p);
    const double* w3[2] = {ws + hh_wsw(2 * t, g), ws + hh_wsw(2 * t, 8 + g)};
#pragma unroll
    for (int jc = 0; jc < 2; ++jc) {
      double a[8];
      hh_afrag(a, yq[2 * jc], yq[2 * jc + 1]);
#pragma unroll
      for (int nt = 0; nt < 12; ++nt) {
        if (jc == 0 ? nt > 9 : nt < 2) continue;
        double b[4];
#pragma unroll
        for (int s = 0; s < 4; ++s)
          b[s] = w3[nt & 1][(16 * jc + hh_kslot(0, s)) * 104 + 16 * (nt >> 1)];
        dmma_16x8x16(xr[nt], a, b);
      }
    }
  };
  // After block p: write its final rows (>= B - 1; all rows after block 0; row 95 never), then
  // slide the window (old rows 0 .. 63 are block p-1's rows 32 .. 95) and take the staged rows.
  auto finish = [&](int p, bool wait) {
    const bool last = p == 0;
    const int k0 = p * M, wrows = min(B + M - 1, B + n - k0 - 1);
#pragma unroll
    for (int nt = 0; nt < 12; ++nt) {
      if (nt < 7 && !last) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int r = 8 * nt + 2 * t + u;
          if (cok[h] && r < wrows && (last || r >= B - 1)) xc[h][k0 + r] = xr[nt][2 * h + u];
        }
    }
    if (last) return;
    if (wait) cp_async_wait_all();  // this thread's staged rows are in
    const double* st = stage_set(p - 1);
#pragma unroll
    for (int nt = 11; nt >= 4; --nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) xr[nt][e] = xr[nt - 4][e];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) xr[nt][e] = st[(4 * nt + e) * NT];
  };

  load_block(nblk - 1);
  for (int p = nblk - 1;; --p) {
    cp_async_wait_all();
    // Block p's W and T are in; everyone is done with the buffers of block p + 2 (W: p + 1 when
    // not skewed), with T of block p + 1 and with the staged rows of block p + 1.
    __syncthreads();
    if (p > 0) load_block(p - 1);
    if (late && p < nblk - 1) {  // product 3 of block p + 1 (its rows for block p staged at p + 1)
      if (active) product3(p + 1);
      finish(p + 1, false);
    }
    if (p > 0) stage_rows(p - 1);
    if (active) products12(p);
    if (!late) {
      if (active) product3(p);
      finish(p, true);
    }
    if (p == 0) break;
  }
  if (late) {
    if (active) product3(0);
    finish(0, false);
  }
}

/// Whether exec's device has FP64 tensor cores (compute capability 8.0 or newer).
inline bool hh_chase_mma_supported(const Kokkos::Cuda& exec) {
  return exec.cuda_device_prop().major >= 8;
}

namespace hh_mma {
template <class Kernel>
void reserve_smem(Kernel kernel, std::size_t bytes) {
  const cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "hh_chase_apply",
                "cannot reserve " + std::to_string(bytes) +
                    " bytes of shared memory for the tensor-core kernel: " + cudaGetErrorString(err));
}
inline void check_launch() {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "hh_chase_apply",
                std::string("tensor-core kernel launch failed: ") + cudaGetErrorString(err));
}
/// `blocks` blocks of the register-window kernel on `job` (HhMmaJob's task numbering).
template <int WARPS, bool SKEW = false>
void launch_reg_job(const Kokkos::Cuda& exec, const HhMmaJob& job, int blocks) {
  using Sh = HhChaseMmaRegShape<WARPS, SKEW>;
  static const bool configured =
      (reserve_smem(hh_chase_mma_kernel<WARPS, SKEW>, Sh::smem_bytes), true);
  (void)configured;
  hh_chase_mma_kernel<WARPS, SKEW>
      <<<unsigned(blocks), Sh::NT, Sh::smem_bytes, exec.cuda_stream()>>>(job);
  check_launch();
}
/// One sweep: a block per C = 16 WARPS columns.
template <int WARPS, bool SKEW = false>
void launch_reg(const Kokkos::Cuda& exec, const double* V, const double* T, double* X,
                long long ldx, int n, int NC) {
  const int blocks = (NC + HhChaseMmaRegShape<WARPS, SKEW>::C - 1) / HhChaseMmaRegShape<WARPS, SKEW>::C;
  launch_reg_job<WARPS, SKEW>(exec, HhMmaJob{V, T, X, V, T, X, ldx, 0, n, n, blocks, NC}, blocks);
}
inline void launch_884(const Kokkos::Cuda& exec, const double* V, const double* T, double* X,
                       long long ldx, int n, int NC) {
  using Shape = HhChaseMmaShape;
  static const bool configured =
      (reserve_smem(hh_chase_mma884_kernel<Shape>, Shape::smem_bytes), true);
  (void)configured;
  const unsigned blocks = static_cast<unsigned>((NC + Shape::C - 1) / Shape::C);
  hh_chase_mma884_kernel<Shape><<<blocks, Shape::NT, Shape::smem_bytes, exec.cuda_stream()>>>(
      V, T, X, ldx, n, NC);
  check_launch();
}
}  // namespace hh_mma

/// Whether the register-window kernel runs on exec's device (built for sm_90, device 9.0+).
inline bool hh_chase_mma_reg_supported(const Kokkos::Cuda& exec) {
  static const bool sm90 = [] {
    cudaFuncAttributes fa{};
    return cudaFuncGetAttributes(&fa, hh_chase_mma_kernel<8, false>) == cudaSuccess &&
           fa.binaryVersion >= 90;
  }();
  return sm90 && exec.cuda_device_prop().major >= 9;
}

/// Which kernel hh_chase_mma_launch runs for NC columns: 9 (8 warps, skewed), 8, 4 or 2 warps a
/// block (the register-window kernel, sm_90), or 0 (the m8n8k4 kernel). Devices of compute
/// capability 9.0+ (m16n8k16 FP64 MMAs) run the register-window kernel: 8 warps a block (skewed)
/// where that still gives about every multiprocessor a block, else 4 where that does; fewer
/// columns (NC < 0.9 x 64 x multiprocessors, e.g. 20% of the vectors at n = 16384) and 8.x run the
/// m8n8k4 kernel, 32 columns a block, which is faster there than 2-warp blocks
/// (docs/performance/eigh.md).
/// KESS_HH_MMA = 884 | 2 | 4 | 8 | 9 (8, skewed) forces one (tuning and A/B runs).
inline int hh_chase_mma_pick(const Kokkos::Cuda& exec, int NC) {
  const int forced = core::settings::hh_mma();
  if (forced == 884 || !hh_chase_mma_reg_supported(exec)) return 0;
  if (forced == 2 || forced == 4 || forced == 8 || forced == 9) return forced;
  const int sms = exec.cuda_device_prop().multiProcessorCount;
  auto blocks = [&](int w) { return (NC + 16 * w - 1) / (16 * w); };
  return 10 * blocks(8) >= 9 * sms ? 9 : 10 * blocks(4) >= 9 * sms ? 4 : 0;
}

/// Columns a block of the kernel `warps` (hh_chase_mma_pick) takes.
inline int hh_chase_mma_cols(int warps) {
  return warps == 0 ? HhChaseMmaShape::C : 16 * (warps == 9 ? 8 : warps);
}

/// Enqueues the kernel on exec's stream. V: b x n contiguous (b = 64), T: 32 x 32 x ceil(n/32)
/// contiguous, X: (b + n - 1) x NC with leading dimension ldx; the kernel of hh_chase_mma_pick.
inline void hh_chase_mma_launch(const Kokkos::Cuda& exec, const double* V, const double* T,
                                double* X, long long ldx, int n, int NC) {
  switch (hh_chase_mma_pick(exec, NC)) {
    case 9: hh_mma::launch_reg<8, true>(exec, V, T, X, ldx, n, NC); break;
    case 8: hh_mma::launch_reg<8>(exec, V, T, X, ldx, n, NC); break;
    case 4: hh_mma::launch_reg<4>(exec, V, T, X, ldx, n, NC); break;
    case 2: hh_mma::launch_reg<2>(exec, V, T, X, ldx, n, NC); break;
    default: hh_mma::launch_884(exec, V, T, X, ldx, n, NC);
  }
}

/// One launch of the schedule over all sweeps (hh_chase_rounds): `blocks`
/// blocks of the register-window kernel `warps` (2, 4, 8 or 9), running tasks job.t0 .. of
/// HhMmaJob's numbering.
inline void hh_chase_mma_round(const Kokkos::Cuda& exec, int warps, const HhMmaJob& job,
                               int blocks) {
  switch (warps) {
    case 9: hh_mma::launch_reg_job<8, true>(exec, job, blocks); break;
    case 8: hh_mma::launch_reg_job<8, false>(exec, job, blocks); break;
    case 4: hh_mma::launch_reg_job<4, false>(exec, job, blocks); break;
    case 2: hh_mma::launch_reg_job<2, false>(exec, job, blocks); break;
    default:
      throw Error(ErrorKind::invalid_argument, "hh_chase_mma_round",
                  "argument 'warps': " + std::to_string(warps) + " is not a register-window kernel");
  }
}

}  // namespace kess::detail::eigh
#endif  // KOKKOS_ENABLE_CUDA
