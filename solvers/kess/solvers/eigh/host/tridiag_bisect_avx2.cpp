// The bisection's Sturm counts with 4-wide vectors, for CPUs with AVX2 and without AVX-512 (GCC's
// code for tridiag_bisect.cpp's 8-wide vectors goes through the stack there): tridiag_bisect.cpp
// compiled once more with -mavx2 (core/CMakeLists.txt), the kernel only; tridiag_bisect picks it
// at run time.
#define KESS_BISECT_LANES 4
#include "tridiag_bisect.cpp"
