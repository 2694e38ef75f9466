# comm/ suites: run by mpiexec at 1, 2 and 4 ranks (ctest -R comm).
kess_add_mpi_test(test_comm
  test_comm_block_cyclic_map.cpp
  test_comm_communicator.cpp
  test_comm_view_comm.cpp
  test_comm_dist_matrix.cpp
)
