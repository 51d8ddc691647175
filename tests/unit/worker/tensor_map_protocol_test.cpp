// A tensor-map argument crosses the worker protocol with its box and swizzle.
#include <gtest/gtest.h>

#include "kopt/worker/protocol.hpp"

namespace kopt {
namespace {
using nlohmann::json;

TEST(Protocol, TensorMapArgumentsRoundTrip) {
  RunJob job;
  job.label = "gemm/wgmma BM=128";
  job.module_path = "/cache/k.cubin";
  job.entry = "k";
  job.args = {ResolvedArg{"A", DType::bf16, std::int64_t{0}, ResolvedTensorMap{{128, 64}, 128}},
              ResolvedArg{"C", DType::f32, std::int64_t{0}},
              ResolvedArg{"", DType::i32, std::int64_t{4096}}};
  job.tensors = {JobTensor{"A", DType::bf16, 4096 * 4096 * 2, Role::input, "/in/A.bin", ""}};
  json j = to_json(job);
  EXPECT_EQ(j["args"][0],
            json::parse(R"({"tensor": "A", "tensor_map": {"box": [128, 64], "swizzle": 128}})"));
  EXPECT_EQ(j["args"][1], json::parse(R"({"tensor": "C"})"));
  RunJob back = run_job_from_json(json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  ASSERT_TRUE(back.args[0].tensor_map);
  EXPECT_EQ(back.args[0].tensor, "A");
  EXPECT_EQ(back.args[0].tensor_map->box, (std::vector<std::int64_t>{128, 64}));
  EXPECT_EQ(back.args[0].tensor_map->swizzle, 128);
  EXPECT_FALSE(back.args[1].tensor_map);
  EXPECT_EQ(resolved_arg_from_json(json::parse(R"({"tensor": "A", "tensor_map": {"box": [8]}})"))
                .tensor_map->swizzle,
            0);
}

}  // namespace
}  // namespace kopt
