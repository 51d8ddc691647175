// The device comparison's rule is compare_tensors' (backend/output_compare_kernel.hpp): its
// source, built for the host with the machine's c++ and loaded here, gives the same counts,
// maxima, first mismatch and verdict on every dtype, over values equal, within, at and past the
// tolerance, NaN and infinities on either side, the poison, zeros in the reference, and work
// split over several work-items.
#include "kopt/backend/output_compare_kernel.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "compare_cases.hpp"
#include "kopt/core/dynlib.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/measure/compare.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

using CompareFn = void (*)(const unsigned char*, const unsigned char*, std::uint64_t, int,
                           std::uint64_t, double, double, std::uint64_t, std::uint64_t*);
using MaskFn = void (*)(const unsigned char*, unsigned char*, std::uint64_t, int, std::uint64_t);

// The host dialect as a shared library, built once for the whole suite.
class OutputCompareKernel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cxx = find_program("c++");
    if (!cxx) return;
    s_dir = std::make_unique<TempDir>("kopt-compare-kernel");
    fs::path source = s_dir->path() / "compare.cpp", lib = s_dir->path() / "libcompare.so";
    ASSERT_TRUE(write_text_atomic(source, output_compare_source(KernelDialect::host)));
    SystemCommandRunner run;
    auto built = run.run({cxx->string(), "-std=c++17", "-O2", "-ffp-contract=off", "-shared",
                          "-fPIC", "-o", lib.string(), source.string()},
                         std::chrono::seconds(300));
    ASSERT_TRUE(built.ok()) << built.err;
    auto opened = DynLib::open({lib.string()}, "the comparison's host build");
    ASSERT_TRUE(opened) << opened.error().message;
    s_lib = std::make_unique<DynLib>(std::move(*opened));
    s_fn = reinterpret_cast<CompareFn>(s_lib->symbol("kopt_compare_outputs"));
    s_mask = reinterpret_cast<MaskFn>(s_lib->symbol("kopt_mask_copy"));
  }
  static void TearDownTestSuite() {
    s_lib.reset();
    s_dir.reset();
  }
  void SetUp() override {
    if (!s_fn) GTEST_SKIP() << "no c++ on PATH to build the comparison's source for the host";
  }

  // The kernel over `items` work-items, each a grid-stride walk: the host dialect is one
  // work-item over [0, n); splitting the tensor into strided views is what a grid does.
  static CompareResult device(const HostTensor& got, const HostTensor& expected, Tolerance tol,
                              std::size_t items) {
    CompareWords w = compare_words_start();
    const std::size_t n = got.numel(), size = dtype_size(got.dtype);
    for (std::size_t item = 0; item < items; ++item) {
      // Work-item `item` of `items` sees elements item, item + items, ...: the same elements a
      // grid-stride loop gives it, gathered so that the one-item host entry walks them.
      std::vector<std::byte> g, e;
      std::vector<std::size_t> flat;
      for (std::size_t i = item; i < n; i += items) {
        g.insert(g.end(), got.data.begin() + i * size, got.data.begin() + (i + 1) * size);
        e.insert(e.end(), expected.data.begin() + i * size, expected.data.begin() + (i + 1) * size);
        flat.push_back(i);
      }
      CompareWords part = compare_words_start();
      s_fn(reinterpret_cast<const unsigned char*>(g.data()),
           reinterpret_cast<const unsigned char*>(e.data()), flat.size(),
           compare_dtype_code(got.dtype), compare_poison_bits(got.dtype), tol.atol, tol.rtol, 0,
           part.data());
      // Merged as the atomics merge them.
      w[k_word_mismatches] += part[k_word_mismatches];
      w[k_word_nan] += part[k_word_nan];
      w[k_word_inf] += part[k_word_inf];
      w[k_word_unwritten] += part[k_word_unwritten];
      w[k_word_max_abs] = std::max(w[k_word_max_abs], part[k_word_max_abs]);
      w[k_word_max_rel] = std::max(w[k_word_max_rel], part[k_word_max_rel]);
      if (part[k_word_mismatches] > 0)
        w[k_word_first] = std::min<std::uint64_t>(w[k_word_first], flat[part[k_word_first]]);
    }
    std::optional<FirstMismatch> first;
    if (w[k_word_mismatches] > 0) {
      const auto i = static_cast<std::size_t>(w[k_word_first]);
      first = FirstMismatch{load_as_double(got.data.data(), i, got.dtype),
                            load_as_double(expected.data.data(), i, expected.dtype)};
    }
    return compare_result_from_words(w, expected.name, n, expected.shape, tol, first);
  }

  static void expect_same(const CompareResult& d, const CompareResult& h, const std::string& what) {
    EXPECT_EQ(d.passed, h.passed) << what;
    EXPECT_EQ(d.mismatches, h.mismatches) << what;
    EXPECT_EQ(d.nan_count, h.nan_count) << what;
    EXPECT_EQ(d.inf_count, h.inf_count) << what;
    EXPECT_EQ(d.unwritten, h.unwritten) << what;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(d.max_abs_err),
              std::bit_cast<std::uint64_t>(h.max_abs_err))
        << what << ": " << d.max_abs_err << " against " << h.max_abs_err;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(d.max_rel_err),
              std::bit_cast<std::uint64_t>(h.max_rel_err))
        << what << ": " << d.max_rel_err << " against " << h.max_rel_err;
    ASSERT_EQ(d.first_mismatches.size(), h.first_mismatches.size()) << what;
    if (!h.first_mismatches.empty()) {
      const Mismatch &a = d.first_mismatches[0], &b = h.first_mismatches[0];
      EXPECT_EQ(a.flat, b.flat) << what;
      EXPECT_EQ(a.index, b.index) << what;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(a.got), std::bit_cast<std::uint64_t>(b.got)) << what;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(a.expected), std::bit_cast<std::uint64_t>(b.expected))
          << what;
    }
  }

  // The whole tensor in one work-item, against a copy of `expected` masked under `key`.
  static CompareResult masked(const HostTensor& got, const HostTensor& expected, Tolerance tol,
                              std::uint64_t key, HostTensor* copy_out = nullptr) {
    HostTensor copy = expected;
    const int width = static_cast<int>(dtype_size(expected.dtype));
    s_mask(reinterpret_cast<const unsigned char*>(expected.data.data()),
           reinterpret_cast<unsigned char*>(copy.data.data()), expected.numel(), width, key);
    CompareWords w = compare_words_start();
    s_fn(reinterpret_cast<const unsigned char*>(got.data.data()),
         reinterpret_cast<const unsigned char*>(copy.data.data()), got.numel(),
         compare_dtype_code(got.dtype), compare_poison_bits(got.dtype), tol.atol, tol.rtol, key,
         w.data());
    std::optional<FirstMismatch> first;
    if (w[k_word_mismatches] > 0) {
      const auto i = static_cast<std::size_t>(w[k_word_first]);
      std::vector<std::byte> e(copy.data.begin() + i * width, copy.data.begin() + (i + 1) * width);
      unmask_element(e, key, i);
      first = FirstMismatch{load_as_double(got.data.data(), i, got.dtype),
                            load_as_double(e.data(), 0, expected.dtype)};
    }
    if (copy_out) *copy_out = std::move(copy);
    return compare_result_from_words(w, expected.name, got.numel(), expected.shape, tol, first);
  }

  static std::unique_ptr<TempDir> s_dir;
  static std::unique_ptr<DynLib> s_lib;
  static CompareFn s_fn;
  static MaskFn s_mask;
};
std::unique_ptr<TempDir> OutputCompareKernel::s_dir;
std::unique_ptr<DynLib> OutputCompareKernel::s_lib;
CompareFn OutputCompareKernel::s_fn = nullptr;
MaskFn OutputCompareKernel::s_mask = nullptr;

