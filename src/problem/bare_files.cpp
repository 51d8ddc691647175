// Reading the files users bring (problem/bare_files.hpp): a kernel file's kind, signatures,
// compile-time params and "// kopt:" notes.
#include "kopt/problem/bare_files.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "kopt/core/fs.hpp"
#include "kopt/core/text.hpp"

namespace kopt {
namespace fs = std::filesystem;

namespace {

// "a, f(b, c), d" -> {"a", "f(b, c)", "d"}: commas outside parentheses and brackets.
std::vector<std::string> split_top(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : text) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

// The "kopt:" lines of a file: `// kopt: ...` in C and OpenCL, `# kopt: ...` in Python.
Expected<BareNotes> read_notes(const std::string& text, const std::string& file) {
  BareNotes notes;
  std::istringstream in(text);
  std::string line;
  static const std::regex k_note("^\\s*(//|#)\\s*kopt:\\s*(.*)$");
  static const std::regex k_shape("([A-Za-z_][A-Za-z_0-9]*)\\s*\\[([^\\]]*)\\]");
  static const std::regex k_assign("^(grid|block|outputs)\\s*[=:]?\\s*(.*)$");
  for (int no = 1; std::getline(in, line); ++no) {
    std::smatch m;
    if (!std::regex_match(line, m, k_note)) continue;
    std::string body = trim(m[2]);
    std::smatch a;
    if (std::regex_match(body, a, k_assign)) {
      std::string key = a[1];
      std::vector<std::string> items = split_top(a[2]);
      if (items.empty())
        return Unexpected(bad_input("`kopt: " + key + "` names nothing", file, no, key));
      (key == "grid" ? notes.grid : key == "block" ? notes.block : notes.outputs) = items;
      notes.lines[key] = no;
      continue;
    }
    bool any = false;
    for (std::sregex_iterator it(body.begin(), body.end(), k_shape), e; it != e; ++it) {
      std::string name = (*it)[1];
      std::vector<std::string> extents = split_top((*it)[2]);
      if (extents.empty())
        return Unexpected(bad_input("the shape of " + name + " has no extents", file, no, name));
      notes.shapes[name] = extents;
      notes.lines[name] = no;
      any = true;
    }
    if (!any)
      return Unexpected(
          bad_input("a `kopt:` line says shapes (`A[M, K] B[K, N]`), `grid = ...`, "
                    "`block = ...` or `outputs C`; this one says '" +
                        body + "'",
                    file, no, "kopt:"));
  }
  return notes;
}

// `#ifndef X` followed by `#define X 256`: a compile-time param kopt may set with -DX=...
// A name guarded twice (a default set above the one of an included or pasted source: kopt
// export's solve.cu) is the first one, which the compiler takes.
std::vector<std::pair<std::string, std::int64_t>> read_tunables(const std::string& text) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::set<std::string> seen;
  static const std::regex k_guarded(
      "#\\s*ifndef\\s+([A-Za-z_][A-Za-z_0-9]*)\\s*\\n\\s*#\\s*define\\s+([A-Za-z_][A-Za-z_0-9]*)"
      "\\s+\\(?\\s*(-?[0-9]+)\\s*\\)?\\s*\\n");
  for (std::sregex_iterator it(text.begin(), text.end(), k_guarded), e; it != e; ++it) {
    if ((*it)[1] != (*it)[2] || !seen.insert((*it)[1]).second) continue;
    out.emplace_back((*it)[1], std::stoll((*it)[3]));
  }
  return out;
}

}  // namespace

Expected<BareKernelFile> read_bare_kernel(const fs::path& path) {
  const std::string file = path.string();
  if (!fs::is_regular_file(path)) return Unexpected(bad_input("no such file", file));
  auto text = read_text_file(path);
  if (!text) return Unexpected(bad_input(text.error().message, file));
  BareKernelFile f;
  f.path = path;
  auto lang = kernel_language_of(path);
  if (!lang)
    return Unexpected(
        bad_input("kopt takes a kernel as a .cu (solve() or __global__ kernels), a .cl (__kernel "
                  "functions) or a Triton .py (run_kernel); this file is none of them",
                  file));
  f.language = *lang;
  auto notes = read_notes(*text, file);
  if (!notes) return Unexpected(notes.error());
  f.notes = std::move(*notes);
  if (f.language == KernelLanguage::triton) {
    static const std::regex k_model_new("^class\\s+ModelNew\\b");
    static const std::regex k_run_kernel("^def\\s+run_kernel\\s*\\(");
    std::smatch m;
    auto multiline = std::regex_constants::match_default;
    bool model_new = false, run_kernel = false;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      model_new = model_new || std::regex_search(line, m, k_model_new, multiline);
      run_kernel = run_kernel || std::regex_search(line, m, k_run_kernel, multiline);
    }
    if (!model_new && !run_kernel)
      return Unexpected(bad_input(
          "a Python kernel file defines run_kernel(**kwargs) (the Triton contract: it launches "
          "the kernel on the tensors and dims by name) or a KernelBench ModelNew; this one "
          "defines neither",
          file, 0, "run_kernel"));
    f.kind = run_kernel ? BareKind::triton : BareKind::model_new;
    return f;
  }
  f.tunables = read_tunables(*text);
  if (f.language == KernelLanguage::cuda && *text != "" &&
      std::regex_search(*text, std::regex("extern\\s+\"C\"[^;{(]*\\bsolve\\s*\\("))) {
    auto params = parse_solve_signature(*text, "solve", file);
    if (!params) return Unexpected(params.error());
    KernelSignature s;
    s.entry = "solve";
    s.params = std::move(*params);
    s.line = s.params.empty() ? 0 : s.params.front().line;
    f.kind = BareKind::solve;
    f.entries.push_back(std::move(s));
    return f;
  }
  auto kernels = parse_kernel_signatures(*text, f.language == KernelLanguage::opencl, file);
  if (!kernels) return Unexpected(kernels.error());
  if (kernels->empty())
    return Unexpected(bad_input(
        f.language == KernelLanguage::opencl
            ? "no __kernel function in this file"
            : "no extern \"C\" void solve(...) and no __global__ function (templates aside) in "
              "this file",
        file, 0, "entry"));
  f.kind = BareKind::kernels;
  f.entries = std::move(*kernels);
  return f;
}

std::map<std::string, std::int64_t> small_dims(
    const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  // Values that are no multiple of a tile or vector width and differ from each other and from
  // every kept dim.
  static const std::int64_t k_values[] = {37, 29, 43, 23, 53, 31, 47, 41, 59, 19, 61, 67, 71, 73};
  std::set<std::int64_t> taken;
  for (const auto& [name, v] : dims)
    if (v <= 16) taken.insert(v);
  std::map<std::string, std::int64_t> out;
  std::size_t next = 0;
  for (const auto& [name, v] : dims) {
    if (v <= 16) {
      out[name] = v;
      continue;
    }
    while (next < std::size(k_values) && taken.count(k_values[next])) ++next;
    std::int64_t s = next < std::size(k_values) ? k_values[next++] : 17 + 2 * next++;
    out[name] = std::min(s, v);
    taken.insert(out[name]);
  }
  return out;
}

std::string inferred_hash_of(const std::string& kopt_toml_text) {
  std::string first = kopt_toml_text.substr(0, kopt_toml_text.find('\n'));
  if (first.rfind(k_inferred_header, 0) != 0) return "";
  static const std::regex k_hash("\\(inputs ([0-9a-f]+)\\)");
  std::smatch m;
  return std::regex_search(first, m, k_hash) ? m[1].str() : "";
}

}  // namespace kopt
