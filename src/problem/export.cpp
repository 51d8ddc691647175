// `kopt export` (kopt/problem/export.hpp): the sources read, with their local headers inlined,
// and the writer of the format chosen.
#include "kopt/problem/export.hpp"

#include <regex>
#include <set>
#include <sstream>

#include "export_model_parts.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"

namespace kopt {
namespace fs = std::filesystem;

namespace {

// `text` (of `file`) with each `#include "x"` that names a file of the problem replaced by
// it, once; `#pragma once` of an inlined header left out.
Expected<std::string> inline_headers(const std::string& text, const fs::path& file,
                                     const std::vector<fs::path>& dirs, std::set<fs::path>& seen) {
  static const std::regex k_include("^\\s*#\\s*include\\s*\"([^\"]+)\"");
  static const std::regex k_once("^\\s*#\\s*pragma\\s+once\\s*$");
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, k_include)) {
      out += line + "\n";
      continue;
    }
    std::vector<fs::path> where = {file.parent_path()};
    where.insert(where.end(), dirs.begin(), dirs.end());
    std::optional<fs::path> found;
    for (const auto& d : where)
      if (fs::is_regular_file(d / m[1].str())) {
        found = fs::weakly_canonical(d / m[1].str());
        break;
      }
    if (!found) {
      out += line + "\n";  // a header of the toolkit's, or the system's
      continue;
    }
    if (!seen.insert(*found).second) {
      out += "// (" + m[1].str() + " is inlined above)\n";
      continue;
    }
    auto header = read_text_file(*found);
    if (!header) return Unexpected(header.error());
    auto inner = inline_headers(*header, *found, dirs, seen);
    if (!inner) return inner;
    std::string kept;
    std::istringstream hs(*inner);
    for (std::string h; std::getline(hs, h);)
      if (!std::regex_search(h, k_once)) kept += h + "\n";
    out += "// ---- " + m[1].str() + ", inlined by kopt export ----\n" + kept + "// ---- end of " +
           m[1].str() + " ----\n";
  }
  return out;
}

Expected<std::string> read_cuda(const Problem& p, const KernelSpec& k, const fs::path& source) {
  std::vector<fs::path> dirs = {p.dir.empty() ? fs::path(".") : p.dir};
  for (const auto& d : k.include_dirs) {
    if (!d.python_package.empty())
      return Unexpected(
          bad_input("headers from the Python package " + d.python_package +
                        " cannot travel in an exported file: export a kernel without them",
                    p.spec_path.string(), d.where.line, d.where.field));
    dirs.push_back(p.dir / d.path);
  }
  auto text = read_text_file(p.dir / source);
  if (!text) return Unexpected(text.error());
  std::set<fs::path> seen;
  return inline_headers(*text, p.dir / source, dirs, seen);
}

// A dim or tensor name that the kernel's source #defines would turn the exported launch into
// something else.
Expected<void> check_macros(const Problem& p, const KernelSpec& k, const std::string& source) {
  auto defined = [&](const std::string& name) {
    return std::regex_search(source, std::regex("#\\s*define\\s+" + name + "\\b"));
  };
  for (const auto& d : p.dims)
    if (defined(d.name))
      return Unexpected(bad_input("the kernel's source #defines " + d.name +
                                      ", a dim of kopt.toml: the exported launch takes it as a "
                                      "variable",
                                  (p.dir / k.source).string(), 0, d.name));
  for (const auto& t : p.tensors)
    if (defined(t.name))
      return Unexpected(bad_input("the kernel's source #defines " + t.name +
                                      ", a tensor of kopt.toml: the exported launch takes it as a "
                                      "variable",
                                  (p.dir / k.source).string(), 0, t.name));
  return {};
}

}  // namespace

Expected<ExportSources> read_export_sources(const Problem& p, const KernelSpec& k) {
  ExportSources s;
  bool cuda = language_of(k.source) == KernelLanguage::cuda;
  auto kernel = cuda ? read_cuda(p, k, k.source) : read_text_file(p.dir / k.source);
  if (!kernel) return Unexpected(kernel.error());
  s.kernel = std::move(*kernel);
  const KernelSpec& r = p.reference.kernel;
  if (p.reference.kind == ReferenceKind::cuda) {
    auto ref = read_cuda(p, r, r.source);
    if (!ref) return Unexpected(ref.error());
    s.reference = std::move(*ref);
  } else if (p.reference.kind == ReferenceKind::python) {
    auto ref = read_text_file(p.dir / r.source);
    if (!ref) return Unexpected(ref.error());
    s.reference = std::move(*ref);
    // An imported KernelBench problem: model.py beside a ref.py that records forward's
    // arguments (kopt import kernelbench).
    if (fs::is_regular_file(p.dir / "model.py") &&
        s.reference.find("\nFORWARD = [") != std::string::npos) {
      auto model = read_text_file(p.dir / "model.py");
      if (!model) return Unexpected(model.error());
      s.model_py = std::move(*model);
    }
  }
  return s;
}

Expected<Export> export_kernel(const Problem& p, const KernelSpec& k, const ParamPoint& point,
                               const ExportRequest& request, const ExportSources& sources) {
  if (language_of(k.source) == KernelLanguage::cuda)
    if (auto m = check_macros(p, k, sources.kernel); !m) return Unexpected(m.error());
  Sha256 h;
  h.field(p.name).field(k.name).field(point_to_string(point)).field(sources.kernel);
  h.field(sources.reference).field(request.arch);
  detail::ExportContext c{p, k, point, request.arch, h.hex().substr(0, 10)};
  auto out = request.format == ExportFormat::model_new ? detail::export_model_new(c, sources)
                                                       : detail::export_solve(c, sources);
  if (!out) return out;
  out->dims_flag = detail::dims_flag(p);
  if (request.format == ExportFormat::model_new)
    for (const auto& d : detail::dim_sources(p))
      if (d.tensor.empty()) out->fixed_dims.push_back(d.dim + "=" + std::to_string(d.value));
  return out;
}

}  // namespace kopt