TEST_F(OutputCompareKernel, EveryDtypeIsJudgedAsCompareTensorsJudgesIt) {
  for (DType t : test::k_compare_dtypes)
    for (Tolerance tol : {default_tolerance(t), Tolerance{1e-3, 1e-2}, Tolerance{0, 0}})
      for (std::uint32_t seed : {1u, 7u})
        for (std::size_t items : {1u, 3u, 64u}) {
          auto [got, expected] = test::compare_cases(t, tol, seed, 4096);
          const std::string what = fmt::format("{} atol {} rtol {} seed {} over {} items",
                                               dtype_name(t), tol.atol, tol.rtol, seed, items);
          expect_same(device(got, expected, tol, items), compare_tensors(got, expected, tol, 1),
                      what);
        }
}

TEST_F(OutputCompareKernel, AnOutputThatMatchesHasNoFirstMismatchAndPasses) {
  for (DType t : test::k_compare_dtypes) {
    HostTensor expected = test::compare_cases(t, default_tolerance(t), 3, 512).second;
    CompareResult d = device(expected, expected, default_tolerance(t), 16);
    CompareResult h = compare_tensors(expected, expected, default_tolerance(t), 1);
    expect_same(d, h, std::string(dtype_name(t)));
    EXPECT_TRUE(d.passed) << dtype_name(t);
  }
}

