// Device tests (label "gpu"): every example passes `kopt check`, the fault kernels are
// survived, and a check compared on the device judges as one read back. They skip, saying why,
// where there is no usable CUDA driver and device.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpu_skip.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

nlohmann::json check_json(const std::vector<std::string>& extra, int& rc) {
  std::vector<std::string> argv = {test::kopt_binary().string(), "check", "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  SystemCommandRunner runner;
  CommandResult r = runner.run(argv, 600s);
  rc = r.exit_code;
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.timed_out) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return {};
  }
}

class ExampleCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleCheck, EveryKernelPasses) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  auto j = check_json({(test::source_dir() / "examples" / GetParam()).string()}, rc);
  EXPECT_EQ(rc, 0) << j.dump(2);
  ASSERT_TRUE(j.contains("kernels"));
  for (const auto& k : j["kernels"]) EXPECT_EQ(k["status"], "passed") << k.dump(2);
  // 1, 2, the wide seed 4 (where an input has a normal or uniform init), the secret one
  EXPECT_EQ(j["seeds"].size(), j["wide_seed"].is_null() ? 3u : 4u);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleCheck,
                         ::testing::Values("vector_add", "softmax", "rmsnorm", "transpose",
                                           "reduction", "gemm_f32"));

TEST(ReferenceCache, TheReferenceRunsOnceThenComesFromTheCache) {
  KOPT_SKIP_WITHOUT_GPU();
  TempDir cache("kopt-gpu-cache");
  ::setenv("KOPT_CACHE_DIR", cache.path().c_str(), 1);
  std::vector<std::string> args = {(test::source_dir() / "examples/softmax").string(), "--kernel",
                                   "tuned", "--seeds", "2"};
  int rc = -1;
  auto first = check_json(args, rc);
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(first["reference"]["cached"].get<bool>());
  auto second = check_json(args, rc);
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(second["reference"]["cached"].get<bool>());
  EXPECT_TRUE(second["kernels"][0]["build"]["from_cache"].get<bool>());
  auto other_seed =
      check_json({args[0], "--kernel", "tuned", "--seeds", "1", "--first-seed", "9"}, rc);
  EXPECT_FALSE(other_seed["reference"]["cached"].get<bool>());
  ::unsetenv("KOPT_CACHE_DIR");
}

TEST(FaultIsolation, FaultsAndHangsAreFailedCandidatesAndTheCommandGoesOn) {
  KOPT_SKIP_WITHOUT_GPU();
  int rc = -1;
  auto j = check_json(
      {(test::source_dir() / "tests/fixtures/problems/faults").string(), "--timeout", "5"}, rc);
  EXPECT_EQ(rc, 1);  // candidates failed; the tool did not
  ASSERT_TRUE(j.contains("kernels")) << j.dump(2);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& k : j["kernels"]) by_name[k["kernel"]] = k;
  for (const char* good : {"good_first", "good_after_oob", "good_after_trap", "good_after_hang"})
    EXPECT_EQ(by_name[good]["status"], "passed") << good << ": " << by_name[good].dump(2);
  EXPECT_EQ(by_name["out_of_bounds"]["status"], "run_failed");
  EXPECT_EQ(by_name["out_of_bounds"]["seeds"][0]["status"], "fault");
  EXPECT_NE(by_name["out_of_bounds"]["error"].get<std::string>().find("ILLEGAL_ADDRESS"),
            std::string::npos)
      << by_name["out_of_bounds"]["error"];
  EXPECT_EQ(by_name["trap"]["status"], "run_failed");
  EXPECT_EQ(by_name["trap"]["seeds"][0]["status"], "fault");
  EXPECT_EQ(by_name["hang"]["status"], "run_failed");
  EXPECT_EQ(by_name["hang"]["seeds"][0]["status"], "timeout");
  EXPECT_EQ(by_name["wrong"]["status"], "mismatch");
  EXPECT_EQ(by_name["skips_elements"]["status"], "mismatch");
  EXPECT_GT(by_name["skips_elements"]["seeds"][0]["outputs"][0]["unwritten"].get<int>(), 0);
  // Its output right, its input changed: caught by the inputs' hashes where they are.
  EXPECT_EQ(by_name["modifies_input"]["status"], "mismatch");
  EXPECT_EQ(by_name["modifies_input"]["seeds"][0]["modified_inputs"], nlohmann::json({"x"}));
  EXPECT_TRUE(by_name["modifies_input"]["seeds"][0]["outputs"][0]["passed"].get<bool>());
  // Compared on the device: the wrong element, and what it held.
  const auto& wrong = by_name["wrong"]["seeds"][0];
  EXPECT_EQ(wrong["compared_on_device"], nlohmann::json({"y"}));
  ASSERT_FALSE(wrong["outputs"][0]["first_mismatches"].empty()) << wrong.dump(2);
  const auto& first = wrong["outputs"][0]["first_mismatches"][0];
  EXPECT_EQ(first["flat"], 777);
  EXPECT_EQ(first["got"].get<double>(), 2 * first["expected"].get<double>());
  EXPECT_GE(j["worker_starts"].get<int>(), 4);  // first worker + one per fault/hang
}

