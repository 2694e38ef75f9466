# Matrix Market I/O and test-matrix generators (core/kess/core/{matrix_market,generators}.hpp).
kess_add_backend_test(test_matrix_market test_matrix_market.cpp)
kess_add_backend_test(test_generators test_generators.cpp)
