#pragma once
// The element rule of measure/compare.hpp (compare_tensors) as one device kernel, written once
// for CUDA, OpenCL C and the host's C++: the timers compare outputs where they are (a golden
// launch against the reference's outputs, a timed sample against the golden launch, a secret
// sample against the reference's outputs for its inputs), and only a summary of seven words
// crosses, with the two elements of the first mismatch. The host's build is what a CI test holds
// to compare_tensors bit for bit, over every dtype, NaN, infinities, the poison and ties at the
// tolerance: the rule has no rounding a compiler may change (no contraction of the bound's
// multiply-add; an integer's or a half's conversion to double is exact or correctly rounded), and
// what it adds up does not depend on the order (counts, maxima, the smallest index).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kopt/measure/compare.hpp"
#include "kopt/problem/dtype.hpp"

namespace kopt {

enum class KernelDialect { cuda, opencl, host };

// The source of
//   kopt_compare_outputs(got, expected, n, dtype, poison, atol, rtol, key, words)
//   kopt_mask_copy(src, dst, n, width, key)
// got, expected: n elements of `dtype` (compare_dtype_code); poison: an element's bits when it
// still holds the poison (compare_poison_bits); words: k_compare_words 64-bit words set to
// compare_words_start() before the launch. Every work-item walks the elements grid-stride.
// The host dialect's entries are plain functions over all n elements (one work-item).
//
// What kopt keeps on the device to compare with (a golden launch's outputs, the reference's)
// lives beside the candidate's tensors, in memory its kernel can address: it is kept masked,
// each element's bits XOR a stream drawn from `key` (kopt_mask_copy; key drawn at run time for
// each copy and given to kopt's kernels only), and `expected` is unmasked as it is read (key 0:
// plain bytes). A kernel that finds such a copy reads noise: it can neither copy the answer
// out of it nor write one into it that would compare equal.
std::string output_compare_source(KernelDialect d);

// The words the kernel adds up, in this order.
enum CompareWord : std::size_t {
  k_word_mismatches,
  k_word_nan,
  k_word_inf,
  k_word_unwritten,
  k_word_max_abs,  // the bits of a non-negative double: ordered as unsigned integers
  k_word_max_rel,
  k_word_first,  // the smallest mismatching flat index; UINT64_MAX where none
  k_compare_words
};
using CompareWords = std::array<std::uint64_t, k_compare_words>;
CompareWords compare_words_start();

int compare_dtype_code(DType t);
// A masked copy's key: drawn at run time, never 0 (which means plain bytes).
std::uint64_t mask_key();
// Element i of a copy masked under `key` (its bytes, read back for a message) made plain again,
// as kopt_mask_copy masked it; nothing for key 0.
void unmask_element(std::span<std::byte> element, std::uint64_t key, std::uint64_t i);
// An element of `t` holding the poison, as an unsigned integer of the element's width.
std::uint64_t compare_poison_bits(DType t);

// The values of the first mismatch, which the backend reads from the two tensors (two elements,
// not the outputs).
struct FirstMismatch {
  double got = 0, expected = 0;
};

// compare_tensors' result from the words: the same counts, maxima and pass, the first mismatch
// (flat index, index in `shape`, values); rel_l2_err is not computed on the device (-1).
CompareResult compare_result_from_words(const CompareWords& w, const std::string& tensor,
                                        std::size_t numel, const std::vector<std::int64_t>& shape,
                                        Tolerance tol, std::optional<FirstMismatch> first);

}  // namespace kopt
