#include <kess/comm/agree.hpp>
#include <kess/comm/detail/mpi_handle.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace kess::comm {
namespace {

constexpr const char* fn = "comm::agree";
// Longer messages are cut so that the gathered text stays small on many ranks.
constexpr std::size_t max_message = 4096;
// At most this many failing ranks are listed by number.
constexpr std::size_t max_listed = 16;

std::string report(const std::vector<int>& failing, int nranks, int first,
                   std::string_view first_message) {
  std::string s = "failed on rank";
  if (failing.size() > 1) s += "s";
  for (std::size_t k = 0; k < failing.size() && k < max_listed; ++k) {
    s += (k == 0 ? " " : ", ") + std::to_string(failing[k]);
  }
  if (failing.size() > max_listed) s += ", ...";
  s += " (" + std::to_string(failing.size()) + " of " + std::to_string(nranks) + "); rank " +
       std::to_string(first) + " reported: ";
  s.append(first_message);
  return s;
}

}  // namespace

void agree(const Communicator& comm, bool ok, std::string_view message, ErrorKind kind) {
  comm.require_valid(fn);
#if KESS_HAVE_MPI
  MPI_Comm c = comm.handle()->comm;
  int mine = ok ? 1 : 0, all = 0;
  detail::check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, c), fn, "MPI_Allreduce");
  if (all == 1) return;

  // Somebody failed: gather who, and what they said (-1: this rank is fine).
  const std::string_view text = ok ? std::string_view() : message.substr(0, max_message);
  const int len = ok ? -1 : static_cast<int>(text.size());
  const int n = comm.size();
  std::vector<int> lens(static_cast<std::size_t>(n));
  detail::check_mpi(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, c), fn,
                    "MPI_Allgather");
  std::vector<int> counts(lens.size()), displs(lens.size());
  int total = 0;
  std::vector<int> failing;
  for (int r = 0; r < n; ++r) {
    counts[r] = std::max(0, lens[r]);
    displs[r] = total;
    total += counts[r];
    if (lens[r] >= 0) failing.push_back(r);
  }
  std::vector<char> texts(static_cast<std::size_t>(std::max(total, 1)));
  detail::check_mpi(MPI_Allgatherv(text.data(), std::max(0, len), MPI_CHAR, texts.data(),
                                   counts.data(), displs.data(), MPI_CHAR, c),
                    fn, "MPI_Allgatherv");
  const int first = failing.front();
  throw Error(kind, fn,
              report(failing, n, first,
                     std::string_view(texts.data() + displs[first],
                                      static_cast<std::size_t>(counts[first]))));
#else
  if (!ok) throw Error(kind, fn, report({0}, 1, 0, message.substr(0, max_message)));
#endif
}

}  // namespace kess::comm
