// kess::comm::agree — collective error agreement (docs/design/architecture.md): a check that can
// fail on some ranks only makes every rank throw together instead of leaving the others hanging.
#pragma once

#include <kess/comm/communicator.hpp>
#include <kess/core/base/error.hpp>

#include <string_view>

namespace kess::comm {

/// Collective over `comm`. Returns when `ok` holds on every rank; otherwise every rank throws
/// kess::Error(kind, "comm::agree", ...) whose message lists the failing ranks and carries the
/// `message` of the first (lowest) failing rank. `message` is read on failing ranks only.
void agree(const Communicator& comm, bool ok, std::string_view message,
           ErrorKind kind = ErrorKind::mpi);

}  // namespace kess::comm
