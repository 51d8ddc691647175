#include "kopt/backend/drawn_inputs.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

JobTensor drawn(const fs::path& file, const TensorSpec& spec, std::int64_t n) {
  JobTensor t{spec.name, spec.dtype, static_cast<std::size_t>(n) * dtype_size(spec.dtype),
              Role::input, file};
  t.shape = {n};
  t.draw = draw_recipe(spec, 5);
  t.checksum = draw_token(*t.draw);
  return t;
}

TEST(DrawnInputs, AMissingFileIsWrittenOnceFromItsRecipeWithItsChecksum) {
  TempDir dir("kopt-drawn");
  TensorSpec spec;
  spec.name = "x";
  spec.dtype = DType::bf16;
  JobTensor t = drawn(dir.path() / "seed5" / "x.bin", spec, 1000);
  auto sum = materialize_input(t);
  ASSERT_TRUE(sum) << sum.error().message;
  HostTensor want = generate_tensor(spec, {1000}, 5);
  auto bytes = read_binary_file(t.input_path);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, want.data);
  EXPECT_EQ(*sum, hex64(checksum64(want.data)));
  // The second job reads the checksum beside the file: it is not drawn again.
  ASSERT_TRUE(write_text_atomic(fs::path(t.input_path.string() + ".sum"), "from-the-side-file"));
  EXPECT_EQ(*materialize_input(t), "from-the-side-file");
}

TEST(DrawnInputs, AJobSeesRealChecksumsAndItsCallerTheTokens) {
  TempDir dir("kopt-drawn");
  TensorSpec spec;
  spec.name = "a";
  RunJob job;
  job.tensors = {drawn(dir.path() / "a.bin", spec, 64)};
  spec.name = "b";
  job.tensors.push_back(drawn(dir.path() / "b.bin", spec, 64));
  std::string token_a = job.tensors[0].checksum, token_b = job.tensors[1].checksum;
  DrawnFiles files;
  ASSERT_TRUE(files.prepare(job));
  std::string real_a = job.tensors[0].checksum;
  EXPECT_NE(real_a, token_a);
  EXPECT_TRUE(fs::exists(dir.path() / "b.bin"));
  RunResult r;
  r.input_checksums = {{"a", real_a}, {"b", "0123456789abcdef"}};  // b was modified
  files.restore(r);
  EXPECT_EQ(r.input_checksums["a"], token_a);
  EXPECT_EQ(r.input_checksums["b"], "0123456789abcdef");
  EXPECT_NE(r.input_checksums["b"], token_b);
}

// A timing job's secret seed is a recipe: the worker writes its file only for a timer that
// reads files (OpenCL, --verify-on host), never in the orchestrator.
TEST(DrawnInputs, TheSecretSeedsFileIsWrittenFromItsRecipeWhereAJobReadsFiles) {
  TempDir dir("kopt-drawn");
  TensorSpec spec;
  spec.name = "x";
  RunJob job;
  job.tensors = {drawn(dir.path() / "x.bin", spec, 256)};
  job.tensors[0].secret_draw = draw_recipe(spec, 0x4000000000000123ull);
  job.tensors[0].secret_input_path = dir.path() / "secret" / "x.input.bin";
  ASSERT_TRUE(DrawnFiles().prepare(job));
  auto secret = read_binary_file(job.tensors[0].secret_input_path);
  ASSERT_TRUE(secret);
  EXPECT_EQ(*secret, generate_tensor(spec, {256}, 0x4000000000000123ull).data);
  EXPECT_NE(*secret, *read_binary_file(dir.path() / "x.bin"));
}

TEST(DrawnInputs, AFileThatCannotBeWrittenIsTheEnvironment) {
  TempDir dir("kopt-drawn");
  ASSERT_TRUE(write_text_atomic(dir.path() / "file", "a file where a folder should be"));
  TensorSpec spec;
  spec.name = "x";
  auto sum = materialize_input(drawn(dir.path() / "file" / "x.bin", spec, 16));
  ASSERT_FALSE(sum);
  EXPECT_EQ(sum.error().kind, ErrorKind::environment);
  EXPECT_NE(sum.error().message.find("cannot write the drawn input x"), std::string::npos);
}

TEST(DrawnInputs, TheRecipeCrossesTheProtocolWhole) {
  DrawRecipe r{InitKind::randint, -3.5, 1e300, 0xfedcba9876543210ull, DType::i16};
  auto back = draw_from(draw_json(r), DType::i16);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, r.kind);
  EXPECT_EQ(back->a, r.a);
  EXPECT_EQ(back->b, r.b);
  EXPECT_EQ(back->key, r.key);
  EXPECT_EQ(back->dtype, DType::i16);
  EXPECT_FALSE(draw_from(nullptr, DType::f32));
  EXPECT_THROW(draw_from({{"kind", "zipf"}, {"a", 0}, {"b", 1}, {"key", 1}}, DType::f32),
               std::invalid_argument);
}

}  // namespace
}  // namespace kopt
