// The FP8 tensor-core ceiling, tensor_fp8 (compute capability 8.9 and later): cublasLtMatmul
// at 8192^3, e4m3 operands, bf16 out, f32 accumulation. cublasGemmEx has no FP8 path, so
// this one ceiling goes through cuBLASLt, loaded at run time like cuBLAS (ceilings.cpp).
// cuBLASLt's FP8 kernels want the "TN" layout: A transposed and B not, both column-major with
// ld = K; alpha 1 and beta 0 on f32 scales, no per-tensor scale pointers (they default to 1).
#include "kopt/backend/cuda/fp8_ceiling.hpp"

#include <cublasLt.h>

#include <array>
#include <cmath>
#include <memory>

#include "ceiling_timing.hpp"

namespace kopt::cuda {

std::uint8_t e4m3_from_float(float x) {
  if (std::isnan(x)) return 0x7F;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 448) return static_cast<std::uint8_t>(sign | 0x7E);  // saturate, infinities too (no inf)
  long code = 0;
  if (a < 0x1p-6) {
    // Subnormal: m * 2^-9 is code m (0..7); 8 rounds up into the smallest normal, code 8.
    code = std::lround(std::nearbyint(a * 512));
  } else {
    int e = 0;
    const double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): exponent e - 1, biased e + 6
    const long q = std::lround(std::nearbyint(f * 16));  // 1.mmm times 8, ties to even: 8..16
    code = (e + 6L) * 8 + (q - 8);  // q = 16 carries into the exponent by itself
  }
  return static_cast<std::uint8_t>(sign | code);  // below 448, so at most 0x7E
}

std::vector<std::uint8_t> random_e4m3(std::size_t count, std::uint64_t seed) {
  // Every 16-bit draw maps to the e4m3 value nearest the middle of its 1/32768-wide slice of
  // [-1, 1]: a table lookup keeps 64 Mi values well under a second.
  static const std::vector<std::uint8_t> table = [] {
    std::vector<std::uint8_t> t(1 << 16);
    for (std::size_t k = 0; k < t.size(); ++k)
      t[k] = e4m3_from_float(static_cast<float>((static_cast<double>(k) + 0.5) * 0x1p-15 - 1.0));
    return t;
  }();
  std::vector<std::uint8_t> out(count);
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < count; i += 4) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (std::size_t j = 0; j < 4 && i + j < count; ++j)
      out[i + j] = table[(z >> (16 * j)) & 0xFFFF];
  }
  return out;
}

