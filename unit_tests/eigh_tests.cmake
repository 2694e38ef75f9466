# kess::eigh (solvers/kess/solvers/eigh.hpp) and its stages (core/kess/core/{band_reduce,bulge_chase,
# cholesky}.hpp).
kess_add_backend_test(test_eigh test_eigh.cpp test_band_reduce.cpp test_cholesky.cpp)
kess_add_backend_test(test_tridiag_dc test_tridiag_dc.cpp)
