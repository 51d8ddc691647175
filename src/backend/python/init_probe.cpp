#include "kopt/backend/python/init_probe.hpp"

#include <unistd.h>

#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/problem/loader.hpp"

namespace kopt {
extern const char* const k_init_probe_script;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A run at full size is worth trying when reference() fails at small dims and the tensors
// are no larger than this.
constexpr double k_full_size_bytes = 1 << 30;

Expected<json> probe(const json& request, const fs::path& cache_root) {
  fs::path script = embedded_python_script(cache_root, "kopt_init_probe", k_init_probe_script);
  fs::path req_file = cache_root / "tmp" / ("init-probe-" + std::to_string(::getpid()) + ".json");
  if (auto w = write_text_atomic(req_file, request.dump()); !w) return Unexpected(w.error());
  SystemCommandRunner runner;
  CommandResult r = runner.run({python_executable(), script.string(), req_file.string()},
                               std::chrono::minutes(5));
  std::error_code ec;
  fs::remove(req_file, ec);
  if (!r.started)
    return Unexpected(
        environment_error("cannot run " + python_executable() +
                          ": install Python 3 with torch (pip install torch numpy, or apt-get "
                          "install python3-torch python3-numpy) or set KOPT_PYTHON"));
  if (!r.ok())
    return Unexpected(bad_input(std::string(r.timed_out ? "ran out of time (5 min)" : "failed") +
                                    " while kopt ran the files to learn their tensors: " +
                                    r.err.substr(r.err.size() > 2000 ? r.err.size() - 2000 : 0),
                                request.value("ref", std::string())));
  try {
    json facts = json::parse(r.out);
    if (facts.contains("error") &&
        facts["error"].get<std::string>().find("cannot import torch") != std::string::npos)
      return Unexpected(environment_error(facts["error"].get<std::string>()));
    return facts;
  } catch (const json::exception&) {
    return Unexpected(internal_error("kopt's init probe printed no JSON: " + r.out.substr(0, 400)));
  }
}

}  // namespace

Expected<InitOutcome> init_bare_problem(const BareRequest& req, const fs::path& cache_root,
                                        bool force) {
  auto b = BareInference::start(req);
  if (!b) return Unexpected(b.error());
  InitOutcome out;
  out.spec = req.out_dir / "kopt.toml";
  if (fs::exists(out.spec)) {
    auto text = read_text_file(out.spec);
    std::string hash = text ? inferred_hash_of(*text) : "";
    if (hash.empty() && !force)
      return Unexpected(bad_input(
          "holds a kopt.toml that kopt did not infer (its first line is not \"" +
              std::string(k_inferred_header) +
              " ...\"): give the problem directory instead, write into another folder with "
              "--out, or replace it with --force",
          out.spec.string()));
    if (hash == b->input_hash() && !force) {
      auto loaded = load_problem(out.spec);
      if (loaded) {
        out.name = loaded->name;
        return out;
      }
    }
  }
  auto facts = probe(b->inspect_request(), cache_root);
  if (!facts) return Unexpected(facts.error());
  if (auto r = b->take_inspect(*facts); !r) return Unexpected(r.error());
  auto writes = probe(b->writes_request(false), cache_root);
  if (!writes) return Unexpected(writes.error());
  if (writes->contains("error") && b->bytes_at_dims() <= k_full_size_bytes) {
    // Small dims a reference cannot take (a reshape by a fixed head count): the dims themselves.
    auto full = probe(b->writes_request(true), cache_root);
    if (!full) return Unexpected(full.error());
    if (!full->contains("error")) writes = std::move(full);
  }
  if (auto r = b->take_writes(*writes); !r) return Unexpected(r.error());
  auto result = b->finish();
  if (!result) return Unexpected(result.error());
  // What was inferred must load before it replaces anything.
  fs::path trial = req.out_dir / ".kopt-init.toml";
  if (auto w = write_text_atomic(trial, result->kopt_toml); !w) return Unexpected(w.error());
  auto loaded = load_problem(trial);
  if (!loaded) {
    std::error_code ec;
    fs::remove(trial, ec);
    Error e = loaded.error();
    e.message = "the inferred kopt.toml does not load (" + e.to_string() +
                "); the files' signatures, dims or `kopt:` lines disagree";
    e.file = req.kernels.front().string();
    e.line = 0;
    return Unexpected(e);
  }
  std::error_code ec;
  fs::rename(trial, out.spec, ec);
  if (ec)
    return Unexpected(environment_error("cannot write " + out.spec.string() + ": " + ec.message()));
  out.name = result->name;
  out.guesses = result->guesses;
  out.written = true;
  return out;
}

}  // namespace kopt
