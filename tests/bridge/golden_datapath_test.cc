// golden_datapath_test.cc - the C++ golden model of the bridge's data plane
// (bridge-fw/golden_datapath.h) through the conformance suite every implementation passes
// (datapath_conformance.h), and what is the golden model's own: its refusal names.
#include "bridge-fw/golden_datapath.h"

#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "datapath_conformance.h"

namespace dxpu::bridge {
namespace {

INSTANTIATE_TEST_SUITE_P(Golden, DatapathConformance, ::testing::Values(&MakeGoldenDatapath));

TEST(DatapathNames, EveryRefusalHasADistinctName) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < static_cast<size_t>(Refusal::kCount); ++i) {
    const std::string_view n = RefusalName(static_cast<Refusal>(i));
    EXPECT_NE(n, "unknown");
    names.insert(n);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(Refusal::kCount));
}

}  // namespace
}  // namespace dxpu::bridge
