// "What next?" on every recorded H100 profile of the examples (tests/fixtures/ncu/h100/), with
// each kernel's recorded SASS (tests/fixtures/sass/) telling what it already has: the open's
// first answer against the suggestion an expert makes first, written down with the reason.
// The agreement is reported in docs/profiling.md ("What next"); KernelFlow's formula is shown
// beside it for comparison.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kopt/analysis/advice.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt/tools/sass.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

struct ExpertCase {
  const char* kernel;  // <example>_<kernel>: the CSV and SASS fixture names
  const char* example;
  const char* expert;  // the first suggestion, or "stop"
  const char* why;
};

// Written before looking at kopt's answers, from the profile, the source and the roofline.
const ExpertCase k_cases[] = {
    {"vector_add_naive", "vector_add", "vectorized_global_loads",
     "83 % of the DRAM roof with 32-bit loads: put more bytes in flight per instruction"},
    {"vector_add_vectorized", "vector_add", "stop", "96 % of the DRAM roof"},
    {"transpose_naive", "transpose", "shared_memory_staging",
     "stores use 4 of 32 bytes per sector: tile through shared memory so reads and writes "
     "coalesce"},
    {"transpose_tiled", "transpose", "stop", "97 % of the DRAM roof"},
    {"reduction_naive", "reduction", "warp_shuffle_reduction",
     "12 % of the DRAM roof; the SM is busy with a divergent shared-memory tree (a barrier and a "
     "modulo per level)"},
    {"reduction_tuned", "reduction", "tuning",
     "77 % of the roof with float4 loads, shuffles and a grid-stride loop already: more bytes in "
     "flight per SM "
     "(ITEMS, BLOCKS_PER_SM), no new method"},
    {"rmsnorm_naive", "rmsnorm", "split_across_threads",
     "one thread per row: less than a wave of threads, each walking its row uncoalesced"},
    {"rmsnorm_tuned", "rmsnorm", "stop", "94 % of the DRAM roof"},
    {"softmax_naive", "softmax", "split_across_threads", "one thread per row, as rmsnorm_naive"},
    {"softmax_tuned", "softmax", "stop", "99 % of the DRAM roof"},
    {"gemm_f32_naive", "gemm_f32", "shared_memory_staging",
     "8 % of the FP32 roof, L1 saturated by re-reads: tile A and B through shared memory"},
    {"gemm_f32_smem_tiled", "gemm_f32", "register_tiling",
     "shared-memory loads throttle (mio_throttle): compute a TMxTN micro-tile per thread from "
     "registers (not a catalog "
     "method: the catalog has no signature for it)"},
    {"gemm_f32_register_tiled", "gemm_f32", "atomic_accumulation",
     "big tiles leave less than a wave of blocks at 1024^3: split K over more blocks (or smaller "
     "tiles)"},
    {"gemm_bf16_mma_128x64_no_ldmatrix", "gemm_bf16", "ldmatrix",
     "23 % of the bf16 roof with the tensor pipe 28 % active while the LSU pipe runs at 35 % of "
     "its issue rate: "
     "per-thread 32- and 16-bit shared loads (168 per k-step) feed 64 HMMA; load the fragments "
     "with ldmatrix"},
};

MethodCatalog& catalog() {
  static MethodCatalog c = *builtin_method_catalog();
  return c;
}

// kopt's first answer: the first suggestion, "stop", or "tuning" (stop for want of a method).
std::string first_answer(const Advice& a) {
  if (a.stop) return a.headroom.at_roof ? "stop" : "tuning";
  return a.suggestions.empty() ? "(empty)" : a.suggestions.front().method;
}

struct Answer {
  Advice headroom, kernelflow;
};

Answer answer(const ExpertCase& c) {
  fs::path dir = test::source_dir() / "tests/fixtures";
  auto csv = read_text_file(dir / "ncu/h100" / (std::string(c.kernel) + ".csv"));
  EXPECT_TRUE(csv) << c.kernel;
  auto report = parse_ncu_csv(csv.value_or(""), c.kernel);
  EXPECT_TRUE(report) << c.kernel;
  static std::map<std::string, Explanation> keep;  // the advice points into its explanation
  ExplainInputs in;
  auto profile = select_kernel(*report, "");
  EXPECT_TRUE(profile) << c.kernel;
  in.profile = *profile;
  in.device_name = "NVIDIA H100 80GB HBM3";
  auto problem = load_problem(test::source_dir() / "examples" / c.example);
  EXPECT_TRUE(problem) << c.example;
  Cost cost = problem->cost_at_dims();
  in.cost_flops = cost.flops;
  in.cost_bytes = cost.bytes;
  in.has_half_data = false;
  Explanation& e = keep[c.kernel] = explain(in);
  AdviceInputs ai;
  ai.ctx.catalog = &catalog();
  ai.ctx.sm = 90;
  ai.explanation = &e;
  auto sass = read_text_file(dir / "sass" / (std::string(c.kernel) + ".nvdisasm.sass"));
  EXPECT_TRUE(sass) << c.kernel;
  auto functions = parse_sass(sass.value_or(""));
  for (const auto& m : catalog().methods)
    if (!functions.empty() &&
        verify_method(m, functions.front(), 90).verdict == SassVerdictKind::verified)
      ai.in_sass.insert(m.id);
  Answer out;
  out.headroom = advise(ai);
  ai.formula = BudgetFormula::kernelflow;
  out.kernelflow = advise(ai);
  return out;
}

