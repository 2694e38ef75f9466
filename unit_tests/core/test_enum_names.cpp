// kess::to_string / kess::from_string: every API enum's names round-trip, aliases are accepted, and
// an unknown name fails with the option and the accepted names in the message.
#include <kess/core/base/enum_names.hpp>
#include <kess/core/base/error.hpp>
#include <kess/solvers/eigh.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/matrix_functions.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

template <class E>
void expect_round_trip(std::set<std::string> canonical) {
  std::set<std::string> seen;
  for (const auto& n : kess::EnumNames<E>::names) {
    EXPECT_EQ(kess::from_string<E>(n.name), n.value) << n.name;
    seen.insert(kess::to_string(n.value));
  }
  EXPECT_EQ(seen, canonical);
  for (const auto& name : canonical) EXPECT_STREQ(kess::to_string(kess::from_string<E>(name)), name.c_str());
  try {
    kess::from_string<E>("no-such-name");
    ADD_FAILURE() << "no error for an unknown name";
  } catch (const kess::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    EXPECT_NE(what.find(kess::EnumNames<E>::what), std::string::npos) << what;
    EXPECT_NE(what.find("'no-such-name'"), std::string::npos) << what;
    for (const auto& name : canonical) EXPECT_NE(what.find("'" + name + "'"), std::string::npos) << what;
  }
}

}  // namespace

TEST(EnumNames, EveryEnumRoundTrips) {
  expect_round_trip<kess::EighMethod>({"auto", "two-stage", "one-stage"});
  expect_round_trip<kess::EighChase>({"auto", "host", "team"});
  expect_round_trip<kess::EighTridiagonal>({"auto", "lapack", "dc"});
  expect_round_trip<kess::EighGeneralized>({"auto", "lapack", "blas"});
  expect_round_trip<kess::HhChaseVariant>({"paper", "fast"});
  expect_round_trip<kess::GaussJordanPanel>({"auto", "host", "device"});
  expect_round_trip<kess::GaussJordanPivoting>({"partial", "tournament"});
  expect_round_trip<kess::SignScaling>({"none", "determinant", "norm"});
  expect_round_trip<kess::ErrorKind>({"invalid_argument", "not_symmetric", "not_positive_definite",
                                      "singular", "no_convergence", "io", "mpi", "device",
                                      "out_of_memory"});
}

TEST(EnumNames, SpellingsAndAliases) {
  EXPECT_EQ(kess::from_string<kess::EighMethod>("automatic"), kess::EighMethod::automatic);
  EXPECT_EQ(kess::from_string<kess::EighMethod>("one_stage"), kess::EighMethod::one_stage);
  EXPECT_EQ(kess::from_string<kess::EighTridiagonal>("divide_conquer"),
            kess::EighTridiagonal::divide_conquer);
  EXPECT_EQ(kess::from_string<kess::SignScaling>("det"), kess::SignScaling::determinant);
  EXPECT_EQ(kess::from_string<kess::ErrorKind>("not-symmetric"), kess::ErrorKind::not_symmetric);
  EXPECT_THROW(kess::from_string<kess::EighMethod>(""), kess::Error);
  EXPECT_THROW(kess::from_string<kess::EighMethod>("Two-Stage"), kess::Error);  // case matters
}
