# Spack recipe for kess. Usage and how this file was checked: docs/spack.md.
#
# Works with Spack >= 1.0 (package API v2, through spack/spack_repo/kess) and with Spack 0.23 /
# 0.x (package API v1, through spack/repo.yaml). The two differ in where the build-system base
# classes come from, hence the guarded import below; everything else is common to both.

try:  # Spack >= 1.0: build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
except ImportError:  # Spack 0.x: spack.package exports them
    from spack.package import CMakePackage, CudaPackage

from spack.package import *


class Kess(CMakePackage, CudaPackage):
    """kess: performance-portable dense and sparse eigensolvers, matrix functions and
    block-sparse multiplication on Kokkos and Kokkos Kernels, distributed with MPI."""

    # Placeholders until the project has a public home.
    homepage = "https://example.org/kess"
    git = "https://example.org/kess.git"

    version("main", branch="main")

    variant("mpi", default=True, description="Build the MPI distribution layer (comm/)")
    variant(
        "openmp",
        default=False,
        description="Use (and require) the Kokkos OpenMP backend",
    )
    variant(
        "gpu_aware_mpi",
        default=False,
        when="+mpi+cuda",
        description="Pass device pointers to MPI directly instead of staging through the host",
    )
    variant("tests", default=False, description="Build the GoogleTest unit tests")
    variant(
        "benchmarks",
        default=False,
        description="Build the Google Benchmark suites and the kess-run driver",
    )
    # "cuda" and "cuda_arch" come from CudaPackage.

    depends_on("cxx", type="build")
    depends_on("cmake@3.22:", type="build")

    depends_on("kokkos@4.1:")
    depends_on("kokkos-kernels@4.1:")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos-kernels+openmp", when="+openmp")
    # +wrapper: kess compiles its CUDA sources with Kokkos' nvcc_wrapper (see cmake_args).
    depends_on("kokkos+cuda+wrapper", when="+cuda")
    depends_on("kokkos-kernels+cuda", when="+cuda")
    # Vendor back ends of Kokkos Kernels on the GPU (cuSOLVER needs Kokkos Kernels 4.3).
    depends_on("kokkos-kernels+cublas+cusparse+cusolver", when="+cuda")
    # Device lambdas (KOKKOS_LAMBDA); Kokkos 5 always has them and dropped the variant.
    requires("^kokkos+cuda_lambda", when="+cuda ^kokkos@:4")
    # Kokkos and Kokkos Kernels must be built for the same GPU as kess.
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos+cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
        depends_on(f"kokkos-kernels+cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    conflicts("+cuda", when="cuda_arch=none", msg="kess+cuda needs a cuda_arch, e.g. cuda_arch=90")
    # Without +cuda kess would be compiled by the plain host compiler, which cannot build
    # against a CUDA Kokkos.
    conflicts("^kokkos+cuda", when="~cuda", msg="a CUDA-enabled Kokkos needs kess+cuda")

    depends_on("mpi", when="+mpi")
    depends_on("blas")
    depends_on("lapack")

    depends_on("googletest", type="build", when="+tests")
    depends_on("benchmark", when="+benchmarks")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("KESS_ENABLE_MPI", "mpi"),
            self.define_from_variant("KESS_ENABLE_TESTS", "tests"),
            self.define_from_variant("KESS_ENABLE_BENCHMARKS", "benchmarks"),
            self.define_from_variant("KESS_REQUIRE_OPENMP", "openmp"),
            self.define_from_variant("KESS_REQUIRE_CUDA", "cuda"),
            self.define("KESS_ENABLE_GPU_AWARE_MPI", spec.satisfies("+gpu_aware_mpi")),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix),
        ]
        if spec.satisfies("+cuda"):
            # The compiler Kokkos was built with (nvcc_wrapper for +wrapper). Spelled
            # spec[...].package rather than self[...] so that Spack 0.x understands it too.
            args.append(self.define("CMAKE_CXX_COMPILER", spec["kokkos"].package.kokkos_cxx))
        return args

    def check(self):
        """Build-time tests (spack install --test=root kess+tests): the whole ctest suite."""
        if not self.spec.satisfies("+tests"):
            return
        with working_dir(self.build_directory):
            ctest("--output-on-failure", "--parallel", str(make_jobs))
