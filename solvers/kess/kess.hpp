// Umbrella header: everything a kess user needs (the families' entry headers, comm's public types,
// Matrix Market and the test-matrix generators).
#pragma once

#include <kess/kess_config.hpp>

#include <kess/core/base/error.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/io/matrix_market.hpp>

#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/block_cyclic_map.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/comm/scope_guard.hpp>
#include <kess/comm/view_comm.hpp>

#include <kess/solvers/block_sparse.hpp>
#include <kess/solvers/eigh.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/lobpcg.hpp>
#include <kess/solvers/matrix_functions.hpp>
