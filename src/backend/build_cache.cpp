#include "kopt/backend/build_cache.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/core/parallel.hpp"

namespace kopt {
namespace fs = std::filesystem;

namespace {

bool is_header(const fs::path& p) {
  static const char* exts[] = {".h", ".hpp", ".cuh", ".inc", ".inl"};
  return std::any_of(std::begin(exts), std::end(exts),
                     [&](const char* e) { return p.extension() == e; });
}

}  // namespace

BuildCache::BuildCache(Compiler& compiler, fs::path dir)
    : m_compiler(compiler), m_dir(std::move(dir)) {}

Expected<std::string> BuildCache::key(const CompileRequest& req) {
  auto toolkit = m_compiler.toolkit_for(req);
  if (!toolkit) return Unexpected(toolkit.error());
  Sha256 h;
  h.field("kopt-build-v1").field(*toolkit).field(req.arch).field(req.source_path.string());
  h.field(req.source_text).field(req.entry).field(req.solve_abi ? "solve" : "kernel");
  if (!req.refused.empty()) h.field("refused").field(req.refused);  // never a real build's key
  for (const auto& [k, v] : req.defines) h.field(k).field(v);
  for (const auto& o : req.options) h.field(o);
  // Headers next to the source and in the include dirs may be #included: their bytes count.
  std::vector<fs::path> dirs = req.include_dirs;
  dirs.push_back(req.source_path.parent_path().empty() ? fs::path(".")
                                                       : req.source_path.parent_path());
  std::vector<fs::path> headers;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.is_regular_file() && is_header(e.path())) headers.push_back(e.path());
  }
  std::sort(headers.begin(), headers.end());
  for (const auto& p : headers) {
    auto text = read_text_file(p);
    h.field(p.filename().string()).field(text ? *text : std::string{});
  }
  return h.hex();
}

Expected<Build> BuildCache::build(const CompileRequest& req) {
  auto k = key(req);
  if (!k) return Unexpected(k.error());
  if (!req.refused.empty()) {
    Build b = refused_build(req);
    b.key = *k;
    return b;
  }
  fs::path entry_dir = m_dir / k->substr(0, 2) / *k;
  fs::path record = entry_dir / "build.json";
  if (fs::is_regular_file(record)) {
    if (auto text = read_text_file(record)) {
      try {
        Build b = build_from_json(nlohmann::json::parse(*text));
        if (!b.ok || fs::is_regular_file(b.cubin_path)) {
          b.from_cache = true;
          return b;
        }
      } catch (const nlohmann::json::exception&) {
        // A damaged record is rebuilt below.
      }
    }
  }
  std::error_code ec;
  fs::create_directories(entry_dir, ec);
  auto b = m_compiler.compile(req, entry_dir / "kernel.cubin");
  if (!b) return b;
  b->key = *k;
  if (auto w = write_text_atomic(record, to_json(*b).dump(2)); !w) return Unexpected(w.error());
  return b;
}

std::vector<Expected<Build>> BuildCache::build_all(const std::vector<CompileRequest>& requests,
                                                   unsigned jobs) {
  // One build per distinct key: the others copy its result (same key, same binary).
  std::vector<std::optional<Expected<std::string>>> keys(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) keys[i] = key(requests[i]);
  std::map<std::string, std::size_t> first;
  std::vector<std::size_t> distinct;
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (!*keys[i] || first.emplace(**keys[i], i).second) distinct.push_back(i);
  std::vector<std::optional<Expected<Build>>> built(requests.size());
  parallel_for(distinct.size(), m_compiler.concurrent() ? jobs : 1u,
               [&](std::size_t d) { built[distinct[d]] = build(requests[distinct[d]]); });
  std::vector<Expected<Build>> out;
  out.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (built[i])
      out.push_back(*built[i]);
    else
      out.push_back(*built[first.at(**keys[i])]);
  }
  return out;
}

}  // namespace kopt
