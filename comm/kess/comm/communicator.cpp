#include <kess/comm/communicator.hpp>

#include <cstdlib>
#include <kess/comm/detail/mpi_handle.hpp>
#include <kess/core/base/error.hpp>

#include <string>

namespace kess::comm {

#if KESS_HAVE_MPI

namespace detail {

CommHandle::~CommHandle() {
  if (!owned || comm == MPI_COMM_NULL) return;
  // A communicator that outlives MPI_Finalize cannot be freed any more; MPI reclaims it.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm);
}

void check_mpi(int rc, const char* function, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  std::string msg = std::string(call) + " failed (error code " + std::to_string(rc) + ")";
  if (len > 0) msg.append(": ").append(text, static_cast<std::size_t>(len));
  throw Error(ErrorKind::mpi, function, msg);
}

MPI_Comm native_or_throw(const Communicator& comm, const char* function) {
  comm.require_valid(function);
  return comm.handle()->comm;
}

}  // namespace detail

namespace {
void require_mpi_initialized(const char* function) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  require(initialized && !finalized, ErrorKind::mpi, function,
          "MPI is not initialized (create a kess::ScopeGuard first) or already finalized");
}
}  // namespace

Communicator Communicator::world() {
  require_mpi_initialized("comm::Communicator::world");
  return wrap(MPI_COMM_WORLD);
}

Communicator Communicator::self() {
  require_mpi_initialized("comm::Communicator::self");
  return wrap(MPI_COMM_SELF);
}

Communicator Communicator::wrap(MPI_Comm comm) {
  constexpr const char* fn = "comm::Communicator::wrap";
  require_mpi_initialized(fn);
  require_arg(comm != MPI_COMM_NULL, fn, "comm is MPI_COMM_NULL");
  int rank = 0, size = 0;
  detail::check_mpi(MPI_Comm_rank(comm, &rank), fn, "MPI_Comm_rank");
  detail::check_mpi(MPI_Comm_size(comm, &size), fn, "MPI_Comm_size");
  auto handle = std::make_shared<detail::CommHandle>();
  handle->comm = comm;
  handle->owned = false;
  return Communicator(std::move(handle), rank, size);
}

MPI_Comm Communicator::native() const { return handle_ ? handle_->comm : MPI_COMM_NULL; }

Communicator Communicator::split(int color, int key) const {
  constexpr const char* fn = "comm::Communicator::split";
  MPI_Comm parent = detail::native_or_throw(*this, fn);
  MPI_Comm child = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split(parent, color < 0 ? MPI_UNDEFINED : color, key, &child), fn,
                    "MPI_Comm_split");
  if (child == MPI_COMM_NULL) return Communicator();
  auto handle = std::make_shared<detail::CommHandle>();
  handle->comm = child;
  handle->owned = true;  // from here on the handle frees it, even if a check below throws
  int rank = 0, size = 0;
  detail::check_mpi(MPI_Comm_rank(child, &rank), fn, "MPI_Comm_rank");
  detail::check_mpi(MPI_Comm_size(child, &size), fn, "MPI_Comm_size");
  return Communicator(std::move(handle), rank, size);
}

void Communicator::barrier() const {
  constexpr const char* fn = "comm::Communicator::barrier";
  detail::check_mpi(MPI_Barrier(detail::native_or_throw(*this, fn)), fn, "MPI_Barrier");
}

void Communicator::abort(int code) const {
  MPI_Abort(is_null() ? MPI_COMM_WORLD : detail::native_or_throw(*this, "comm::Communicator::abort"),
            code);
  std::exit(code);  // MPI_Abort does not return; for the compiler
}

#else  // !KESS_HAVE_MPI

namespace detail {
struct CommHandle {};
}  // namespace detail

Communicator Communicator::world() {
  static const auto handle = std::make_shared<const detail::CommHandle>();
  return Communicator(handle, 0, 1);
}

Communicator Communicator::self() { return world(); }

Communicator Communicator::split(int color, int /*key*/) const {
  require_valid("comm::Communicator::split");
  if (color < 0) return Communicator();
  return Communicator(std::make_shared<const detail::CommHandle>(), 0, 1);
}

void Communicator::barrier() const { require_valid("comm::Communicator::barrier"); }

void Communicator::abort(int code) const { std::exit(code); }

#endif

void Communicator::require_valid(const char* function) const {
  require(!is_null() && handle_ != nullptr, ErrorKind::mpi, function,
          "called on the null communicator");
}

}  // namespace kess::comm
