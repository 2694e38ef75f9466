// Umbrella header: everything a kess user needs.
#pragma once

#include <kess/kess_config.hpp>

#include <kess/core/error.hpp>
#include <kess/core/generators.hpp>
#include <kess/core/hh_chase.hpp>
#include <kess/core/kokkos_compat.hpp>
#include <kess/core/lapack.hpp>
#include <kess/core/matrix_market.hpp>

#include <kess/comm/block_cyclic_map.hpp>
#include <kess/comm/communicator.hpp>
#include <kess/comm/dist_matrix.hpp>
#include <kess/comm/process_grid.hpp>
#include <kess/comm/scope_guard.hpp>
#include <kess/comm/view_comm.hpp>

#include <kess/solvers/eigh.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/lyapunov.hpp>
#include <kess/solvers/riccati.hpp>
#include <kess/solvers/sign.hpp>