// The faults of the test above with a ref.py reference and outputs of 256 MiB: the reference's
// outputs stay on the device in kopt's Python process, each CUDA kernel's executor shares its
// outputs with it (CUDA IPC) and that process compares them; no file of either is written. A
// kernel that faults takes the worker and its Python process with it: the reference's outputs
// are kept again before the next kernel's comparison, and the verdicts are those above.
TEST(FaultIsolation, AKeptReferenceSurvivesTheWorkersItLosesToFaults) {
  KOPT_SKIP_WITHOUT_GPU();
  TempDir dir("kopt-kept-faults"), cache("kopt-kept-cache");
  const fs::path faults = test::source_dir() / "tests/fixtures/problems/faults";
  std::string toml = read_text_file(faults / "kopt.toml").value();
  auto replace = [&](const std::string& from, const std::string& to) {
    const auto at = toml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    toml.replace(at, from.size(), to);
  };
  replace("n = 1048576", "n = 67108864");
  replace(
      "kind = \"cpp\"\nsource = \"ref.cpp\"\nentry = \"copy_ref\"\nargs = [\"x\", \"y\", \"n\"]",
      "kind = \"python\"\nsource = \"ref.py\"");
  ASSERT_TRUE(write_text_atomic(dir.path() / "kopt.toml", toml));
  ASSERT_TRUE(
      write_text_atomic(dir.path() / "ref.py", "def reference(x, y, n):\n    y.copy_(x)\n"));
  fs::copy_file(faults / "kernels.cu", dir.path() / "kernels.cu");
  SystemCommandRunner runner;
  CommandResult r =
      runner.run({"env", "KOPT_CACHE_DIR=" + cache.path().string(), test::kopt_binary().string(),
                  "check", "--json", "--verbose", dir.path().string(), "--timeout", "5",
                  "--no-boundary-shapes", "--no-other-shape"},
                 600s);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // candidates failed; the tool did not
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.contains("kernels")) << r.out << r.err;
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& k : j["kernels"]) by_name[k["kernel"]] = k;
  for (const char* good : {"good_first", "good_after_oob", "good_after_trap", "good_after_hang"}) {
    EXPECT_EQ(by_name[good]["status"], "passed") << good << ": " << by_name[good].dump(2);
    for (const auto& seed : by_name[good]["seeds"])
      EXPECT_EQ(seed["compared_on_device"], nlohmann::json({"y"})) << good;
  }
  EXPECT_EQ(by_name["out_of_bounds"]["seeds"][0]["status"], "fault");
  EXPECT_EQ(by_name["hang"]["seeds"][0]["status"], "timeout");
  EXPECT_EQ(by_name["wrong"]["status"], "mismatch");
  EXPECT_EQ(by_name["wrong"]["seeds"][0]["outputs"][0]["first_mismatches"][0]["flat"], 777);
  EXPECT_EQ(by_name["skips_elements"]["seeds"][0]["outputs"][0]["unwritten"], 67109);
  EXPECT_EQ(by_name["modifies_input"]["seeds"][0]["modified_inputs"], nlohmann::json({"x"}));
  EXPECT_FALSE(j["reference"]["cached"].get<bool>());
  EXPECT_NE(r.err.find("kept on the device for the comparisons"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("outputs shared (CUDA IPC)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kept again on the device"), std::string::npos) << r.err;
  // Neither the reference's outputs nor a kernel's went to a file of the cache.
  for (const auto& f : fs::recursive_directory_iterator(cache.path()))
    EXPECT_NE(f.path().extension(), ".bin") << f.path();
}