namespace {

constexpr const char* k_name = "tensor_fp8";
constexpr std::size_t k_workspace_bytes = std::size_t{32} << 20;

// X(member, exported symbol): the cuBLASLt entry points the measurement uses.
#define KOPT_CUBLASLT_FUNCTIONS(X)                                  \
  X(create, cublasLtCreate)                                         \
  X(destroy, cublasLtDestroy)                                       \
  X(desc_create, cublasLtMatmulDescCreate)                          \
  X(desc_destroy, cublasLtMatmulDescDestroy)                        \
  X(desc_set_attribute, cublasLtMatmulDescSetAttribute)             \
  X(layout_create, cublasLtMatrixLayoutCreate)                      \
  X(layout_destroy, cublasLtMatrixLayoutDestroy)                    \
  X(preference_create, cublasLtMatmulPreferenceCreate)              \
  X(preference_destroy, cublasLtMatmulPreferenceDestroy)            \
  X(preference_set_attribute, cublasLtMatmulPreferenceSetAttribute) \
  X(algo_get_heuristic, cublasLtMatmulAlgoGetHeuristic)             \
  X(matmul, cublasLtMatmul)

struct CublasLtApi {
#define KOPT_DECLARE(member, sym) decltype(&::sym) member = nullptr;
  KOPT_CUBLASLT_FUNCTIONS(KOPT_DECLARE)
#undef KOPT_DECLARE
  DynLib lib;
};

Expected<const CublasLtApi*> cublaslt_api() {
  return load_once<CublasLtApi>([]() -> Expected<std::unique_ptr<CublasLtApi>> {
    auto lib = DynLib::open(
        toolkit_library_candidates({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}),
        "cuBLASLt (libcublasLt.so)");
    if (!lib) return Unexpected(lib.error());
    auto a = std::make_unique<CublasLtApi>();
    a->lib = std::move(*lib);
    std::string missing;
#define KOPT_RESOLVE(member, sym)                                         \
  a->member = reinterpret_cast<decltype(a->member)>(a->lib.symbol(#sym)); \
  if (!a->member) missing += (missing.empty() ? "" : ", ") + std::string(#sym);
    KOPT_CUBLASLT_FUNCTIONS(KOPT_RESOLVE)
#undef KOPT_RESOLVE
    if (!missing.empty())
      return Unexpected(environment_error("cuBLASLt at " + a->lib.path() + " lacks " + missing));
    return a;
  });
}

// The cuBLASLt objects of the measurement, destroyed together (statuses ignored: destructors
// never throw). C and D share one layout: beta is 0 and C is D.
struct LtObjects {
  explicit LtObjects(const CublasLtApi& api) : lt(api) {}
  LtObjects(const LtObjects&) = delete;
  LtObjects& operator=(const LtObjects&) = delete;
  ~LtObjects() {
    if (preference) lt.preference_destroy(preference);
    for (cublasLtMatrixLayout_t layout : {d, b, a})
      if (layout) lt.layout_destroy(layout);
    if (op) lt.desc_destroy(op);
    if (handle) lt.destroy(handle);
  }
  const CublasLtApi& lt;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
};

Ceiling missing(const std::string& why) {
  return Ceiling{k_name, "FLOP/s", 0, 0, "", why};
}

std::string failed(const char* call, cublasStatus_t status) {
  return std::string(call) + " failed with status " + std::to_string(static_cast<int>(status));
}

// Creates the handle, the operation, the layouts and the preference of an n^3 TN GEMM and
// takes the heuristic's first algorithm; empty, or which call failed with which status.
std::string prepare(LtObjects& o, int n, cublasLtMatmulHeuristicResult_t& chosen) {
  const CublasLtApi& lt = o.lt;
  const std::int32_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;  // the attributes' type
  const std::uint64_t workspace_limit = k_workspace_bytes;
  const char* call = "";
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  auto ok = [&](const char* name, cublasStatus_t s) {
    call = name;
    status = s;
    return s == CUBLAS_STATUS_SUCCESS;
  };
  int found = 0;
  // A is stored K x M (op T makes it M x K), B K x N, C and D M x N; every ld is n.
  const bool done =
      ok("cublasLtCreate", lt.create(&o.handle)) &&
      ok("cublasLtMatmulDescCreate", lt.desc_create(&o.op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) &&
      ok("cublasLtMatmulDescSetAttribute(TRANSA)",
         lt.desc_set_attribute(o.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a)) &&
      ok("cublasLtMatmulDescSetAttribute(TRANSB)",
         lt.desc_set_attribute(o.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b)) &&
      ok("cublasLtMatrixLayoutCreate(A)", lt.layout_create(&o.a, CUDA_R_8F_E4M3, n, n, n)) &&
      ok("cublasLtMatrixLayoutCreate(B)", lt.layout_create(&o.b, CUDA_R_8F_E4M3, n, n, n)) &&
      ok("cublasLtMatrixLayoutCreate(D)", lt.layout_create(&o.d, CUDA_R_16BF, n, n, n)) &&
      ok("cublasLtMatmulPreferenceCreate", lt.preference_create(&o.preference)) &&
      ok("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
         lt.preference_set_attribute(o.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                     &workspace_limit, sizeof workspace_limit)) &&
      ok("cublasLtMatmulAlgoGetHeuristic", lt.algo_get_heuristic(o.handle, o.op, o.a, o.b, o.d, o.d,
                                                                 o.preference, 1, &chosen, &found));
  if (!done) return failed(call, status);
  if (found < 1) return "cublasLtMatmulAlgoGetHeuristic found no algorithm for e4m3 x e4m3 -> bf16";
  if (chosen.state != CUBLAS_STATUS_SUCCESS)
    return failed("cublasLtMatmulAlgoGetHeuristic's first result", chosen.state);
  return "";
}

}  // namespace

Ceiling fp8_ceiling(const DriverApi& api, CUstream stream) {
  auto loaded = cublaslt_api();
  if (!loaded) return missing(loaded.error().message);
  constexpr int n = 8192;  // M = N = K
  const std::size_t elems = std::size_t{n} * n;

  // A and B (e4m3, 1 byte each), D (bf16) and the workspace; 256-byte aligned by cuMemAlloc.
  const std::array<std::size_t, 4> bytes{elems, elems, elems * 2, k_workspace_bytes};
  std::array<CUdeviceptr, 4> ptr{};
  bool allocated = true;
  for (std::size_t i = 0; i < ptr.size() && allocated; ++i) {
    allocated = api.mem_alloc(&ptr[i], bytes[i]) == CUDA_SUCCESS;
    if (!allocated) ptr[i] = 0;  // nothing to free
  }
  DeviceBuffer A(&api, ptr[0]), B(&api, ptr[1]), D(&api, ptr[2]), workspace(&api, ptr[3]);
  if (!allocated) return missing("cannot allocate the matrices and the 32 MiB workspace");
  const std::vector<std::uint8_t> host = random_e4m3(elems, 1);
  if (api.memcpy_htod(A.get(), host.data(), elems) != CUDA_SUCCESS ||
      api.memcpy_htod(B.get(), host.data(), elems) != CUDA_SUCCESS)
    return missing("cannot copy the e4m3 operands to the device");

  const CublasLtApi& lt = **loaded;
  LtObjects o(lt);
  cublasLtMatmulHeuristicResult_t chosen{};
  if (std::string why = prepare(o, n, chosen); !why.empty()) return missing(why);
  const float alpha = 1.0f, beta = 0.0f;
  auto* a = reinterpret_cast<const void*>(A.get());
  auto* b = reinterpret_cast<const void*>(B.get());
  auto* d = reinterpret_cast<void*>(D.get());
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  auto t = time_runs(
      api, stream,
      [&] {
        status = lt.matmul(o.handle, o.op, &alpha, a, o.a, b, o.b, &beta, d, o.d, d, o.d,
                           &chosen.algo, reinterpret_cast<void*>(workspace.get()),
                           k_workspace_bytes, reinterpret_cast<cudaStream_t>(stream));
        // A failing call stops the runs; its status is the ceiling's error below.
        return status == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
      },
      3, 10);
  if (status != CUBLAS_STATUS_SUCCESS) return missing(failed("cublasLtMatmul", status));
  return ceiling_from_times(
      k_name, "FLOP/s", 2.0 * n * n * static_cast<double>(n), t,
      "cublasLtMatmul " + std::to_string(n) + "^3 e4m3 in (TN), bf16 out, f32 accumulation");
}

}  // namespace kopt::cuda
