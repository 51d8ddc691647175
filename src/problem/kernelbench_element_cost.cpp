#include "kernelbench_element_cost.hpp"

#include <algorithm>
#include <iterator>

namespace kopt::detail {

namespace {

struct ElementRule {
  std::string_view name;
  ElementCost cost;
};
constexpr bool R = true;   // per element of the result
constexpr bool A = false;  // per element of the first argument (what a reduction reads)
constexpr std::string_view k_ew = "elementwise";
constexpr std::string_view k_red = "reduction";
constexpr std::string_view k_norm = "normalization";

// clang-format off: a table; a comment says how a count other than 1 is made up.
constexpr ElementRule k_element_rules[] = {
    // Arithmetic and comparison, one per element; Python's operators (radd, iadd, ...) too.
    {"add", {1, R, k_ew}},
    {"radd", {1, R, k_ew}},
    {"iadd", {1, R, k_ew}},
    {"sub", {1, R, k_ew}},
    {"rsub", {1, R, k_ew}},
    {"isub", {1, R, k_ew}},
    {"subtract", {1, R, k_ew}},
    {"mul", {1, R, k_ew}},
    {"rmul", {1, R, k_ew}},
    {"imul", {1, R, k_ew}},
    {"multiply", {1, R, k_ew}},
    {"div", {1, R, k_ew}},
    {"divide", {1, R, k_ew}},
    {"true_divide", {1, R, k_ew}},
    {"truediv", {1, R, k_ew}},
    {"rtruediv", {1, R, k_ew}},
    {"itruediv", {1, R, k_ew}},
    {"floor_divide", {1, R, k_ew}},
    {"floordiv", {1, R, k_ew}},
    {"remainder", {1, R, k_ew}},
    {"fmod", {1, R, k_ew}},
    {"pow", {1, R, k_ew}},
    {"rpow", {1, R, k_ew}},
    {"float_power", {1, R, k_ew}},
    {"neg", {1, R, k_ew}},
    {"negative", {1, R, k_ew}},
    {"abs", {1, R, k_ew}},
    {"square", {1, R, k_ew}},
    {"reciprocal", {1, R, k_ew}},
    {"sign", {1, R, k_ew}},
    {"maximum", {1, R, k_ew}},
    {"minimum", {1, R, k_ew}},
    {"fmax", {1, R, k_ew}},
    {"fmin", {1, R, k_ew}},
    {"gt", {1, R, k_ew}},
    {"lt", {1, R, k_ew}},
    {"ge", {1, R, k_ew}},
    {"le", {1, R, k_ew}},
    {"eq", {1, R, k_ew}},
    {"ne", {1, R, k_ew}},
    {"floor", {1, R, k_ew}},
    {"ceil", {1, R, k_ew}},
    {"round", {1, R, k_ew}},
    {"trunc", {1, R, k_ew}},
    {"frac", {1, R, k_ew}},
    {"clamp_min", {1, R, k_ew}},
    {"clamp_max", {1, R, k_ew}},
    {"where", {1, R, k_ew}},
    {"masked_fill", {1, R, k_ew}},  // a select
    {"clamp", {2, R, k_ew}},
    {"clip", {2, R, k_ew}},  // a min and a max
    {"lerp", {3, R, k_ew}},  // sub, multiply-add
    {"addcmul", {3, R, k_ew}},
    {"addcdiv", {3, R, k_ew}},  // mul or div, scale, add
    {"xlogy", {2, R, k_ew}},    // log, mul
    // Transcendentals, one each.
    {"exp", {1, R, k_ew}},
    {"exp2", {1, R, k_ew}},
    {"expm1", {1, R, k_ew}},
    {"log", {1, R, k_ew}},
    {"log2", {1, R, k_ew}},
    {"log10", {1, R, k_ew}},
    {"log1p", {1, R, k_ew}},
    {"sqrt", {1, R, k_ew}},
    {"rsqrt", {1, R, k_ew}},
    {"sin", {1, R, k_ew}},
    {"cos", {1, R, k_ew}},
    {"tan", {1, R, k_ew}},
    {"atan", {1, R, k_ew}},
    {"erf", {1, R, k_ew}},
    {"tanh", {1, R, k_ew}},
    // Activations: their arithmetic as torch.nn.functional's documentation writes them.
    {"relu", {1, R, k_ew}},         // max(0, x)
    {"threshold", {1, R, k_ew}},    // a compare-select
    {"relu6", {2, R, k_ew}},        // min(max(0, x), 6)
    {"leaky_relu", {2, R, k_ew}},   // mul, select
    {"prelu", {2, R, k_ew}},        // mul, select
    {"rrelu", {2, R, k_ew}},        // mul, select (the eval slope)
    {"elu", {3, R, k_ew}},          // exp, sub, mul (and the select)
    {"celu", {3, R, k_ew}},         // exp of x / alpha, sub, mul
    {"selu", {4, R, k_ew}},         // elu's 3 and the scale
    {"gelu", {8, R, k_ew}},         // x * 0.5 * (1 + erf(x / sqrt 2)), or the tanh form
    {"sigmoid", {3, R, k_ew}},      // exp, add, reciprocal
    {"logsigmoid", {3, R, k_ew}},   // -softplus(-x): exp, add, log
    {"silu", {4, R, k_ew}},         // x * sigmoid(x)
    {"mish", {6, R, k_ew}},         // x * tanh(softplus(x)): exp, add, log, tanh, mul, threshold
    {"softplus", {3, R, k_ew}},     // log(1 + exp(x))
    {"softsign", {3, R, k_ew}},     // x / (1 + |x|)
    {"hardtanh", {2, R, k_ew}},     // a clamp
    {"hardsigmoid", {3, R, k_ew}},  // clamp(x / 6 + 1 / 2, 0, 1)
    {"hardswish", {4, R, k_ew}},    // x * hardsigmoid(x)
    {"hardshrink", {2, R, k_ew}},   // |x| > lambda, select
    {"softshrink", {3, R, k_ew}},   // compare, sub or add, select
    {"tanhshrink", {2, R, k_ew}},   // x - tanh(x)
    {"glu", {4, R, k_ew}},          // a * sigmoid(b), per result element
    // Reductions: one per element read (argmax a compare each).
    {"sum", {1, A, k_red}},
    {"nansum", {1, A, k_red}},
    {"mean", {1, A, k_red}},
    {"nanmean", {1, A, k_red}},
    {"prod", {1, A, k_red}},
    {"max", {1, A, k_red}},
    {"min", {1, A, k_red}},
    {"amax", {1, A, k_red}},
    {"amin", {1, A, k_red}},
    {"argmax", {1, A, k_red}},
    {"argmin", {1, A, k_red}},
    {"aminmax", {2, A, k_red}},  // a min and a max
    {"norm", {2, A, k_red}},
    {"linalg_vector_norm", {2, A, k_red}},  // square-add (p = 2)
    {"linalg_norm", {2, A, k_red}},
    {"frobenius_norm", {2, A, k_red}},
    {"var", {3, A, k_red}},
    {"std", {3, A, k_red}},  // mean, sub, square-add
    {"var_mean", {3, A, k_red}},
    {"std_mean", {3, A, k_red}},
    {"logsumexp", {4, A, k_red}},  // max, sub, exp, add
    // Scans: one per element read.
    {"cumsum", {1, A, "scan"}},
    {"cumprod", {1, A, "scan"}},
    {"cummax", {1, A, "scan"}},
    {"cummin", {1, A, "scan"}},
    {"logcumsumexp", {3, A, "scan"}},  // exp, add, log
    // max, sub, exp, sum, divide (log_softmax a log and sub for the divide); softmin a negate more.
    {"softmax", {5, A, "softmax"}},
    {"log_softmax", {5, A, "softmax"}},
    {"softmin", {6, A, "softmax"}},
    // Norms in training mode (KernelBench's models are never put in eval): mean 1, variance 2,
    // normalize 2, affine 2, the rsqrt; rms_norm has no mean.
    {"layer_norm", {8, A, k_norm}},
    {"group_norm", {8, A, k_norm}},
    {"batch_norm", {8, A, k_norm}},
    {"instance_norm", {8, A, k_norm}},
    {"rms_norm", {5, A, k_norm}},             // square-add, mul by the rsqrt, affine
    {"normalize", {3, A, k_norm}},            // square-add, then a divide
    {"local_response_norm", {5, A, k_norm}},  // square, window sum, pow, divide
    // Adaptive pools: every element read once into its window's sum or max.
    {"adaptive_avg_pool1d", {1, A, "pooling"}},
    {"adaptive_avg_pool2d", {1, A, "pooling"}},
    {"adaptive_avg_pool3d", {1, A, "pooling"}},
    {"adaptive_max_pool1d", {1, A, "pooling"}},
    {"adaptive_max_pool2d", {1, A, "pooling"}},
    {"adaptive_max_pool3d", {1, A, "pooling"}},
    // Pointwise losses, per element of the input; the reduction's add included.
    {"mse_loss", {3, A, "loss"}},              // sub, square, add
    {"l1_loss", {3, A, "loss"}},               // sub, abs, add
    {"smooth_l1_loss", {4, A, "loss"}},        // sub, abs, select of the two branches, add
    {"huber_loss", {4, A, "loss"}},            // as smooth_l1
    {"kl_div", {4, A, "loss"}},                // target * (log target - input), summed
    {"hinge_embedding_loss", {4, A, "loss"}},  // margin - x, clamp, select on the label, add
    {"margin_ranking_loss", {5, A, "loss"}},   // -y * (x1 - x2) + margin, clamp, add
    {"soft_margin_loss", {5, A, "loss"}},      // log(1 + exp(-y * x)), add
    // y log x + (1 - y) log(1 - x): 2 logs, 2 subs, 2 muls, add, neg, sum.
    {"binary_cross_entropy", {9, A, "loss"}},
    {"binary_cross_entropy_with_logits", {9, A, "loss"}},  // the same, log-sigmoids of x
};

// Calls that do no arithmetic: views and copies, concatenation, masks, creation, casts.
constexpr std::string_view k_free_calls[] = {
    "cat",
    "concat",
    "concatenate",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "rot90",
    "tril",
    "triu",
    "diag",
    "diag_embed",
    "diagonal",
    "diagflat",
    "tensor",
    "as_tensor",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "eye",
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "randint_like",
    "full_like",
    "bernoulli",
    "new_full",
    "new_ones",
    "new_tensor",
    "new_empty",
    "new_zeros",
    "gather",
    "index_select",
    "take",
    "take_along_dim",
    "masked_select",
    "scatter",
    "repeat",
    "repeat_interleave",
    "tile",
    "pad",
    "constant_pad_nd",
    "copy",
    "fill",
    "zero",
    "movedim",
    "moveaxis",
    "swapaxes",
    "swapdims",
    "view_as",
    "reshape_as",
    "unflatten",
    "as_strided",
    "broadcast_to",
    "broadcast_tensors",
    "bool",
    "int",
    "long",
    "short",
    "char",
    "byte",
    "bfloat16",
    "type_as",
    "item",
    "tolist",
};
// clang-format on

}  // namespace

const ElementCost* element_cost(std::string_view name) {
  for (const auto& r : k_element_rules)
    if (r.name == name) return &r.cost;
  return nullptr;
}

bool is_free_call(std::string_view name) {
  return std::find(std::begin(k_free_calls), std::end(k_free_calls), name) !=
         std::end(k_free_calls);
}

}  // namespace kopt::detail
