// Facts and method verdicts on recorded dumps, and live on kernels NVRTC builds here.
#include "kopt/analysis/sass_facts.hpp"

#include <gtest/gtest.h>

#include "disassembler.hpp"
#include "kopt/analysis/method_catalog.hpp"
#include "kopt/backend/cuda/nvrtc_compiler.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/sass_report.hpp"
#include "kopt/problem/loader.hpp"
#include "kopt_binary.hpp"

namespace kopt {
namespace {
using evaluate::run_sass;
using evaluate::SassContext;
using evaluate::SassReport;
using evaluate::SassRequest;

SassFunction recorded(const std::string& name) {
  auto text =
      read_text_file(test::source_dir() / "tests/fixtures/sass" / (name + ".nvdisasm.sass"));
  EXPECT_TRUE(text);
  auto f = parse_sass(text ? *text : "");
  return f.empty() ? SassFunction{} : f[0];
}

MethodCatalog catalog() {
  auto c = builtin_method_catalog();
  EXPECT_TRUE(c) << c.error().to_string();
  return *c;
}

SassVerdictKind verdict(const std::string& method, const SassFunction& f, int sm = 90) {
  MethodCatalog c = catalog();
  const Method* m = c.find(method);
  EXPECT_TRUE(m) << method;
  return verify_method(*m, f, sm).verdict;
}

TEST(SassFacts, CountsByClassAndWidth) {
  SassFacts vec = sass_facts(recorded("vector_add_vectorized"));
  EXPECT_EQ(vec.share_128bit_global_loads, 1.0);
  EXPECT_EQ(vec.global_loads_by_width.at(128), 2u);  // a and b
  EXPECT_EQ(vec.global_stores_by_width.at(128), 1u);
  SassFacts naive = sass_facts(recorded("vector_add_naive"));
  EXPECT_EQ(naive.global_loads_by_width.at(32), 2u);
  EXPECT_EQ(naive.share_128bit_global_loads, 0.0);
  EXPECT_FALSE(naive.global_loads_by_width.count(128));
  SassFacts tiled = sass_facts(recorded("transpose_tiled"));
  EXPECT_GT(tiled.classes.at("shared_store"), 0u);
  EXPECT_GT(tiled.classes.at("shared_load"), 0u);
  EXPECT_GT(tiled.classes.at("barrier"), 0u);
  SassFacts gemm = sass_facts(recorded("gemm_f32_register_tiled"));
  EXPECT_GE(gemm.classes.at("fp32_fma"), 128u);  // 4 x 4 outputs x BK 8 per tile step
  EXPECT_FALSE(gemm.classes.count("local_load"));
}

// A fast tanh is the special function unit's MUFU.TANH: the method is in the machine code and
// must not be called implementation_failed because the signature lacked the form.
TEST(MethodVerdicts, TheHardwareTanhIsAFastMathIntrinsic) {
  EXPECT_EQ(verdict("fast_math_intrinsics", recorded("gelu_tanh_approx")),
            SassVerdictKind::verified);
  EXPECT_EQ(verdict("fast_math_intrinsics", recorded("vector_add_naive")),
            SassVerdictKind::missing);
}

TEST(MethodVerdicts, OnRecordedKernels) {
  EXPECT_EQ(verdict("vectorized_global_loads", recorded("vector_add_vectorized")),
            SassVerdictKind::verified);
  EXPECT_EQ(verdict("vectorized_global_loads", recorded("vector_add_naive")),
            SassVerdictKind::missing);
  EXPECT_EQ(verdict("warp_shuffle_reduction", recorded("softmax_tuned")),
            SassVerdictKind::verified);
  EXPECT_EQ(verdict("warp_shuffle_reduction", recorded("softmax_naive")), SassVerdictKind::missing);
  EXPECT_EQ(verdict("shared_memory_staging", recorded("gemm_f32_smem_tiled")),
            SassVerdictKind::verified);
  EXPECT_EQ(verdict("shared_memory_staging", recorded("gemm_f32_naive")), SassVerdictKind::missing);
  EXPECT_EQ(verdict("atomic_accumulation", recorded("reduction_tuned")), SassVerdictKind::verified);
  EXPECT_EQ(verdict("remove_spills", recorded("gemm_f32_register_tiled")),
            SassVerdictKind::verified);
  EXPECT_EQ(verdict("tma", recorded("softmax_tuned"), 80), SassVerdictKind::not_applicable);
}

TEST(MethodVerdicts, MatchTheOpcodeFieldOnlyNeverNamesOrOtherOpcodes) {
  // A kernel whose name shouts RED, with no reduction instruction: not a match.
  SassFunction f = recorded("transpose_tiled");
  f.name = "reduce_RED_kernel";
  EXPECT_EQ(verdict("atomic_accumulation", f), SassVerdictKind::missing);
  // LDGSTS is not an LDG; LDG.E.64 is not a 128-bit load; matching is case-sensitive.
  auto parse = [](const char* line) {
    return parse_sass(std::string(".text.k:\n        /*0000*/  ") + line + " ;\n")[0]
        .instructions[0];
  };
  auto ldg = parse_sass_pattern("LDG.128");
  ASSERT_TRUE(ldg);
  EXPECT_TRUE(ldg->matches(parse("LDG.E.128.CONSTANT R4, desc[UR8][R4.64]")));
  EXPECT_FALSE(ldg->matches(parse("LDG.E.64 R4, desc[UR8][R4.64]")));
  EXPECT_FALSE(ldg->matches(parse("LDGSTS.E.BYPASS.128 [R1], desc[UR8][R4.64]")));
  EXPECT_FALSE(parse_sass_pattern("red"));
  EXPECT_FALSE(parse_sass_pattern("LDG..128"));
}

TEST(MethodCatalog, BuiltInCatalogLoadsAndBadOnesAreNamed) {
  MethodCatalog c = catalog();
  EXPECT_GE(c.methods.size(), 10u);
  auto unknown_rule = parse_method_catalog(
      "[[methods]]\nid = \"x\"\naxis = \"memory\"\nsass = { some = [\"LDG\"] }\n", "m.toml");
  ASSERT_FALSE(unknown_rule);
  EXPECT_EQ(unknown_rule.error().to_string(),
            "m.toml:4: methods[0].sass: unknown rule 'some' (known: all, any, none)");
  auto lower = parse_method_catalog(
      "[[methods]]\nid = \"x\"\naxis = \"memory\"\nsass = { all = [\"ldg\"] }\n", "m.toml");
  ASSERT_FALSE(lower);
  EXPECT_NE(lower.error().message.find("opcodes are upper case"), std::string::npos);
  auto dup = parse_method_catalog(
      "[[methods]]\nid = \"x\"\naxis = \"memory\"\nsass = { all = [\"LDG\"] }\n"
      "[[methods]]\nid = \"x\"\naxis = \"memory\"\nsass = { all = [\"STG\"] }\n",
      "m.toml");
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().to_string(), "m.toml:5: methods[1].id: duplicate method id 'x'");
}

TEST(MethodCatalog, EveryBuiltInMethodHasAnAxisPriorityAndTrigger) {
  MethodCatalog c = catalog();
  for (const auto& m : c.methods) {
    EXPECT_TRUE(m.trigger) << m.id;
    EXPECT_GE(m.priority, 1) << m.id;
    EXPECT_FALSE(m.playbook.empty()) << m.id;
  }
  const Method* shfl = c.find("warp_shuffle_reduction");
  ASSERT_TRUE(shfl);
  EXPECT_EQ(shfl->axis, Axis::latency);
  EXPECT_EQ(shfl->trigger->metric, "kopt__stall_share_barrier");
}

TEST(MethodCatalog, BadPolicyFieldsAreNamed) {
  auto axis = parse_method_catalog(
      "[[methods]]\nid = \"x\"\naxis = \"io\"\nsass = { all = [\"LDG\"] }\n", "m.toml");
  ASSERT_FALSE(axis);
  EXPECT_EQ(axis.error().field, "methods[0].axis");
  auto trigger = parse_method_catalog(
      "[[methods]]\nid = \"x\"\naxis = \"memory\"\ntrigger = { metric = \"m\", good = 1, bad = 1 "
      "}\n"
      "sass = { all = [\"LDG\"] }\n",
      "m.toml");
  ASSERT_FALSE(trigger);
  EXPECT_EQ(trigger.error().line, 4);
  EXPECT_EQ(trigger.error().field, "methods[0].trigger");
  auto feature = parse_method_catalog(
      "[[methods]]\nid = \"x\"\naxis = \"memory\"\nrequires = [\"warp_drive\"]\nsass = { all = "
      "[\"LDG\"] }\n",
      "m.toml");
  ASSERT_FALSE(feature);
  EXPECT_EQ(feature.error().field, "methods[0].requires");
  EXPECT_EQ(device_features(80),
            (std::vector<std::string>{"tensor_cores", "bf16", "tf32", "cp_async"}));
  EXPECT_EQ(catalog().find("tma")->requires_features, std::vector<std::string>{"tma"});
  auto coupling = parse_method_catalog(
      "[[methods]]\nid = \"x\"\naxis = \"memory\"\ncouplings = [\"y\"]\nsass = { all = [\"LDG\"] "
      "}\n",
      "m.toml");
  ASSERT_FALSE(coupling);
  EXPECT_NE(coupling.error().message.find("unknown method 'y'"), std::string::npos);
}

// run_sass against real NVRTC builds, disassembled by whatever disassembler this machine has.
class LiveSass : public ::testing::Test {
 protected:
  Expected<SassReport> run(const char* problem, SassRequest req, CommandRunner& runner) {
    auto p = load_problem(test::source_dir() / problem);
    EXPECT_TRUE(p) << p.error().to_string();
    req.cache_root = m_cache.path();
    return run_sass(*p, req, SassContext{m_compiler, runner, m_catalog});
  }
  TempDir m_cache{"kopt-sass-test"};
  cuda::NvrtcCompiler m_compiler;
  MethodCatalog m_catalog = catalog();
};

// The same checks on cubins NVRTC builds here for Ampere and Hopper.
class LiveSassArch : public LiveSass, public ::testing::WithParamInterface<std::string> {};

TEST_P(LiveSassArch, AKernelBuiltToSpillIsCaught) {
  KOPT_SKIP_WITHOUT_DISASSEMBLER();
  SystemCommandRunner runner;
  SassRequest req;
  req.methods = {"remove_spills"};
  req.arch = GetParam();
  auto r = run("tests/fixtures/problems/spills", req, runner);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->kernels.size(), 2u);
  const auto& heavy = r->kernels[0];
  EXPECT_EQ(heavy.verdicts[0].verdict, SassVerdictKind::missing) << heavy.verdicts[0].reason;
  EXPECT_GT(heavy.facts->classes.at("local_load"), 0u);
  EXPECT_GT(heavy.facts->classes.at("local_store"), 0u);
  EXPECT_GT(heavy.build.resources.local_bytes, 0);
  EXPECT_LE(heavy.build.resources.registers, 32);
  EXPECT_EQ(r->kernels[1].verdicts[0].verdict, SassVerdictKind::verified);
  EXPECT_EQ(r->exit_code(), 1);
}

