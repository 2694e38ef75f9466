# Everything kess's own build needs from outside.
include(KessFindKokkos)
message(STATUS "kess: Kokkos ${KESS_KOKKOS_FLAVOR}, backends: ${KESS_KOKKOS_BACKENDS}")
foreach(_dev SERIAL OPENMP CUDA)
  if(KESS_REQUIRE_${_dev} AND NOT Kokkos_ENABLE_${_dev})
    message(FATAL_ERROR "kess: KESS_REQUIRE_${_dev}=ON but this Kokkos (${KESS_KOKKOS_FLAVOR}) "
                        "was built without the ${_dev} backend (it has: ${KESS_KOKKOS_BACKENDS})")
  endif()
endforeach()

find_package(LAPACK REQUIRED)   # brings BLAS too

if(KESS_ENABLE_MPI)
  find_package(MPI REQUIRED COMPONENTS CXX)
endif()
