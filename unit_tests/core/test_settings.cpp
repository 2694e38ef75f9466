// kess::core::settings: the variables read at each call follow the environment; bad values read
// as unset.
#include <kess/core/base/settings.hpp>
#include <kess/core/host/parallel.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

TEST(Settings, NumThreadsFollowsTheEnvironment) {
  const char* old = std::getenv("KESS_NUM_THREADS");
  const std::string saved = old ? old : "";
  setenv("KESS_NUM_THREADS", "3", 1);
  EXPECT_EQ(kess::core::settings::num_threads(), 3);
  EXPECT_EQ(kess::core::detail::host_threads(), 3);
  setenv("KESS_NUM_THREADS", "0", 1);
  EXPECT_EQ(kess::core::settings::num_threads(), 0);
  setenv("KESS_NUM_THREADS", "-2", 1);
  EXPECT_EQ(kess::core::settings::num_threads(), 0);
  setenv("KESS_NUM_THREADS", "many", 1);
  EXPECT_EQ(kess::core::settings::num_threads(), 0);
  unsetenv("KESS_NUM_THREADS");
  EXPECT_EQ(kess::core::settings::num_threads(), 0);
  EXPECT_GE(kess::core::detail::host_threads(), 1);
  if (old) setenv("KESS_NUM_THREADS", saved.c_str(), 1);
}

TEST(Settings, PeaksFollowTheEnvironment) {
  setenv("KESS_PEAK_GFLOPS", "1234.5", 1);
  setenv("KESS_PEAK_GBS", "80", 1);
  EXPECT_DOUBLE_EQ(kess::core::settings::peak_gflops(), 1234.5);
  EXPECT_DOUBLE_EQ(kess::core::settings::peak_gbs(), 80.0);
  unsetenv("KESS_PEAK_GFLOPS");
  unsetenv("KESS_PEAK_GBS");
  EXPECT_EQ(kess::core::settings::peak_gflops(), 0.0);
  EXPECT_EQ(kess::core::settings::peak_gbs(), 0.0);
}
