#include <kess/solvers/eigh.hpp>

#include <algorithm>

namespace kess {

const char* to_string(EighMethod m) noexcept {
  switch (m) {
    case EighMethod::automatic: return "automatic";
    case EighMethod::one_stage: return "one-stage";
    default: return "two-stage";
  }
}

EighMethod parse_eigh_method(const std::string& name) {
  if (name == "two-stage" || name == "two_stage") return EighMethod::two_stage;
  if (name == "one-stage" || name == "one_stage") return EighMethod::one_stage;
  if (name == "auto" || name == "automatic") return EighMethod::automatic;
  throw Error(ErrorKind::invalid_argument, "parse_eigh_method",
              "argument 'method' = '" + name + "': expected 'auto', 'two-stage' or 'one-stage'");
}

const char* to_string(EighChase c) noexcept {
  switch (c) {
    case EighChase::host: return "host";
    case EighChase::team: return "team";
    default: return "auto";
  }
}

EighChase parse_eigh_chase(const std::string& name) {
  if (name == "auto" || name == "automatic") return EighChase::automatic;
  if (name == "host") return EighChase::host;
  if (name == "team") return EighChase::team;
  throw Error(ErrorKind::invalid_argument, "parse_eigh_chase",
              "argument 'chase' = '" + name + "': expected 'auto', 'host' or 'team'");
}

const char* to_string(EighTridiagonal t) noexcept {
  switch (t) {
    case EighTridiagonal::lapack: return "lapack";
    case EighTridiagonal::divide_conquer: return "dc";
    default: return "auto";
  }
}

EighTridiagonal parse_eigh_tridiagonal(const std::string& name) {
  if (name == "auto" || name == "automatic") return EighTridiagonal::automatic;
  if (name == "lapack") return EighTridiagonal::lapack;
  if (name == "dc" || name == "divide-conquer" || name == "divide_conquer")
    return EighTridiagonal::divide_conquer;
  throw Error(ErrorKind::invalid_argument, "parse_eigh_tridiagonal",
              "argument 'tridiagonal' = '" + name + "': expected 'auto', 'lapack' or 'dc'");
}

int eigh_auto_b(std::int64_t n, bool host, std::string* reason) {
  // Larger b: stage-1 GEMMs of inner dimension b run closer to peak and stage 4's WY blocks get
  // longer; smaller b: the host bulge chase (about 6 b n^2 flops, pipelined over host threads)
  // gets cheaper.
  int b = host ? 96 : 64;
  std::string why = host ? "CPU default 96: stage 4's compact-WY blocks (b + 31 rows) waste less "
                           "at larger b; measured best of 32..96 at n = 2000 and 4000"
                         : "GPU default 64: stage-1 GEMMs near peak, the fastest compiled "
                           "hh_chase kernel shape";
  if (n <= 2 * b) {
    b = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(b, n / 4)));
    why = "small n: b = max(1, n/4)";
  }
  if (reason) *reason = why;
  return b;
}

namespace detail {

void eigh_tridiagonal(int n, int nev, bool vectors, std::vector<double>& d, std::vector<double>& e,
                      double* w, double* Z, int ldz) {
  const char* fn = "eigh";
  if (n == 0 || nev == 0) return;
  int info = 0;
  if (nev < n && n <= 2) {
    // dstemr's n = 2 shortcut orders the two eigenvalues by absolute value (dlaev2), so it can
    // return the larger one for il = iu = 1 (seen with the LAPACK here): use dstedc instead.
    std::vector<double> z(4);
    info = lapack::stedc(vectors ? 'I' : 'N', n, d.data(), e.data(), z.data(), n);
    require(info == 0, ErrorKind::no_convergence, fn, "dstedc failed with info = " + std::to_string(info));
    for (int j = 0; j < nev; ++j) {
      w[j] = d[j];
      if (vectors)
        for (int i = 0; i < n; ++i) Z[i + std::size_t(j) * ldz] = z[i + std::size_t(j) * n];
    }
    return;
  }
  if (nev == n) {
    info = lapack::stedc(vectors ? 'I' : 'N', n, d.data(), e.data(), Z, ldz);
    std::copy(d.begin(), d.end(), w);
  } else {
    int m = 0;
    double dummy = 0;
    info = lapack::stemr(vectors ? 'V' : 'N', n, d.data(), e.data(), 1, nev, &m, w,
                         vectors ? Z : &dummy, vectors ? ldz : 1);
    require(info != 0 || m == nev, ErrorKind::no_convergence, fn,
            "dstemr returned " + std::to_string(m) + " eigenpairs instead of " + std::to_string(nev));
  }
  require(info == 0, ErrorKind::no_convergence, fn,
          std::string(nev == n ? "dstedc" : "dstemr") + " failed with info = " + std::to_string(info));
}

}  // namespace detail
}  // namespace kess
