#include <kess/core/host/parallel.hpp>
#include <kess/solvers/block_sparse/detail/stack.hpp>

#include <algorithm>

namespace kess::detail::block_sparse {
namespace {

// DBCSR's filter test: squared norms and threshold in single precision.
inline bool skipped(double a_norm, double b_norm, float t2) {
  return float(a_norm * a_norm) * float(b_norm * b_norm) < t2;
}

// One C row's part of the stack.
struct RowOut {
  std::vector<int> cols;               // C's columns after the step, ascending
  std::vector<std::int64_t> old;       // their index before the step (-1: new)
  std::vector<std::int64_t> count;     // products per column
  std::vector<std::int64_t> a_off, b_off;
  std::vector<int> k;
  std::int64_t flops = 0, products = 0, skipped = 0;
};

}  // namespace

Stack build_stack(const StackInput& in) {
  const PanelIndex& A = *in.a;
  const PanelIndex& B = *in.b;
  const auto& crp = *in.c_row_ptr;
  const auto& ccols = *in.c_cols;
  const int nrows = static_cast<int>(A.row_ids.size());
  std::vector<int> kmap(static_cast<std::size_t>(in.inner_blocks), -1);
  for (std::size_t r = 0; r < B.row_ids.size(); ++r) kmap[B.row_ids[r]] = static_cast<int>(r);

  std::vector<RowOut> rows(static_cast<std::size_t>(nrows));
  const int threads = std::max(1, in.threads > 0 ? in.threads : core::detail::host_threads());
  const int chunks = std::min(nrows, 8 * threads);
  core::detail::host_parallel_for(chunks, threads, [&](int ch) {
    // slot[jl]: the row's product slot of C local column jl (-1: none yet); reset per row.
    std::vector<int> slot(static_cast<std::size_t>(in.local_cols), -1);
    std::vector<int> slot_col;
    std::vector<std::int64_t> slot_count, slot_fill;
    for (int l = nrows * ch / chunks; l < nrows * (ch + 1) / chunks; ++l) {
      RowOut& out = rows[l];
      const int m = in.row_sizes[A.row_ids[l]];
      const float t = static_cast<float>((*in.threshold)[l]);
      const float t2 = t * t;
      slot_col.clear();
      slot_count.clear();
      // With retain_sparsity only C's existing columns take products: mark them first.
      if (in.retain_sparsity) {
        for (std::int64_t c = crp[l]; c < crp[l + 1]; ++c) {
          const int jl = in.local_col_of[ccols[c]];
          slot[jl] = static_cast<int>(slot_col.size());
          slot_col.push_back(ccols[c]);
          slot_count.push_back(0);
        }
      }
      // Pass 1: count the products of each C column.
      for (std::int64_t p = A.ptr[l]; p < A.ptr[l + 1]; ++p) {
        const int kr = kmap[A.col[p]];
        if (kr < 0) continue;
        const double an = A.norm[p];
        for (std::int64_t q = B.ptr[kr]; q < B.ptr[kr + 1]; ++q) {
          const int jl = in.local_col_of[B.col[q]];
          if (jl < 0) continue;
          if (skipped(an, B.norm[q], t2)) {
            ++out.skipped;
            continue;
          }
          int s = slot[jl];
          if (s < 0) {
            if (in.retain_sparsity) continue;
            s = slot[jl] = static_cast<int>(slot_col.size());
            slot_col.push_back(B.col[q]);
            slot_count.push_back(0);
          }
          ++slot_count[s];
        }
      }
      // C's columns after the step: existing ones and the new product columns, ascending.
      std::vector<int>& cols = out.cols;
      cols.assign(ccols.begin() + crp[l], ccols.begin() + crp[l + 1]);
      for (std::size_t s = 0; s < slot_col.size(); ++s) {
        if (slot_count[s] > 0) cols.push_back(slot_col[s]);
      }
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
      out.old.assign(cols.size(), -1);
      out.count.assign(cols.size(), 0);
      {
        std::int64_t c = crp[l];
        for (std::size_t x = 0; x < cols.size(); ++x) {
          if (c < crp[l + 1] && ccols[c] == cols[x]) out.old[x] = c++;
        }
      }
      // Product slots in C-column order: fill[s] = where slot s's products start.
      slot_fill.assign(slot_col.size(), 0);
      std::vector<std::int64_t> pos_of_slot(slot_col.size(), -1);
      std::int64_t total = 0;
      for (std::size_t x = 0; x < cols.size(); ++x) {
        const int jl = in.local_col_of[cols[x]];
        const int s = slot[jl];
        if (s >= 0 && slot_count[s] > 0) {
          slot_fill[s] = total;
          out.count[x] = slot_count[s];
          total += slot_count[s];
        }
      }
      out.a_off.resize(total);
      out.b_off.resize(total);
      out.k.resize(total);
      // Pass 2: the same loops, products written in k order within each C column.
      for (std::int64_t p = A.ptr[l]; p < A.ptr[l + 1]; ++p) {
        const int kb = A.col[p];
        const int kr = kmap[kb];
        if (kr < 0) continue;
        const double an = A.norm[p];
        const int ks = in.inner_sizes[kb];
        for (std::int64_t q = B.ptr[kr]; q < B.ptr[kr + 1]; ++q) {
          const int jl = in.local_col_of[B.col[q]];
          if (jl < 0 || skipped(an, B.norm[q], t2)) continue;
          const int s = slot[jl];
          if (s < 0) continue;
          const std::int64_t at = slot_fill[s]++;
          out.a_off[at] = A.off[p];
          out.b_off[at] = B.off[q];
          out.k[at] = ks;
          out.flops += 2 * std::int64_t(m) * in.col_sizes[B.col[q]] * ks;
        }
      }
      out.products = total;
      for (int c : slot_col) slot[in.local_col_of[c]] = -1;
    }
  });

  // Concatenate the rows.
  Stack st;
  st.c_row_ptr.assign(static_cast<std::size_t>(nrows) + 1, 0);
  std::int64_t nblk = 0, nprod = 0, nruns = 0;
  for (int l = 0; l < nrows; ++l) {
    nblk += static_cast<std::int64_t>(rows[l].cols.size());
    st.c_row_ptr[l + 1] = nblk;
    nprod += rows[l].products;
    for (auto c : rows[l].count) nruns += c > 0;
  }
  st.c_cols.reserve(nblk);
  st.c_old.reserve(nblk);
  st.c_offsets.assign(1, 0);
  st.c_offsets.reserve(nblk + 1);
  st.run_c.reserve(nruns);
  st.run_m.reserve(nruns);
  st.run_n.reserve(nruns);
  st.run_begin.reserve(nruns + 1);
  st.a_off.reserve(nprod);
  st.b_off.reserve(nprod);
  st.k.reserve(nprod);
  for (int l = 0; l < nrows; ++l) {
    RowOut& r = rows[l];
    const int m = in.row_sizes[A.row_ids[l]];
    std::int64_t p = 0;
    for (std::size_t x = 0; x < r.cols.size(); ++x) {
      const int n = in.col_sizes[r.cols[x]];
      const std::int64_t off = st.c_offsets.back();
      st.c_cols.push_back(r.cols[x]);
      st.c_old.push_back(r.old[x]);
      st.grew = st.grew || r.old[x] < 0;
      st.c_offsets.push_back(off + std::int64_t(m) * n);
      if (r.count[x] > 0) {
        st.run_c.push_back(off);
        st.run_m.push_back(m);
        st.run_n.push_back(n);
        st.run_begin.push_back(st.run_begin.back() + r.count[x]);
        p += r.count[x];
      }
    }
    st.a_off.insert(st.a_off.end(), r.a_off.begin(), r.a_off.end());
    st.b_off.insert(st.b_off.end(), r.b_off.begin(), r.b_off.end());
    st.k.insert(st.k.end(), r.k.begin(), r.k.end());
    st.flops += r.flops;
    st.products += r.products;
    st.skipped += r.skipped;
    RowOut().cols.swap(r.cols);  // free as we go
  }
  return st;
}

}  // namespace kess::detail::block_sparse
