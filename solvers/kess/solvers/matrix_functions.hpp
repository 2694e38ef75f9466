// kess matrix functions built on Gauss-Jordan: the matrix sign function by the scaled Newton
// iteration, and the Lyapunov and algebraic Riccati equations through it.
#pragma once

#include <kess/solvers/matrix_functions/detail/sign.hpp>
#include <kess/solvers/matrix_functions/detail/lyapunov.hpp>
#include <kess/solvers/matrix_functions/detail/riccati.hpp>