// The fault fixture's problem with a CUDA reference: its inputs are drawn where it runs (no file
// of them drawn on the CPU) and judged left as drawn by their hashes there, so the kernels that
// pass are judged against it as against the C++ reference; one that changes its input is
// refused as the problem's bad input, never a kernel's verdict.
std::string faults_with_cuda_reference(const std::string& entry) {
  std::string toml =
      read_text_file(test::source_dir() / "tests/fixtures/problems/faults/kopt.toml").value();
  const std::string from =
      "kind = \"cpp\"\nsource = \"ref.cpp\"\nentry = \"copy_ref\"\nargs = [\"x\", \"y\", \"n\"]";
  const auto at = toml.find(from);
  if (at == std::string::npos) return {};
  toml.replace(
      at, from.size(),
      "kind = \"cuda\"\nsource = \"kernels.cu\"\nentry = \"" + entry +
          "\"\nargs = [\"x\", \"y\", \"n\"]\ngrid = [\"ceil_div(n, 256)\"]\nblock = [256]");
  return toml;
}

TEST(CudaReference, ItsInputsAreDrawnWhereItRunsAndOneItChangesIsRefused) {
  KOPT_SKIP_WITHOUT_GPU();
  TempDir dir("kopt-cuda-reference");
  fs::copy_file(test::source_dir() / "tests/fixtures/problems/faults/kernels.cu",
                dir.path() / "kernels.cu");
  const std::string honest = faults_with_cuda_reference("copy_good");
  ASSERT_FALSE(honest.empty());
  ASSERT_TRUE(write_text_atomic(dir.path() / "kopt.toml", honest));
  int rc = -1;
  auto j = check_json({dir.path().string(), "--kernel", "good_first", "--kernel", "wrong",
                       "--kernel", "modifies_input"},
                      rc);
  EXPECT_EQ(rc, 1) << j.dump(2);
  ASSERT_EQ(j["kernels"].size(), 3u) << j.dump(2);
  EXPECT_EQ(j["kernels"][0]["status"], "passed") << j["kernels"][0].dump(2);
  EXPECT_EQ(j["kernels"][1]["status"], "mismatch");
  EXPECT_EQ(j["kernels"][2]["seeds"][0]["modified_inputs"], nlohmann::json({"x"}));
  ASSERT_TRUE(write_text_atomic(dir.path() / "kopt.toml",
                                faults_with_cuda_reference("copy_modifies_input")));
  j = check_json({dir.path().string(), "--kernel", "good_first"}, rc);
  EXPECT_EQ(rc, 2) << j.dump(2);
  EXPECT_NE(j.dump().find("the reference modified input tensor 'x'"), std::string::npos)
      << j.dump(2);
}

