// kernelbench_cost on recorded calls of small, concrete shapes: each formula evaluated over its
// dims and compared with a count made by hand (in the comment beside it).
#include "kopt/problem/kernelbench_cost.hpp"

#include <gtest/gtest.h>

#include "kopt/problem/expr.hpp"

namespace kopt {
namespace {
using nlohmann::json;

// One recorded call, as the import script writes it.
json call(const std::string& name, const std::vector<Extents>& args, const Extents& result,
          json extra = json::object()) {
  json op = {{"name", name}, {"args", args}, {"result", result}};
  op.update(extra);
  return op;
}

// The flops of some calls, evaluated over the dims the formula names; -1 where kopt has none.
std::int64_t flops(const json& ops, const json& globals = json::array()) {
  ShapeNamer namer(globals, {});
  auto cost = kernelbench_cost(ops, namer);
  EXPECT_TRUE(cost) << cost.error().to_string();
  if (!cost || !cost->flops) return -1;
  auto expr = Expr::parse(*cost->flops);
  EXPECT_TRUE(expr) << *cost->flops;
  Scope scope;
  for (const auto& [name, value] : namer.used()) scope[name] = value;
  auto v = expr->evaluate_int(scope);
  EXPECT_TRUE(v) << *cost->flops << ": " << v.error().message;
  return v ? *v : -1;
}
std::int64_t flops_of(const json& op) {
  return flops(json::array({op}));
}

TEST(KernelbenchCost, Convolutions) {
  // conv2d N=2, Cin=4, Cout=8, H=W=5, k=3, pad=1: 400 results * 36 taps * 2 = 28800; the bias
  // adds one per result: 29200.
  EXPECT_EQ(flops_of(call("conv2d", {{2, 4, 5, 5}, {8, 4, 3, 3}}, {2, 8, 5, 5})), 28800);
  EXPECT_EQ(flops_of(call("conv2d", {{2, 4, 5, 5}, {8, 4, 3, 3}, {8}}, {2, 8, 5, 5})), 29200);
  // groups=2, stride 2, pad 1: [2, 4, 6, 6] -> [2, 8, 3, 3]; each of 144 results reads 2 channels
  // * 9 taps: 144 * 18 multiply-adds = 5184.
  EXPECT_EQ(flops_of(call("conv2d", {{2, 4, 6, 6}, {8, 2, 3, 3}}, {2, 8, 3, 3})), 5184);
  // conv1d depthwise (groups=6), k=3, dilation 2: [1, 6, 10] -> [1, 6, 6]: 36 results * 3 taps * 2
  // = 216, the bias 36 more = 252.
  EXPECT_EQ(flops_of(call("conv1d", {{1, 6, 10}, {6, 1, 3}, {6}}, {1, 6, 6})), 252);
  // conv3d Cin=2, Cout=4, k=3: [1, 2, 4, 4, 4] -> [1, 4, 2, 2, 2]: 32 results * 54 taps * 2 = 3456.
  EXPECT_EQ(flops_of(call("conv3d", {{1, 2, 4, 4, 4}, {4, 2, 3, 3, 3}}, {1, 4, 2, 2, 2})), 3456);
}

TEST(KernelbenchCost, TransposedConvolutionsCountEachInputsScatter) {
  // conv_transpose2d Cin=4, Cout=6, groups=2, k=2, stride 2: weight [4, 3, 2, 2]; each of the 36
  // inputs scatters into 3 channels * 4 taps: 432 multiply-adds = 864; the bias 6*6*6 = 216 more.
  EXPECT_EQ(flops_of(call("conv_transpose2d", {{1, 4, 3, 3}, {4, 3, 2, 2}}, {1, 6, 6, 6})), 864);
  EXPECT_EQ(flops_of(call("conv_transpose2d", {{1, 4, 3, 3}, {4, 3, 2, 2}, {6}}, {1, 6, 6, 6})),
            1080);
  // conv_transpose1d [2, 3, 5] -> [2, 4, 7], k=3: 30 inputs * 12 * 2 = 720.
  EXPECT_EQ(flops_of(call("conv_transpose1d", {{2, 3, 5}, {3, 4, 3}}, {2, 4, 7})), 720);
  // conv_transpose3d [1, 2, 2, 2, 2] -> [1, 2, 4, 4, 4], k=3: 16 inputs * 2*27 * 2 = 1728.
  EXPECT_EQ(flops_of(call("conv_transpose3d", {{1, 2, 2, 2, 2}, {2, 2, 3, 3, 3}}, {1, 2, 4, 4, 4})),
            1728);
}

TEST(KernelbenchCost, Pools) {
  // max_pool1d k=3, stride 2: [2, 4, 9] -> [2, 4, 4]: 32 results * 3 = 96.
  EXPECT_EQ(flops_of(call("max_pool1d", {{2, 4, 9}}, {2, 4, 4}, {{"kernel_size", {3}}})), 96);
  // max_pool2d k=(2, 3): [1, 2, 4, 6] -> [1, 2, 2, 2]: 8 results * 6 = 48.
  EXPECT_EQ(flops_of(call("max_pool2d", {{1, 2, 4, 6}}, {1, 2, 2, 2}, {{"kernel_size", {2, 3}}})),
            48);
  // avg_pool2d k=3 (one size, both axes): [1, 1, 6, 6] -> [1, 1, 2, 2]: 4 * 9 = 36.
  EXPECT_EQ(flops_of(call("avg_pool2d", {{1, 1, 6, 6}}, {1, 1, 2, 2}, {{"kernel_size", {3}}})), 36);
  // avg_pool3d and max_pool3d k=2: [1, 1, 4, 4, 4] -> [1, 1, 2, 2, 2]: 8 results * 8 = 64.
  EXPECT_EQ(
      flops_of(call("avg_pool3d", {{1, 1, 4, 4, 4}}, {1, 1, 2, 2, 2}, {{"kernel_size", {2}}})), 64);
  EXPECT_EQ(
      flops_of(call("max_pool3d", {{1, 1, 4, 4, 4}}, {1, 1, 2, 2, 2}, {{"kernel_size", {2}}})), 64);
  // Adaptive pools read each input once: [2, 3, 8, 8] -> [2, 3, 1, 1]: 384; [2, 3, 10] -> [2, 3,
  // 5]: 60.
  EXPECT_EQ(flops_of(call("adaptive_avg_pool2d", {{2, 3, 8, 8}}, {2, 3, 1, 1})), 384);
  EXPECT_EQ(flops_of(call("adaptive_max_pool1d", {{2, 3, 10}}, {2, 3, 5})), 60);
  // Without its kernel size a pool cannot be costed.
  EXPECT_EQ(flops_of(call("max_pool2d", {{1, 2, 4, 6}}, {1, 2, 2, 2})), -1);
}

TEST(KernelbenchCost, Norms) {
  // x [2, 4, 3, 3] = 72 elements: mean 1, variance 2, normalize 2, affine 2, rsqrt: 8 * 72 = 576;
  // rms_norm has no mean: 5 * 72 = 360; F.normalize a square-add and a divide: 3 * 72 = 216.
  for (const char* norm : {"batch_norm", "instance_norm", "group_norm", "layer_norm"})
    EXPECT_EQ(flops_of(call(norm, {{2, 4, 3, 3}, {4}, {4}}, {2, 4, 3, 3})), 576) << norm;
  EXPECT_EQ(flops_of(call("rms_norm", {{2, 4, 3, 3}}, {2, 4, 3, 3})), 360);
  EXPECT_EQ(flops_of(call("normalize", {{2, 4, 3, 3}}, {2, 4, 3, 3})), 216);
}

TEST(KernelbenchCost, ScaledDotProductAttention) {
  // B=2, H=3, Lq=4, Lk=5, D=8: QK^T and PV 4 * 2*3*4*5 * 8 = 3840; scale and softmax 6 per score
  // * 120 scores = 720: 4560. A mask: 1 more per score, 4680. Dv=16: 2 * 120 * (8 + 16) + 720 =
  // 6480.
  EXPECT_EQ(flops_of(call("scaled_dot_product_attention",
                          {{2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}}, {2, 3, 4, 8})),
            4560);
  EXPECT_EQ(flops_of(call("scaled_dot_product_attention",
                          {{2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}, {4, 5}}, {2, 3, 4, 8})),
            4680);
  EXPECT_EQ(flops_of(call("scaled_dot_product_attention",
                          {{2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 16}}, {2, 3, 4, 16})),
            6480);
}

TEST(KernelbenchCost, Losses) {
  const Extents x{4, 10};  // 40 elements in 4 rows
  // cross_entropy: log_softmax 5 * 40, the picked -log p summed 2 * 4: 208.
  EXPECT_EQ(flops_of(call("cross_entropy", {x, {4}}, {})), 208);
  EXPECT_EQ(flops_of(call("nll_loss", {x, {4}}, {})), 8);
  // kl_div: target * (log target - input), summed: 4 * 40 = 160.
  EXPECT_EQ(flops_of(call("kl_div", {x, x}, {})), 160);
  // triplet_margin_loss: two distances 8 * 40, per row 2 sqrts, sub, add, clamp, mean 6 * 4: 344.
  EXPECT_EQ(flops_of(call("triplet_margin_loss", {x, x, x}, {})), 344);
  // smooth_l1 and huber 4 per element, mse and l1 3, hinge_embedding 4.
  EXPECT_EQ(flops_of(call("smooth_l1_loss", {x, x}, {})), 160);
  EXPECT_EQ(flops_of(call("huber_loss", {x, x}, {})), 160);
  EXPECT_EQ(flops_of(call("mse_loss", {x, x}, {})), 120);
  EXPECT_EQ(flops_of(call("l1_loss", {x, x}, {})), 120);
  EXPECT_EQ(flops_of(call("hinge_embedding_loss", {x, x}, {})), 160);
  // cosine_similarity over dim 1: dot and two squared norms 6 * 40, per row 4 * 4: 256;
  // cosine_embedding_loss 4 more per row: 272.
  EXPECT_EQ(flops_of(call("cosine_similarity", {x, x}, {4})), 256);
  EXPECT_EQ(flops_of(call("cosine_embedding_loss", {x, x, {4}}, {})), 272);
}

TEST(KernelbenchCost, ScansAndTheirReversedAndExclusiveForms) {
  // cumsum or cumprod over [3, 7]: 21; reversed through flips, still 21.
  EXPECT_EQ(flops_of(call("cumsum", {{3, 7}}, {3, 7})), 21);
  EXPECT_EQ(flops_of(call("cumprod", {{3, 7}}, {3, 7})), 21);
  EXPECT_EQ(flops(json::array({call("flip", {{3, 7}}, {3, 7}), call("cumsum", {{3, 7}}, {3, 7}),
                               call("flip", {{3, 7}}, {3, 7})})),
            21);
  // Exclusive: a cumsum over the first 6 of each row (18), then a zero column concatenated.
  EXPECT_EQ(
      flops(json::array({call("cumsum", {{3, 6}}, {3, 6}), call("cat", {{3, 1}, {3, 6}}, {3, 7})})),
      18);
  // Masked: the multiply by the mask (21) and the cumsum (21).
  EXPECT_EQ(
      flops(json::array({call("mul", {{3, 7}, {3, 7}}, {3, 7}), call("cumsum", {{3, 7}}, {3, 7})})),
      42);
}

TEST(KernelbenchCost, MatrixProducts) {
  // mm [3, 4] @ [4, 5]: 2 * 15 * 4 = 120; broadcast matmul [2, 3, 4] @ [4, 5] and bmm: 240.
  EXPECT_EQ(flops_of(call("mm", {{3, 4}, {4, 5}}, {3, 5})), 120);
  EXPECT_EQ(flops_of(call("matmul", {{2, 3, 4}, {4, 5}}, {2, 3, 5})), 240);
  EXPECT_EQ(flops_of(call("bmm", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5})), 240);
  // A vector on the left, [4] @ [4, 5]: 2 * 5 * 4 = 40; mv [3, 4] @ [4]: 24.
  EXPECT_EQ(flops_of(call("matmul", {{4}, {4, 5}}, {5})), 40);
  EXPECT_EQ(flops_of(call("mv", {{3, 4}, {4}}, {3})), 24);
  // A @ B called on B (__rmatmul__): K is B's first axis: 120.
  EXPECT_EQ(flops_of(call("rmatmul", {{4, 5}, {3, 4}}, {3, 5})), 120);
  // linear with a bias and addmm: 120 and the add of 15.
  EXPECT_EQ(flops_of(call("linear", {{3, 4}, {5, 4}, {5}}, {3, 5})), 135);
  EXPECT_EQ(flops_of(call("addmm", {{3, 5}, {3, 4}, {4, 5}}, {3, 5})), 135);
  // triu of a product: the mask is free, 2 * 9 * 3 = 54.
  EXPECT_EQ(flops(json::array(
                {call("matmul", {{3, 3}, {3, 3}}, {3, 3}), call("triu", {{3, 3}}, {3, 3})})),
            54);
}

TEST(KernelbenchCost, EinsumCountsItsIndexSpace) {
  // "bijl,lk->bijk" [2, 3, 4, 5], [5, 6]: a multiply-add per point of b,i,j,l,k: 2 * 720 = 1440.
  EXPECT_EQ(flops_of(call("einsum", {{2, 3, 4, 5}, {5, 6}}, {2, 3, 4, 6},
                          {{"equation", "bijl,lk->bijk"}})),
            1440);
  // Implicit output "ij,jk" is a matrix product: 2 * 3*4*5 = 120.
  EXPECT_EQ(flops_of(call("einsum", {{3, 4}, {4, 5}}, {3, 5}, {{"equation", "ij,jk"}})), 120);
  // A row sum adds 12; a transpose is free.
  EXPECT_EQ(flops_of(call("einsum", {{3, 4}}, {3}, {{"equation", "ij->i"}})), 12);
  EXPECT_EQ(flops_of(call("einsum", {{3, 4}}, {4, 3}, {{"equation", "ij->ji"}})), 0);
  // Recorded without its equation (an older import script): no formula.
  EXPECT_EQ(flops_of(call("einsum", {{3, 4}, {4, 5}}, {3, 5})), -1);
}

TEST(KernelbenchCost, Activations) {
  const Extents x{2, 5};  // 10 elements
  EXPECT_EQ(flops_of(call("relu", {x}, x)), 10);
  EXPECT_EQ(flops_of(call("gelu", {x}, x)), 80);
  EXPECT_EQ(flops_of(call("hardswish", {x}, x)), 40);
  EXPECT_EQ(flops_of(call("mish", {x}, x)), 60);
  EXPECT_EQ(flops_of(call("logsigmoid", {x}, x)), 30);
  EXPECT_EQ(flops_of(call("softmax", {x}, x)), 50);
  EXPECT_EQ(flops_of(call("log_softmax", {x}, x)), 50);
  EXPECT_EQ(flops_of(call("logsumexp", {x}, {2})), 40);
  // In place (relu_) and with a scalar operand (x * 2.0, recorded with one tensor): per result.
  EXPECT_EQ(flops_of(call("relu_", {x}, x)), 10);
  EXPECT_EQ(flops_of(call("mul", {x}, x)), 10);
}

TEST(KernelbenchCost, DropoutCostsAMultiplyOnlyWhenItDrops) {
  const Extents x{2, 5};
  EXPECT_EQ(flops_of(call("dropout", {x}, x, {{"p", 0.2}, {"training", true}})), 10);
  EXPECT_EQ(flops_of(call("dropout", {x}, x, {{"p", 0.2}, {"training", false}})), 0);
  EXPECT_EQ(flops_of(call("dropout", {x}, x, {{"p", 0.0}, {"training", true}})), 0);
}

TEST(KernelbenchCost, FormulasNameTheFilesSizeConstants) {
  json globals = {{{"name", "batch"}, {"value", 2}},
                  {{"name", "cin"}, {"value", 4}},
                  {{"name", "cout"}, {"value", 8}},
                  {{"name", "h"}, {"value", 5}},
                  {{"name", "w"}, {"value", 6}}};
  json ops = json::array({call("conv2d", {{2, 4, 5, 6}, {8, 4, 3, 3}}, {2, 8, 5, 6}),
                          call("relu", {{2, 8, 5, 6}}, {2, 8, 5, 6})});
  ShapeNamer namer(globals, {});
  auto cost = kernelbench_cost(ops, namer);
  ASSERT_TRUE(cost && cost->flops);
  EXPECT_EQ(*cost->flops, "2 * batch * cout * h * w * cin * 3 * 3 + batch * cout * h * w");
  EXPECT_EQ(cost->family, "convolution");
  // 480 results: the convolution 2 * 480 * 36, the relu 480: 35040.
  EXPECT_EQ(flops(ops, globals), 35040);
}

TEST(KernelbenchCost, CallsWithoutArithmeticCostNothingAndUnknownOnesLeaveNoFormula) {
  EXPECT_EQ(flops_of(call("cat", {{3, 1}, {3, 6}}, {3, 7})), 0);
  ShapeNamer namer(json::array(), {});
  auto cost =
      kernelbench_cost(json::array({call("sort", {{8}}, {8}), call("relu", {{8}}, {8})}), namer);
  ASSERT_TRUE(cost);
  EXPECT_FALSE(cost->flops);
  EXPECT_EQ(cost->unknown_ops, std::vector<std::string>{"sort"});
  EXPECT_TRUE(kernelbench_op_known("tril"));
  EXPECT_TRUE(kernelbench_op_known("add_"));
  EXPECT_FALSE(kernelbench_op_known("sort"));
  // Malformed facts are an error, not a throw.
  EXPECT_FALSE(kernelbench_cost(json::array({{{"name", "relu"}}}), namer));
}

}  // namespace
}  // namespace kopt
