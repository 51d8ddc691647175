// The kopt.toml of an inferred problem (problem/bare_files.hpp): every field with where it came
// from, and a guessed one marked "guessed" with what settles it.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "kopt/core/toml_text.hpp"
#include "kopt/problem/bare_files.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string identifier(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  return s.empty() ? "problem" : s;
}

std::string relative_to(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  fs::path rel = fs::relative(fs::absolute(file), fs::absolute(dir), ec);
  return (ec || rel.empty() ? fs::absolute(file) : rel).generic_string();
}

bool guessed(const std::string& why) {
  return why.rfind("guessed", 0) == 0;
}

std::string number(double v) {
  return fmt::format("{:g}", v);
}

}  // namespace

Expected<BareInference::Result> BareInference::finish() const {
  Result r;
  const BareKernelFile& first = m_files.front();
  r.name = identifier(first.path.stem().string());
  std::vector<std::string> file_names;
  for (const auto& f : m_files) file_names.push_back(f.path.filename().string());
  file_names.push_back(m_req.ref->filename().string());
  std::string from;
  for (const auto& n : file_names) from += (from.empty() ? "" : ", ") + n;

  std::string t;
  t += fmt::format("{} from {} (inputs {}).\n", k_inferred_header, from, input_hash());
  t += "# Every field says where it came from; a \"guessed\" one says what settles it. kopt "
       "infers\n# this file again when those files or the dims change; delete the first line to "
       "keep it as\n# it is and edit it by hand.\n";
  t += fmt::format("name = {}\n", toml_string(r.name));
  t += fmt::format("description = {}\n",
                   toml_string(std::string(first.kind == BareKind::solve    ? "solve() of "
                                           : first.kind == BareKind::triton ? "run_kernel() of "
                                                                            : "the kernels of ") +
                               first.path.filename().string() + " against reference() of " +
                               m_req.ref->filename().string()));
  for (const auto& n : m_notes) t += "# note: " + n + "\n";

  t += "\n[dims]\n";
  for (const auto& [n, v] : m_req.dims) t += fmt::format("{} = {}  # from --dims\n", n, v);

  for (const auto& x : m_tensors) {
    t += "\n[[tensors]]\n";
    t += fmt::format("name = {}\n", toml_string(x.name));
    t += fmt::format("dtype = {}  # {}\n", toml_string(std::string(dtype_name(x.dtype))),
                     x.dtype_why);
    t += fmt::format("shape = {}  # {}\n", toml_string_list(x.shape), x.shape_why);
    t += fmt::format("role = {}  # {}\n", toml_string(std::string(role_name(x.role))), x.role_why);
    if (!x.init.empty() && x.role == Role::input)
      t += "init = " + x.init + "  # drawn like setup()'s values\n";
  }
  // One line per reason: "A, B, C shape: the GEMM convention ...".
  for (const char* what : {"dtype", "shape", "role"}) {
    std::vector<std::pair<std::string, std::string>> by_why;  // why, names
    for (const auto& x : m_tensors) {
      const std::string& why = std::string(what) == "dtype"   ? x.dtype_why
                               : std::string(what) == "shape" ? x.shape_why
                                                              : x.role_why;
      if (!guessed(why)) continue;
      std::string reason = why.substr(std::string("guessed: ").size());
      auto same = std::find_if(by_why.begin(), by_why.end(),
                               [&](const auto& p) { return p.first == reason; });
      if (same == by_why.end())
        by_why.emplace_back(reason, x.name);
      else
        same->second += ", " + x.name;
    }
    for (const auto& [reason, names] : by_why)
      r.guesses.push_back(fmt::format("{} {}: {}", names, what, reason));
  }
  if (!m_shape_hint.empty()) r.guesses.push_back("to declare the shapes instead: " + m_shape_hint);

  // Cost: every tensor once (a floor on the traffic); flops where the GEMM guess knows them.
  std::set<std::size_t> sizes;
  for (const auto& x : m_tensors) sizes.insert(dtype_size(x.dtype));
  std::string bytes;
  if (sizes.size() == 1) {
    for (const auto& x : m_tensors) bytes += (bytes.empty() ? "" : " + ") + numel(x);
    bytes =
        (m_tensors.size() > 1 ? "(" + bytes + ")" : bytes) + " * " + std::to_string(*sizes.begin());
  } else {
    for (const auto& x : m_tensors)
      bytes +=
          (bytes.empty() ? "" : " + ") + numel(x) + " * " + std::to_string(dtype_size(x.dtype));
  }
  t += "\n[cost]\n";
  t += fmt::format("bytes = {}  # every tensor read or written once: the least traffic there is\n",
                   toml_string(bytes));
  if (m_gemm) {
    t += "flops = \"2 * M * N * K\"  # guessed with the GEMM convention\n";
  } else {
    t += "# flops: unknown; a formula here places kernels on the roofline by their arithmetic "
         "too\n";
    r.guesses.push_back(
        "flops: unknown (kopt places kernels by their bytes alone; [cost] flops "
        "in kopt.toml adds them)");
  }

  t += "\n[reference]\nkind = \"python\"\n";
  std::string tol =
      m_reference.contains("atol") || m_reference.contains("rtol")
          ? fmt::format("{}'s atol = {}, rtol = {} apply", m_req.ref->filename().string(),
                        m_reference.contains("atol") ? number(m_reference["atol"]) : "(default)",
                        m_reference.contains("rtol") ? number(m_reference["rtol"]) : "(default)")
          : "no atol/rtol in it: kopt's defaults for each dtype apply";
  t += fmt::format("source = {}  # {}\n", toml_string(relative_to(*m_req.ref, m_req.out_dir)), tol);

  for (const auto& f : m_files) {
    std::string source = relative_to(f.path, m_req.out_dir);
    std::string stem = identifier(f.path.stem().string());
    // A default that is a power of two gets its neighbours by a factor of 2, so that tune and
    // optimize have a space to search; a value a kernel cannot take fails as a candidate.
    auto params = [&](const std::vector<std::pair<std::string, std::int64_t>>& tunables,
                      const std::string& from_what) {
      if (tunables.empty()) return;
      t += "\n[kernels.params]  # " + from_what + " (the default first)\n";
      for (const auto& [n, v] : tunables) {
        bool pow2 = v >= 2 && (v & (v - 1)) == 0;
        if (!pow2) {
          t += fmt::format("{} = [{}]  # one value: add others to search them\n", n, v);
          continue;
        }
        t += fmt::format("{} = [{}, {}, {}]  # guessed: the default and its neighbours by 2\n", n,
                         v, v / 2, v * 2);
        r.guesses.push_back(
            fmt::format("{} {}: values {}, {}, {} (the default {} and its "
                        "neighbours by 2)",
                        stem, n, v, v / 2, v * 2, v));
      }
    };
    if (f.kind == BareKind::solve) {
      t += fmt::format(
          "\n[[kernels]]\nname = {}\nsource = {}\nabi = \"solve\"  # extern \"C\" "
          "solve() at {}:{}\n",
          toml_string(stem), toml_string(source), f.path.filename().string(),
          f.entries.front().line);
      params(f.tunables, "the #ifndef/#define defaults of " + f.path.filename().string());
      continue;
    }
    if (f.kind == BareKind::triton) {
      t += fmt::format("\n[[kernels]]\nname = {}\nsource = {}\nentry = \"run_kernel\"\n",
                       toml_string(stem), toml_string(source));
      std::vector<std::pair<std::string, std::int64_t>> tunables(m_python_tunables.begin(),
                                                                 m_python_tunables.end());
      params(tunables, "run_kernel()'s integer defaults");
      continue;
    }
    for (const auto& e : f.entries) {
      std::string name = f.entries.size() == 1 ? stem : identifier(e.entry);
      std::vector<std::string> args;
      for (const auto& p : e.params) args.push_back(p.name);
      // The launch: a `kopt:` line, else one thread per element of the first output.
      std::string block_param;
      for (const auto& [n, v] : f.tunables)
        if (n == "BLOCK" || n == "BLOCK_SIZE" || n == "THREADS") block_param = n;
      std::vector<std::string> block =
          !f.notes.block.empty()
              ? f.notes.block
              : std::vector<std::string>{block_param.empty() ? "256" : block_param};
      const BareTensor* out = nullptr;
      for (const auto& x : m_tensors)
        if (x.role != Role::input && !out) out = &x;
      std::vector<std::string> grid =
          !f.notes.grid.empty()
              ? f.notes.grid
              : std::vector<std::string>{"ceil_div(" + numel(*out) + ", " + block.front() + ")"};
      t += fmt::format(
          "\n[[kernels]]\nname = {}\nsource = {}\nentry = {}\nargs = {}  # {}'s "
          "parameters ({}:{})\n",
          toml_string(name), toml_string(source), toml_string(e.entry), toml_string_list(args),
          e.entry, f.path.filename().string(), e.line);
      std::string grid_why =
          f.notes.grid.empty()
              ? "guessed: one thread per element of " + out->name +
                    " (say it with `// kopt: grid = ...`)"
              : "from `kopt: grid` at line " + std::to_string(f.notes.lines.at("grid"));
      std::string block_why = f.notes.block.empty() ? "guessed: " + block.front() +
                                                          " threads (say it with "
                                                          "`// kopt: block = ...`)"
                                                    : "from `kopt: block` at line " +
                                                          std::to_string(f.notes.lines.at("block"));
      t += fmt::format("grid = {}  # {}\nblock = {}  # {}\n", toml_string_list(grid), grid_why,
                       toml_string_list(block), block_why);
      if (guessed(grid_why)) r.guesses.push_back(name + " grid: " + grid_why.substr(9));
      if (guessed(block_why)) r.guesses.push_back(name + " block: " + block_why.substr(9));
      params(f.tunables, "the #ifndef/#define defaults of " + f.path.filename().string());
    }
  }
  for (const auto& n : m_notes) r.guesses.push_back(n);
  r.kopt_toml = std::move(t);
  return r;
}

}  // namespace kopt
