# Gauss-Jordan elimination, the matrix sign function, Lyapunov and Riccati
# (core/kess/core/gauss_jordan_panel.hpp, solvers/kess/solvers/{gauss_jordan,sign,lyapunov,riccati}.hpp).
kess_add_backend_test(test_gauss_jordan test_gauss_jordan.cpp)
kess_add_backend_test(test_sign test_sign.cpp test_lyapunov_riccati.cpp)
# The distributed (column-block-cyclic) solve and inverse, at 1, 2 and 4 ranks.
kess_add_mpi_test(test_gauss_jordan_mpi test_gauss_jordan_mpi.cpp)
# The distributed sign (and pencil form), Lyapunov and Riccati, at 1, 2 and 4 ranks.
kess_add_mpi_test(test_sign_mpi test_sign_mpi.cpp)