// A check's verdicts and numbers are the same whether its outputs are compared on the device
// (the default) or read back and compared here (--verify-on host): the counts, maxima and the
// first mismatch bit for bit, the L2 distances (sums whose order differs) to 1e-9.
void expect_same_check(const nlohmann::json& device, const nlohmann::json& host) {
  ASSERT_EQ(device["kernels"].size(), host["kernels"].size());
  for (std::size_t k = 0; k < device["kernels"].size(); ++k) {
    const auto &d = device["kernels"][k], &h = host["kernels"][k];
    SCOPED_TRACE(d["kernel"].get<std::string>());
    EXPECT_EQ(d["status"], h["status"]);
    ASSERT_EQ(d["seeds"].size(), h["seeds"].size());
    for (std::size_t s = 0; s < d["seeds"].size(); ++s) {
      const auto &ds = d["seeds"][s], &hs = h["seeds"][s];
      EXPECT_EQ(ds["modified_inputs"], hs["modified_inputs"]);
      EXPECT_TRUE(hs["compared_on_device"].empty()) << hs.dump(2);
      // A CUDA kernel's outputs on the device (a Triton one's beside it go through files).
      const std::string source = d["source"].get<std::string>();
      if (source.ends_with(".cu")) {
        EXPECT_EQ(ds["compared_on_device"].size(), ds["outputs"].size()) << ds.dump(2);
      }
      ASSERT_EQ(ds["outputs"].size(), hs["outputs"].size());
      for (std::size_t o = 0; o < ds["outputs"].size(); ++o) {
        const auto &a = ds["outputs"][o], &b = hs["outputs"][o];
        for (const char* f : {"numel", "mismatches", "nan_count", "inf_count", "unwritten",
                              "max_abs_err", "max_rel_err", "passed"})
          EXPECT_EQ(a[f], b[f]) << f;
        if (!b["first_mismatches"].empty()) {
          ASSERT_FALSE(a["first_mismatches"].empty());
          EXPECT_EQ(a["first_mismatches"][0], b["first_mismatches"][0]);
        }
        if (a["rel_l2_err"].is_number() && b["rel_l2_err"].is_number())
          EXPECT_NEAR(a["rel_l2_err"].get<double>(), b["rel_l2_err"].get<double>(),
                      1e-9 * b["rel_l2_err"].get<double>() + 1e-300);
        else
          EXPECT_EQ(a["rel_l2_err"], b["rel_l2_err"]);
      }
    }
    ASSERT_EQ(d["fp64"].size(), h["fp64"].size());
    for (std::size_t e = 0; e < d["fp64"].size(); ++e) {
      EXPECT_EQ(d["fp64"][e]["passed"], h["fp64"][e]["passed"]);
      EXPECT_NEAR(d["fp64"][e]["rel_l2"].get<double>(), h["fp64"][e]["rel_l2"].get<double>(),
                  1e-9 * h["fp64"][e]["rel_l2"].get<double>());
    }
  }
}

class DeviceComparedCheck : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(DeviceComparedCheck, JudgesAsTheHostDoes) {
  KOPT_SKIP_WITHOUT_GPU();
  std::vector<std::string> args = GetParam();
  args[0] = (test::source_dir() / args[0]).string();
  args.insert(args.end(), {"--no-secret-seed", "--no-boundary-shapes", "--no-other-shape"});
  int rc_device = -1, rc_host = -1;
  auto device = check_json(args, rc_device);
  args.insert(args.end(), {"--verify-on", "host"});
  auto host = check_json(args, rc_host);
  EXPECT_EQ(rc_device, rc_host);
  expect_same_check(device, host);
}

INSTANTIATE_TEST_SUITE_P(
    Problems, DeviceComparedCheck,
    ::testing::Values(std::vector<std::string>{"tests/fixtures/problems/faults", "--kernel",
                                               "good_first", "--kernel", "wrong", "--kernel",
                                               "skips_elements", "--kernel", "modifies_input"},
                      std::vector<std::string>{"examples/gelu"},
                      std::vector<std::string>{"examples/softmax"},
                      std::vector<std::string>{"examples/gemm_f32"}));

}  // namespace
}  // namespace kopt