TEST_P(LiveSassArch, DiffShowsWhatAParameterChangedInTheBinary) {
  KOPT_SKIP_WITHOUT_DISASSEMBLER();
  SystemCommandRunner runner;
  SassRequest req;
  req.kernels = {"tuned"};
  req.sets = {{"VEC", 4}};
  req.vs = std::map<std::string, std::int64_t>{{"VEC", 1}};
  req.methods = {"vectorized_global_loads"};
  req.arch = GetParam();
  auto r = run("examples/softmax", req, runner);
  ASSERT_TRUE(r) << r.error().to_string();
  ASSERT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(r->kernels[0].verdicts[0].verdict, SassVerdictKind::verified);
  EXPECT_EQ(r->kernels[1].verdicts[0].verdict, SassVerdictKind::missing);
  std::map<std::string, SassDiffEntry> diff;
  for (const auto& d : r->diff) diff[d.key] = d;
  ASSERT_TRUE(diff.count("LDG.128"));
  EXPECT_EQ(diff["LDG.128"].after, 0u);  // disappeared
  ASSERT_TRUE(diff.count("LDG.32"));
  EXPECT_EQ(diff["LDG.32"].before, 0u);  // appeared
}

INSTANTIATE_TEST_SUITE_P(Archs, LiveSassArch, ::testing::Values("sm_80", "sm_90"));

