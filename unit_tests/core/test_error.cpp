#include <kess/core/base/error.hpp>

#include <gtest/gtest.h>

TEST(Error, MessageNamesFunctionArgumentAndKind) {
  try {
    kess::require_arg(false, "hh_chase_apply", "argument 'b' = 0 must be >= 1");
    FAIL() << "no throw";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    EXPECT_EQ(e.function(), "hh_chase_apply");
    std::string what = e.what();
    EXPECT_NE(what.find("kess::hh_chase_apply: argument 'b' = 0"), std::string::npos) << what;
  }
  EXPECT_STREQ(kess::to_string(kess::ErrorKind::not_positive_definite), "not_positive_definite");
  EXPECT_NO_THROW(kess::require_arg(true, "f", "never"));
}
