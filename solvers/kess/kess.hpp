// Umbrella header: everything a kess user needs.
#pragma once

#include <kess/kess_config.hpp>

#include <kess/core/error.hpp>
#include <kess/core/hh_chase.hpp>
#include <kess/core/kokkos_compat.hpp>
#include <kess/core/lapack.hpp>

#include <kess/comm/scope_guard.hpp>
