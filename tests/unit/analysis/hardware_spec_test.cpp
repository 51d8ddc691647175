#include "kopt/analysis/hardware_spec.hpp"

#include <gtest/gtest.h>

#include <set>

namespace kopt {
namespace {

TEST(SpecTable, HasTheGpusTheIssueNames) {
  std::set<std::string> ids;
  for (const auto& s : builtin_gpu_specs()) ids.insert(s.id);
  for (const char* id : {"v100-sxm2", "a100-40gb", "a100-80gb-sxm", "h100-sxm", "h100-pcie", "h200",
                         "l4", "l40s", "rtx-4090", "b200", "mi250x", "mi300x"})
    EXPECT_TRUE(ids.contains(id)) << id;
}

TEST(SpecTable, EveryValueCitesADocumentAndASection) {
  int values = 0;
  for (const auto& s : builtin_gpu_specs()) {
    EXPECT_FALSE(s.sources.empty()) << s.id;
    for (const auto& [field, v] : s.values) {
      const SpecSource* src = s.source(v.source);
      ASSERT_NE(src, nullptr) << s.id << "." << field;
      EXPECT_GE(src->title.size(), 20u) << s.id << "." << field;
      EXPECT_GE(v.section.size(), 5u) << s.id << "." << field;
      EXPECT_TRUE(v.value.has_value() != v.unsupported) << s.id << "." << field;
      if (v.value) {
        EXPECT_GT(*v.value, 0) << s.id << "." << field;
      }
      ++values;
    }
  }
  EXPECT_GT(values, 120);
}

TEST(SpecTable, UnsourcedValuesAreUnknown) {
  const GpuSpec* h200 = find_gpu_spec("h200");
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200->find("sm_count"), nullptr);  // the datasheet does not print it
  EXPECT_FALSE(h200->number("sm_count"));
  EXPECT_EQ(h200->citation("sm_count"), "UNKNOWN (no source)");
  const GpuSpec* v100 = find_gpu_spec("v100-sxm2");
  ASSERT_TRUE(v100);
  EXPECT_TRUE(v100->find("bf16_tflops")->unsupported);
  EXPECT_FALSE(v100->number("bf16_tflops"));
}

TEST(SpecTable, FindsBoardsByTheDriversName) {
  auto id = [](const char* name) {
    const GpuSpec* s = find_gpu_spec(name);
    return s ? s->id : std::string("none");
  };
  EXPECT_EQ(id("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(id("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(id("NVIDIA H200"), "h200");
  EXPECT_EQ(id("NVIDIA A100-SXM4-80GB"), "a100-80gb-sxm");
  EXPECT_EQ(id("NVIDIA A100-SXM4-40GB"), "a100-40gb");
  EXPECT_EQ(id("NVIDIA A100 80GB PCIe"), "a100-80gb-pcie");
  EXPECT_EQ(id("Tesla V100-SXM2-32GB"), "v100-sxm2");
  EXPECT_EQ(id("NVIDIA GeForce RTX 4090"), "rtx-4090");
  EXPECT_EQ(id("NVIDIA L40S"), "l40s");
  EXPECT_EQ(id("NVIDIA L4"), "l4");
  EXPECT_EQ(id("AMD Instinct MI300X"), "mi300x");
  EXPECT_EQ(id("NVIDIA GeForce GTX 1080"), "none");
}

TEST(SpecFile, BadEntriesNameFileLineAndField) {
  const std::string head =
      "id = \"x\"\nname = \"X\"\nvendor = \"V\"\narch = \"sm_90\"\nmatch = [\"X\"]\n"
      "[sources]\nds = \"Some datasheet title\"\n[values]\n";
  auto no_source = parse_gpu_spec(head + "sm_count = { value = 10 }\n", "specs/x.toml");
  ASSERT_FALSE(no_source);
  EXPECT_EQ(no_source.error().file, "specs/x.toml");
  EXPECT_EQ(no_source.error().line, 9);
  EXPECT_EQ(no_source.error().field, "values.sm_count");
  auto bad_ref = parse_gpu_spec(
      head + "sm_count = { value = 10, source = \"wp\", section = \"Table 1\" }\n", "x.toml");
  ASSERT_FALSE(bad_ref);
  EXPECT_EQ(bad_ref.error().field, "values.sm_count.source");
  auto unknown = parse_gpu_spec(
      head + "warp_size = { value = 32, source = \"ds\", section = \"Table 1\" }\n", "x.toml");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().field, "values.warp_size");
  auto ok = parse_gpu_spec(
      head + "sm_count = { value = 10, source = \"ds\", section = \"Table 1\" }\n", "x.toml");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(*ok->number("sm_count"), 10);
}

}  // namespace
}  // namespace kopt
