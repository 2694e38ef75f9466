// The backend a test binary was compiled for (one binary per backend, Cabana style).
#pragma once
#include <Kokkos_Core.hpp>

#if defined(KESS_TEST_BACKEND_CUDA)
using TestExecSpace = Kokkos::Cuda;
#elif defined(KESS_TEST_BACKEND_OPENMP)
using TestExecSpace = Kokkos::OpenMP;
#elif defined(KESS_TEST_BACKEND_SERIAL)
using TestExecSpace = Kokkos::Serial;
#else
using TestExecSpace = Kokkos::DefaultExecutionSpace;
#endif
using TestMemSpace = TestExecSpace::memory_space;
