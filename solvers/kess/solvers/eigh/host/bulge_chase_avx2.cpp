// The host bulge chase's step with 4-wide vectors, for CPUs with AVX2 and without AVX-512 (GCC's
// code for bulge_chase.cpp's 8-wide vectors goes through the stack there): bulge_chase.cpp compiled
// once more with -mavx2 (core/CMakeLists.txt); its chase_bulge picks this one at run time.
#define KESS_CHASE_LANES 4
#include "bulge_chase.cpp"