TEST(AdviceOnRecordedProfiles, AlwaysARankedListOrAReasonedStop) {
  for (const auto& c : k_cases) {
    Answer a = answer(c);
    for (const Advice* x : {&a.headroom, &a.kernelflow}) {
      EXPECT_TRUE(x->stop || !x->suggestions.empty()) << c.kernel;
      EXPECT_EQ(x->stop, !x->stop_reason.empty()) << c.kernel;
      for (std::size_t i = 0; i < x->suggestions.size(); ++i)
        EXPECT_EQ(x->suggestions[i].rank, int(i) + 1);
      EXPECT_FALSE(x->stop && !x->suggestions.empty()) << c.kernel;
    }
    EXPECT_TRUE(a.headroom.headroom.bounding) << c.kernel;
  }
}

// A method already in the kernel's machine code is never suggested for it.
TEST(AdviceOnRecordedProfiles, NothingTheKernelAlreadyHas) {
  for (const auto& c : k_cases) {
    Answer a = answer(c);
    for (const auto& s : a.headroom.suggestions)
      for (const auto& n : a.headroom.notes)
        EXPECT_NE(n, s.method + ": already in the champion's machine code") << c.kernel;
  }
  Answer tuned = answer(k_cases[5]);  // reduction_tuned: float4 loads and shuffles
  for (const auto& s : tuned.headroom.suggestions) {
    EXPECT_NE(s.method, "vectorized_global_loads");
    EXPECT_NE(s.method, "warp_shuffle_reduction");
  }
}

// A tensor-core kernel whose fragments arrive by per-thread shared loads: the finding names it,
// and ldmatrix (a toggle of the kernel, not yet in its SASS) comes first for it; an f32 kernel
// (its tensor pipe at 0.02 %) gets no such finding.
TEST(AdviceOnRecordedProfiles, TensorCoresStarvedByTheirLoads) {
  auto starved = [](const char* kernel) {
    auto csv = read_text_file(test::source_dir() / "tests/fixtures/ncu/h100" /
                              (std::string(kernel) + ".csv"));
    auto report = parse_ncu_csv(csv.value_or(""), kernel);
    auto profile = report ? select_kernel(*report, "") : Unexpected(report.error());
    EXPECT_TRUE(profile) << kernel;
    Bottleneck b = classify_bottleneck(profile ? profile->metrics : MetricValues{});
    return std::any_of(b.secondary.begin(), b.secondary.end(),
                       [](const Finding& f) { return f.id == "tensor_starved"; });
  };
  ASSERT_TRUE(starved(k_cases[13].kernel));
  Answer bf16 = answer(k_cases[13]);
  ASSERT_FALSE(bf16.headroom.suggestions.empty());
  EXPECT_EQ(bf16.headroom.suggestions.front().method, "ldmatrix");
  EXPECT_TRUE(bf16.headroom.suggestions.front().triggered);
  EXPECT_FALSE(starved(k_cases[11].kernel));  // gemm_f32_smem_tiled
}

// The agreement with the expert's first suggestion, printed as docs/profiling.md's table.
TEST(AdviceOnRecordedProfiles, AgreementWithTheExpertsFirstSuggestion) {
  int agree = 0, agree_kernelflow = 0;
  std::string table =
      "| kernel | expert | headroom (kopt) | KernelFlow budget |\n|---|---|---|---|\n";
  for (const auto& c : k_cases) {
    Answer a = answer(c);
    std::string h = first_answer(a.headroom), k = first_answer(a.kernelflow);
    agree += h == c.expert;
    agree_kernelflow += k == c.expert;
    table += fmt::format("| {} | {} | {}{} | {}{} |\n", c.kernel, c.expert, h,
                         h == c.expert ? " ✓" : "", k, k == c.expert ? " ✓" : "");
  }
  std::cout << table
            << fmt::format("agreement: headroom {}/{}, KernelFlow {}/{}\n", agree,
                           std::size(k_cases), agree_kernelflow, std::size(k_cases));
  EXPECT_GE(agree, 11);  // docs/profiling.md records 11 of 14
}

}  // namespace
}  // namespace kopt