TEST_F(LiveSass, AMissingOrBrokenDisassemblerIsUnverifiableNeverVerified) {
  FakeCommandRunner nothing_runs;  // every program "fails to start"
  SassRequest req;
  req.kernels = {"vectorized"};
  req.methods = {"vectorized_global_loads", "remove_spills"};
  auto r = run("examples/vector_add", req, nothing_runs);
  ASSERT_TRUE(r) << r.error().to_string();
  for (const auto& v : r->kernels[0].verdicts) {
    EXPECT_EQ(v.verdict, SassVerdictKind::unverifiable) << v.method;
    EXPECT_FALSE(v.reason.empty());
  }
  EXPECT_EQ(r->exit_code(), 3);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// One kernel of a forms dump (tests/fixtures/sass/forms.cu, hopper.cu, fp8.cu).
SassFunction form_kernel(const std::string& dump, const std::string& kernel) {
  auto text =
      read_text_file(test::source_dir() / "tests/fixtures/sass" / (dump + ".nvdisasm.sass"));
  EXPECT_TRUE(text) << dump;
  for (auto& f : parse_sass(text ? *text : ""))
    if (f.name == kernel) return f;
  ADD_FAILURE() << "no kernel " << kernel << " in " << dump;
  return {};
}

struct FormCase {
  const char* dump;
  const char* kernel;
  const char* method;
  SassVerdictKind want;
  const char* form;  // the form that verifies it, "" for the main signature
};

// Every form a method takes in the SASS of sm_80 and sm_90, compiled by nvcc 13.0: a method
// that is in the machine code is never reported missing because its signature lacked a form,
// and a weaker form of it is other_form, not missing.
TEST(MethodVerdicts, EveryFormOnSm80AndSm90) {
  using K = SassVerdictKind;
  const FormCase cases[] = {
      {"forms_sm80", "load_float4", "vectorized_global_loads", K::verified, ""},
      {"forms_sm90", "load_ldg_float4", "vectorized_global_loads", K::verified,
       ""},  // LDG.E.128.CONSTANT
      {"forms_sm90", "load_streaming", "vectorized_global_loads", K::verified, ""},  // LDG.E.EF.128
      {"forms_sm90", "load_streaming", "vectorized_global_stores", K::verified,
       ""},  // STG.E.EF.128
      {"forms_sm80", "load_evict_last", "vectorized_global_loads", K::verified,
       ""},                                                                          // LDG.E.LU.128
      {"forms_sm80", "load_float2", "vectorized_global_loads", K::other_form, ""},   // LDG.E.64
      {"forms_sm90", "load_float2", "vectorized_global_stores", K::other_form, ""},  // STG.E.64
      {"forms_sm90", "warp_shfl", "warp_shuffle_reduction", K::verified, ""},
      {"forms_sm80", "warp_redux", "warp_shuffle_reduction", K::verified,
       "warp reduce (REDUX, __reduce_add_sync on integers)"},
      {"forms_sm90", "stage_plain", "shared_memory_staging", K::verified, ""},
      {"forms_sm80", "stage_cp_async", "shared_memory_staging", K::verified, "cp.async staging"},
      {"forms_sm90", "stage_cp_async", "cp_async", K::verified, ""},
      {"forms_sm90", "mma_bf16", "tensor_cores", K::verified, ""},  // HMMA.16816.F32.BF16
      {"forms_sm80", "mma_bf16", "ldmatrix", K::verified, ""},      // LDSM.16.M88.4
      {"forms_sm90", "mma_bf16", "shared_memory_staging", K::verified, "ldmatrix reads"},
      {"fp8_sm89", "mma_fp8", "tensor_cores", K::verified, ""},  // QMMA.16832.F32.E4M3.E4M3
      {"fp8_sm90", "mma_fp8", "tensor_cores", K::verified, ""},  // sm_90 runs it as HMMA
      {"forms_sm90", "fast_math", "fast_math_intrinsics", K::verified, ""},
      {"forms_sm80", "atomics", "atomic_accumulation", K::verified, ""},  // RED (sm_80) and ATOMG
      {"forms_sm90", "atomics", "atomic_accumulation", K::verified, ""},  // REDG (sm_90)
      {"forms_sm90", "half2_math", "fast_math_intrinsics", K::missing, ""},
      // An integer modulo by a variable is MUFU.RCP too: related, never proof of fast math.
      {"reduction_naive", "sum_naive", "fast_math_intrinsics", K::other_form, ""},
      {"hopper_sm90a", "wgmma_bf16", "wgmma", K::verified, ""},  // HGMMA.64
      {"hopper_sm90a", "wgmma_fp8", "wgmma", K::verified, ""},   // QGMMA.64
      {"hopper_sm90a", "wgmma_fp8", "tensor_cores", K::verified, ""},
      {"hopper_sm90a", "tma_load", "tma", K::verified, ""},   // UTMALDG.2D
      {"hopper_sm90a", "bulk_copy", "tma", K::verified, ""},  // UBLKCP.S.G
      {"hopper_sm90a", "bulk_copy", "cp_async", K::verified,
       "bulk async copy (cp.async.bulk, the TMA engine)"},
      {"hopper_sm90a", "tma_load", "shared_memory_staging", K::verified, "TMA staging"},
      {"hopper_sm90a", "tma_load", "mbarrier_pipeline", K::verified,
       ""},  // SYNCS.ARRIVE.TRANS64, ...TRYWAIT
      {"hopper_sm90a", "store_matrix", "ldmatrix", K::missing,
       ""},  // STSM is a store, not ldmatrix
      {"forms_sm90", "stage_plain", "mbarrier_pipeline", K::missing, ""},
  };
  MethodCatalog c = catalog();
  for (const auto& t : cases) {
    const Method* m = c.find(t.method);
    ASSERT_TRUE(m) << t.method;
    int sm = std::string(t.dump).find("sm80") != std::string::npos   ? 80
             : std::string(t.dump).find("sm89") != std::string::npos ? 89
                                                                     : 90;
    MethodVerdict v = verify_method(*m, form_kernel(t.dump, t.kernel), sm);
    EXPECT_EQ(sass_verdict_name(v.verdict), sass_verdict_name(t.want))
        << t.dump << " " << t.kernel << " " << t.method << ": " << v.reason;
    EXPECT_EQ(v.form, t.form) << t.dump << " " << t.kernel << " " << t.method;
    if (t.want == K::other_form) {
      EXPECT_NE(v.reason.find("a different form of the method is there"), std::string::npos)
          << v.reason;
    }
  }
}

TEST(MethodCatalogForms, BadFormsAreBadInputWithTheField) {
  auto bad = parse_method_catalog(R"(
[[methods]]
id = "m"
axis = "memory"
sass = { all = ["LDG"] }
forms = [{ all = ["STS"] }]
)",
                                  "x.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find("methods[0].forms[0].name"), std::string::npos)
      << bad.error().to_string();
  auto wrong = parse_method_catalog(R"(
[[methods]]
id = "m"
axis = "memory"
sass = { all = ["LDG"] }
related = ["ldg.64"]
)",
                                    "x.toml");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().to_string().find("methods[0].related"), std::string::npos)
      << wrong.error().to_string();
}