TEST_F(OutputCompareKernel, AllPoisonIsCountedUnwrittenAndEveryElementAMismatch) {
  HostTensor expected = test::compare_tensor("y", DType::f32, 1024),
             got = test::compare_tensor("y", DType::f32, 1024);
  for (std::size_t i = 0; i < 1024; ++i) {
    store_from_double(expected.data.data(), i, DType::f32, 1.0 + static_cast<double>(i));
    test::put_bits(got, i, compare_poison_bits(DType::f32));
  }
  CompareResult d = device(got, expected, {1e-5, 1e-5}, 8);
  EXPECT_EQ(d.unwritten, 1024u);
  EXPECT_EQ(d.mismatches, 1024u);
  EXPECT_EQ(d.nan_count, 1024u);
  ASSERT_EQ(d.first_mismatches.size(), 1u);
  EXPECT_EQ(d.first_mismatches[0].flat, 0u);
  EXPECT_TRUE(std::isinf(d.max_abs_err));
  EXPECT_FALSE(d.passed);
}

// A masked copy judges as the plain bytes do, and its bytes are noise: a kernel that copies them
// into its output has none of the reference's values.
TEST_F(OutputCompareKernel, AMaskedCopyJudgesAsThePlainOneAndHoldsNoneOfItsValues) {
  for (DType t : test::k_compare_dtypes) {
    const Tolerance tol = default_tolerance(t);
    auto [got, expected] = test::compare_cases(t, tol, 13, 4096);
    const std::uint64_t key = 0x5a17c0de12345679ull;
    HostTensor copy;
    expect_same(masked(got, expected, tol, key, &copy), compare_tensors(got, expected, tol, 1),
                std::string(dtype_name(t)) + " masked");
    // The copy itself, taken for an output, fails nearly everywhere.
    CompareResult as_output = compare_tensors(copy, expected, tol, 1);
    EXPECT_GT(as_output.mismatches, 4096u * 9 / 10) << dtype_name(t);
  }
}

TEST(OutputCompareSource, EachDialectHasTheKernelAndNoContractionOfTheBound) {
  for (KernelDialect d : {KernelDialect::cuda, KernelDialect::opencl, KernelDialect::host}) {
    std::string s = output_compare_source(d);
    EXPECT_NE(s.find("kopt_compare_outputs"), std::string::npos);
    EXPECT_NE(s.find("KOPT_BOUND(atol, rtol, fabs(e))"), std::string::npos);
  }
  EXPECT_NE(output_compare_source(KernelDialect::cuda).find("__dadd_rn((atol), __dmul_rn("),
            std::string::npos);
  EXPECT_NE(output_compare_source(KernelDialect::opencl).find("#pragma OPENCL FP_CONTRACT OFF"),
            std::string::npos);
  // Poison bits as is_poison reads them, little-endian over the element's width.
  EXPECT_EQ(compare_poison_bits(DType::f64), 0x7ff87ff87ff87ff8ull);
  EXPECT_EQ(compare_poison_bits(DType::i64), 0xdeadbeefdeadbeefull);
  EXPECT_EQ(compare_poison_bits(DType::f32), 0x7fc00000ull);
  EXPECT_EQ(compare_poison_bits(DType::bf16), 0x7fc0ull);
  EXPECT_EQ(compare_poison_bits(DType::i8), 0xa5ull);
}

}  // namespace
}  // namespace kopt
