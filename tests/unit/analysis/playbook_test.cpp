// The playbooks (playbooks/*.toml) parse, cover every bottleneck class, and every catalog
// method links to an entry that exists; the metric guide names metrics kopt collects.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "kopt/analysis/bottleneck.hpp"
#include "kopt/analysis/method_catalog.hpp"
#include "kopt/tools/ncu.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

toml::table load(const std::string& name) {
  auto path = test::source_dir() / "playbooks" / name;
  try {
    return toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    ADD_FAILURE() << path << ": " << e.description();
    return {};
  }
}

TEST(Playbooks, EveryImplementationCoversEveryBottleneckClass) {
  std::set<std::string> classes;
  for (auto c : {BottleneckClass::memory_bound, BottleneckClass::compute_bound,
                 BottleneckClass::latency_bound, BottleneckClass::occupancy_limited,
                 BottleneckClass::small_grid, BottleneckClass::synchronization_bound})
    classes.insert(std::string(bottleneck_name(c)));
  for (const char* file :
       {"cuda.toml", "triton.toml", "cutlass.toml", "hip.toml", "ck.toml", "assembly.toml"}) {
    toml::table t = load(file);
    EXPECT_TRUE(t["implementation"].is_string()) << file;
    std::set<std::string> covered;
    if (auto* arr = t["bottleneck"].as_array())
      for (const auto& e : *arr) {
        const toml::table* b = e.as_table();
        ASSERT_TRUE(b) << file;
        std::string cls = (*b)["class"].value_or(std::string{});
        EXPECT_TRUE(classes.contains(cls)) << file << ": unknown class " << cls;
        EXPECT_FALSE((*b)["strategy"].value_or(std::string{}).empty()) << file << " " << cls;
        covered.insert(cls);
      }
    EXPECT_EQ(covered, classes) << file;
  }
}

TEST(Playbooks, EveryCatalogMethodLinksToAnEntry) {
  toml::table cuda = load("cuda.toml");
  std::set<std::string> entries;
  if (auto* arr = cuda["method"].as_array())
    for (const auto& e : *arr)
      entries.insert("cuda/" + (*e.as_table())["id"].value_or(std::string{}));
  auto catalog = builtin_method_catalog();
  ASSERT_TRUE(catalog);
  for (const auto& m : catalog->methods) {
    EXPECT_FALSE(m.playbook_entry.empty()) << m.id;
    EXPECT_TRUE(entries.contains(m.playbook_entry)) << m.id << " -> " << m.playbook_entry;
  }
}

TEST(Playbooks, TheMetricGuideNamesMetricsKoptCollects) {
  std::set<std::string> collected;
  for (const auto& q : ncu_questions()) collected.insert(q.metrics.begin(), q.metrics.end());
  toml::table t = load("ncu-metrics.toml");
  auto* arr = t["metric"].as_array();
  ASSERT_TRUE(arr);
  EXPECT_GE(arr->size(), 15u);
  for (const auto& e : *arr) {
    const toml::table& m = *e.as_table();
    std::string name = m["name"].value_or(std::string{});
    EXPECT_TRUE(collected.contains(name)) << name;
    EXPECT_FALSE(m["meaning"].value_or(std::string{}).empty()) << name;
    EXPECT_FALSE(m["what_to_try"].value_or(std::string{}).empty()) << name;
  }
}

}  // namespace
}  // namespace kopt
