# Finds Kokkos and Kokkos Kernels and guarantees the targets Kokkos::kokkos and
# Kokkos::kokkoskernels, plus Kokkos_ENABLE_{SERIAL,OPENMP,CUDA}. Used by kess's own build and,
# installed beside kessConfig.cmake, by projects that call find_package(kess).
#
# Two worlds:
#  * upstream Kokkos >= 4 (Spack, hand builds): its own CMake config, found through Kokkos_ROOT /
#    KokkosKernels_ROOT / CMAKE_PREFIX_PATH;
#  * Debian 12's libtrilinos-kokkos-dev (Kokkos 3.4.01, Serial only): its CMake config points at
#    /usr/lib/include and exports no Kokkos::kokkoskernels, so the targets are rebuilt here from the
#    headers in <prefix>/include/trilinos and the libtrilinos_kokkos* libraries.
include_guard(GLOBAL)

if(NOT TARGET Kokkos::kokkos)
  find_package(Kokkos 4.0 CONFIG QUIET)
endif()

if(TARGET Kokkos::kokkos)
  if(NOT TARGET Kokkos::kokkoskernels)
    find_package(KokkosKernels CONFIG REQUIRED)
  endif()
  set(KESS_KOKKOS_FLAVOR "upstream ${Kokkos_VERSION}")
else()
  find_path(KESS_KOKKOS_INCLUDE_DIR KokkosCore_config.h PATH_SUFFIXES trilinos)
  find_library(KESS_KOKKOSCORE_LIBRARY NAMES trilinos_kokkoscore)
  find_library(KESS_KOKKOSCONTAINERS_LIBRARY NAMES trilinos_kokkoscontainers)
  find_library(KESS_KOKKOSKERNELS_LIBRARY NAMES trilinos_kokkoskernels)
  if(NOT KESS_KOKKOS_INCLUDE_DIR OR NOT KESS_KOKKOSCORE_LIBRARY OR NOT KESS_KOKKOSKERNELS_LIBRARY)
    message(FATAL_ERROR
      "kess: no Kokkos found. Either point Kokkos_ROOT and KokkosKernels_ROOT at a Kokkos >= 4 "
      "install, or on Debian/Ubuntu: apt-get install libtrilinos-kokkos-dev "
      "libtrilinos-kokkos-kernels-dev")
  endif()
  file(STRINGS ${KESS_KOKKOS_INCLUDE_DIR}/KokkosCore_config.h _kess_kokkos_cfg
       REGEX "^#define (KOKKOS_VERSION|KOKKOS_ENABLE_(SERIAL|OPENMP|CUDA))")
  foreach(_dev SERIAL OPENMP CUDA)
    set(Kokkos_ENABLE_${_dev} OFF)
    if("${_kess_kokkos_cfg}" MATCHES "KOKKOS_ENABLE_${_dev}([;]|$)")
      set(Kokkos_ENABLE_${_dev} ON)
    endif()
  endforeach()
  string(REGEX MATCH "KOKKOS_VERSION ([0-9]+)" _m "${_kess_kokkos_cfg}")
  math(EXPR _maj "${CMAKE_MATCH_1} / 10000")
  math(EXPR _min "(${CMAKE_MATCH_1} / 100) % 100")
  math(EXPR _pat "${CMAKE_MATCH_1} % 100")
  set(Kokkos_VERSION "${_maj}.${_min}.${_pat}")
  find_package(LAPACK REQUIRED)
  add_library(Kokkos::kokkos INTERFACE IMPORTED)
  set_target_properties(Kokkos::kokkos PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${KESS_KOKKOS_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${KESS_KOKKOSCONTAINERS_LIBRARY};${KESS_KOKKOSCORE_LIBRARY};${CMAKE_DL_LIBS}")
  add_library(Kokkos::kokkoskernels INTERFACE IMPORTED)
  set_target_properties(Kokkos::kokkoskernels PROPERTIES
    INTERFACE_LINK_LIBRARIES "${KESS_KOKKOSKERNELS_LIBRARY};Kokkos::kokkos;LAPACK::LAPACK")
  set(KESS_KOKKOS_FLAVOR "Debian/Trilinos ${Kokkos_VERSION} (${KESS_KOKKOS_INCLUDE_DIR})")
endif()

set(KESS_KOKKOS_BACKENDS "")
foreach(_dev SERIAL OPENMP CUDA)
  if(Kokkos_ENABLE_${_dev})
    list(APPEND KESS_KOKKOS_BACKENDS ${_dev})
  endif()
endforeach()