// gemm_bf16 (examples/gemm_bf16, tests/fixtures/sass/README.md): the tensor-core methods are
// verified on the kernel that uses them and missing where its toggle (or the naive kernel)
// leaves them out; the `@!PT LDS RZ, [RZ]` ptxas places after each LDGSTS never runs and is
// no shared load.
TEST(SassFacts, TensorCoreMethodsOnTheBf16Gemm) {
  SassFunction mma = recorded("gemm_bf16_mma"), naive = recorded("gemm_bf16_naive");
  SassFunction no_ldsm = recorded("gemm_bf16_mma_no_ldmatrix"),
               no_async = recorded("gemm_bf16_mma_no_cp_async");
  for (const char* m : {"tensor_cores", "ldmatrix", "cp_async"}) {
    EXPECT_EQ(verdict(m, mma), SassVerdictKind::verified) << m;
    EXPECT_EQ(verdict(m, naive), SassVerdictKind::missing) << m;
  }
  EXPECT_EQ(verdict("tensor_cores", no_ldsm), SassVerdictKind::verified);
  EXPECT_EQ(verdict("ldmatrix", no_ldsm), SassVerdictKind::missing);
  EXPECT_EQ(verdict("cp_async", no_ldsm), SassVerdictKind::verified);
  EXPECT_EQ(verdict("cp_async", no_async), SassVerdictKind::missing);
  EXPECT_EQ(verdict("ldmatrix", no_async), SassVerdictKind::verified);
  EXPECT_EQ(verdict("wgmma", mma), SassVerdictKind::missing);

  std::size_t dummies = 0;
  for (const auto& i : mma.instructions) dummies += i.never_runs() && i.opcode == "LDS";
  EXPECT_GT(dummies, 0u) << "the recorded dump has ptxas's never-run LDS";
  SassFacts f = sass_facts(mma);
  EXPECT_EQ(f.classes.count("shared_load"), 0u) << "only LDSM reads shared memory";
  EXPECT_GT(f.classes.at("ldmatrix"), 0u);
  EXPECT_EQ(f.classes.at("tensor_core"), 64u);
  EXPECT_GT(sass_facts(no_ldsm).classes.at("shared_load"), 0u);
}

}  // namespace
}  // namespace kopt
