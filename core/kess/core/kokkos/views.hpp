// The View types kess's compiled bodies take, and the conversions of a caller's Views to them: the
// public entry points accept any rank-2 double View their execution space can read and hand the
// bodies (compiled once per execution space in libkess) one LayoutLeft type in its memory space.
#pragma once

#include <kess/core/kokkos/compat.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace kess::core {

template <class ExecSpace>
using Matrix = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
template <class ExecSpace>
using ConstMatrix = Kokkos::View<const double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
template <class ExecSpace>
using Vector = Kokkos::View<double*, typename ExecSpace::memory_space>;
template <class ExecSpace>
using ConstVector = Kokkos::View<const double*, typename ExecSpace::memory_space>;

/// Whether View is a rank-`rank` View of double in a memory space ExecSpace can read.
template <class ExecSpace, class View, int rank = 2>
constexpr bool is_double_view() {
  if constexpr (Kokkos::is_view<View>::value) {
    return int(View::rank) == rank &&
           std::is_same<typename View::non_const_value_type, double>::value &&
           Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible;
  } else {
    return false;
  }
}

/// Whether A is already a LayoutLeft View in ExecSpace's memory (it converts to Matrix or
/// ConstMatrix without a copy).
template <class ExecSpace, class View>
constexpr bool is_native_matrix() {
  return std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value &&
         std::is_same<typename View::memory_space, typename ExecSpace::memory_space>::value;
}

/// A read-only LayoutLeft view of A (rank 1 or 2) in exec's memory: A itself where it is one,
/// else a copy (a View in another memory space exec can read, or another layout).
template <class ExecSpace, class View>
auto read_only(const ExecSpace& exec, const View& A, const char* label) {
  using Mem = typename ExecSpace::memory_space;
  using Out = std::conditional_t<int(View::rank) == 1, Kokkos::View<const double*, Mem>,
                                 Kokkos::View<const double**, Kokkos::LayoutLeft, Mem>>;
  if constexpr (is_native_matrix<ExecSpace, View>() ||
                (int(View::rank) == 1 && std::is_same<typename View::memory_space, Mem>::value)) {
    return Out(A);
  } else {
    using Copy = typename Out::non_const_type;
    const auto alloc = [&] {
      return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
    };
    Copy copy;
    if constexpr (int(View::rank) == 1)
      copy = Copy(alloc(), A.extent(0));
    else
      copy = Copy(alloc(), A.extent(0), A.extent(1));
    if constexpr (int(View::rank) == 1 ||
                  std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value ||
                  std::is_same<typename View::memory_space, Mem>::value) {
      Kokkos::deep_copy(exec, copy, A);  // one step: same layout, or same memory space
    } else {  // another layout in another memory space: LayoutLeft there first
      Kokkos::View<double**, Kokkos::LayoutLeft, typename View::memory_space> left(
          std::string(label), A.extent(0), A.extent(1));
      Kokkos::deep_copy(left, A);
      Kokkos::deep_copy(exec, copy, left);
    }
    return Out(copy);
  }
}

/// A writable LayoutLeft view of A in exec's memory where A is one (a solver may then work in A
/// itself), else an empty Matrix.
template <class ExecSpace, class View>
Matrix<ExecSpace> writable(const View& A) {
  if constexpr (kx::can_work_in<View, typename ExecSpace::memory_space>()) {
    return Matrix<ExecSpace>(A);
  } else {
    return Matrix<ExecSpace>();
  }
}

}  // namespace kess::core
