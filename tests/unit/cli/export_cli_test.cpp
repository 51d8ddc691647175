// `kopt export` through the binary, with no GPU, Python or nvcc: the files it writes, its JSON
// against docs/json/commands.json, a tune champion's point, and what it refuses with exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli_fixture.hpp"
#include "kopt/core/fs.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class ExportCli : public test::CliFixture {
 protected:
  json run(std::vector<std::string> args, int& rc) {
    args.insert(args.begin(), "export");
    args.push_back("--json");
    CommandResult r = test::run_kopt(args);
    rc = r.exit_code;
    try {
      return json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << r.out << "\n" << r.err;
      return {};
    }
  }
  // Exit 2 with an error that says `what`.
  void refused(std::vector<std::string> args, const std::string& what) {
    int rc = -1;
    json j = run(std::move(args), rc);
    EXPECT_EQ(rc, 2) << j.dump(2);
    EXPECT_NE(j.value("error", "").find(what), std::string::npos)
        << "expected '" << what << "' in: " << j.value("error", "");
  }
  std::string example(const std::string& name) {
    return (test::source_dir() / "examples" / name).string();
  }
  std::string out(const std::string& name) { return (m_cache.path() / name).string(); }
};

TEST_F(ExportCli, WritesTheFilesAndPrintsTheDocumentedFields) {
  int rc = -1;
  json j = run({example("kernelbench/19_ReLU"), "--kernel", "vec", "--set", "BLOCK=512", "--format",
                "modelnew", "--out", out("relu_new.py")},
               rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["kernel"], "vec");
  EXPECT_EQ(j["language"], "cuda");
  EXPECT_EQ(j["params"], json({{"BLOCK", 512}, {"VEC", 4}}));
  EXPECT_EQ(j["files"], json({fs::absolute(out("relu_new.py")).string()}));
  EXPECT_NE(j["next"].get<std::string>().find("bench/kernelbench_eval.py"), std::string::npos);
  auto text = read_text_file(out("relu_new.py"));
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("class ModelNew(Model):"), std::string::npos);

  std::set<std::string> keys, documented;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  auto docs = json::parse(*read_text_file(test::source_dir() / "docs/json/commands.json"));
  for (auto it = docs["export"]["fields"].begin(); it != docs["export"]["fields"].end(); ++it)
    documented.insert(it.key());
  EXPECT_EQ(keys, documented) << "docs/json/commands.json documents export's fields";

  refused({example("kernelbench/19_ReLU"), "--kernel", "vec", "--format", "modelnew", "--out",
           out("relu_new.py")},
          "--force");
  json again = run({example("kernelbench/19_ReLU"), "--kernel", "vec", "--format", "modelnew",
                    "--out", out("relu_new.py"), "--force"},
                   rc);
  EXPECT_EQ(rc, 0) << again.dump(2);

  json solve = run({example("kernelbench/19_ReLU"), "--kernel", "vec", "--format", "solve", "--out",
                    out("relu_solve")},
                   rc);
  ASSERT_EQ(rc, 0) << solve.dump(2);
  for (const char* f : {"solve.cu", "ref.py", "README.md", "problem_ref.py", "model.py"})
    EXPECT_TRUE(fs::exists(m_cache.path() / "relu_solve" / f)) << f;
  EXPECT_NE(solve["next"].get<std::string>().find(
                "kopt check solve.cu --ref ref.py --dims batch_size=4096,dim=8192"),
            std::string::npos);
}

TEST_F(ExportCli, ATuneChampionFileGivesThePointTheDimsAndTheKernel) {
  std::string champion = out("champion.json");
  ASSERT_TRUE(
      write_text_atomic(champion, json{{"schema_version", 1},
                                       {"command", "tune"},
                                       {"problem", "19_ReLU"},
                                       {"kernel", "vec"},
                                       {"dims", {{"batch_size", 64}}},
                                       {"champion", {{"params", {{"BLOCK", 256}, {"VEC", 1}}}}}}
                                      .dump()));
  int rc = -1;
  json j = run({example("kernelbench/19_ReLU"), "--from-tune", champion, "--format", "solve",
                "--out", out("champ")},
               rc);
  ASSERT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["kernel"], "vec");
  EXPECT_EQ(j["params"], json({{"BLOCK", 256}, {"VEC", 1}}));
  EXPECT_EQ(j["dims"]["batch_size"], 64);
  json set = run({example("kernelbench/19_ReLU"), "--from-tune", champion, "--set", "VEC=4",
                  "--format", "solve", "--out", out("champ"), "--force"},
                 rc);
  EXPECT_EQ(set["params"], json({{"BLOCK", 256}, {"VEC", 4}})) << "--set over the champion";
  refused({example("kernelbench/19_ReLU"), "--from-tune", champion, "--kernel", "triton",
           "--format", "modelnew", "--out", out("x.py")},
          "champion of kernel 'vec'");
  ASSERT_TRUE(write_text_atomic(champion, json{{"command", "tune"},
                                               {"kernel", "vec"},
                                               {"champion", nullptr},
                                               {"why", "every point failed"}}
                                              .dump()));
  refused({example("kernelbench/19_ReLU"), "--from-tune", champion, "--format", "modelnew", "--out",
           out("x.py")},
          "has no champion: every point failed");
}

TEST_F(ExportCli, WhatCannotBeExportedIsExit2NamingTheField) {
  refused({example("kernelbench/19_ReLU"), "--format", "modelnew", "--out", out("x.py")},
          "several kernels (vec, triton, solve)");
  refused({example("softmax"), "--kernel", "tuned", "--format", "modelnew", "--out", out("x.py")},
          "reference.kind");
  refused({example("kernelbench/19_ReLU"), "--kernel", "triton", "--format", "solve", "--out",
           out("t")},
          "kernels[1].source");
  refused({example("gemm_bf16"), "--kernel", "wgmma", "--format", "modelnew", "--out", out("x.py")},
          "tensor map");
  fs::path dir = m_cache.path() / "cl_only";
  fs::create_directories(dir);
  ASSERT_TRUE(write_text_atomic(dir / "k.cl", "__kernel void k(__global float* y) {}\n"));
  ASSERT_TRUE(write_text_atomic(dir / "k.cu", "__global__ void k(float* y) {}\n"));
  ASSERT_TRUE(write_text_atomic(dir / "ref.py", "def reference(**kw):\n    pass\n"));
  ASSERT_TRUE(write_text_atomic(dir / "kopt.toml", R"TOML(name = "cl"
[dims]
n = 8
[[tensors]]
name = "y"
dtype = "f32"
shape = ["n"]
role = "output"
[reference]
kind = "python"
source = "ref.py"
[[kernels]]
name = "cl"
source = "k.cl"
entry = "k"
args = ["y"]
grid = [1]
block = [1]
[[kernels]]
name = "cu"
source = "k.cu"
entry = "k"
args = ["y"]
grid = [1]
block = [1]
)TOML"));
  refused({dir.string(), "--kernel", "cl", "--format", "modelnew", "--out", out("x.py")},
          "only an OpenCL source");
  int rc = -1;
  json cu =
      run({dir.string(), "--kernel", "cu", "--format", "modelnew", "--out", out("cu.py")}, rc);
  EXPECT_EQ(rc, 0) << cu.dump(2);
}

}  // namespace
}  // namespace kopt
