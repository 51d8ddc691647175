#include "kopt/backend/python/init_probe.hpp"

#include <unistd.h>

#include <optional>
#include <regex>

#include "kopt/backend/python/kernelbench_import.hpp"
#include "kopt/backend/python/python_runner.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
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

// An existing kopt.toml at `spec`: kept (its outcome returned) when kopt inferred it from the same
// inputs (`hash`); refused when a person wrote it (no k_inferred_header line) unless `force`;
// none: infer it again.
Expected<std::optional<InitOutcome>> kept_if_current(const fs::path& spec, const std::string& hash,
                                                     bool force) {
  if (!fs::exists(spec)) return std::nullopt;
  auto text = read_text_file(spec);
  std::string old_hash = text ? inferred_hash_of(*text) : "";
  if (old_hash.empty() && !force)
    return Unexpected(
        bad_input("holds a kopt.toml that kopt did not infer (its first line is not \"" +
                      std::string(k_inferred_header) +
                      " ...\"): give the problem directory instead, write into another folder with "
                      "--out, or replace it with --force",
                  spec.string()));
  if (old_hash != hash || force) return std::nullopt;
  auto loaded = load_problem(spec);
  if (!loaded) return std::nullopt;
  InitOutcome out;
  out.spec = spec;
  out.name = loaded->name;
  return out;
}

bool defines(const std::string& text, const std::string& what) {
  return std::regex_search(text, std::regex("(^|\\n)" + what));
}

// A KernelBench ModelNew file: its problem imported from the Model file (the --ref file, or
// the ModelNew file itself when it keeps Model) into DIR/kopt-STEM, the ModelNew file copied
// in as STEM_kopt.py with run_kernel() added, and kopt.toml given that kernel.
Expected<InitOutcome> init_model_new(const BareRequest& req, const fs::path& cache_root,
                                     bool force) {
  const fs::path& file = req.kernels.front();
  if (req.kernels.size() > 1)
    return Unexpected(bad_input(
        "a ModelNew file is a problem's only kernel file here: give it alone", file.string()));
  auto text = read_text_file(file);
  if (!text) return Unexpected(bad_input(text.error().message, file.string()));
  fs::path model = file;
  if (req.ref) {
    auto ref = read_text_file(*req.ref);
    if (!ref) return Unexpected(bad_input(ref.error().message, req.ref->string(), 0, "--ref"));
    if (!defines(*ref, "class\\s+Model\\b"))
      return Unexpected(bad_input(
          "defines no class Model: a ModelNew is checked against its KernelBench problem file "
          "(Model, get_inputs, get_init_inputs)",
          req.ref->string(), 0, "--ref"));
    model = *req.ref;
  } else if (!defines(*text, "class\\s+Model\\b") || !defines(*text, "def\\s+get_inputs\\b")) {
    return Unexpected(
        bad_input("a ModelNew without Model: give its KernelBench problem file (Model, get_inputs, "
                  "get_init_inputs) with --ref PROBLEM.py",
                  file.string(), 0, "--ref"));
  }
  std::string stem = file.stem().string();
  InitOutcome out;
  fs::path dir = req.out_dir / ("kopt-" + stem);
  out.spec = dir / "kopt.toml";
  Sha256 h;
  h.field("kopt-init-model-new-1");
  h.field(*text);
  h.field(read_text_file(model).value_or(""));
  std::string hash = h.hex().substr(0, 16);
  auto kept = kept_if_current(out.spec, hash, force);
  if (!kept) return Unexpected(kept.error());
  if (*kept) return **kept;
  auto imported = import_kernelbench(model, dir, cache_root, true);
  if (!imported) return Unexpected(imported.error());
  std::string kernel_file = stem + "_kopt.py";
  if (auto w = write_text_atomic(dir / kernel_file, *text + imported->model_new_adapter); !w)
    return Unexpected(w.error());
  auto toml = read_text_file(out.spec);
  if (!toml) return Unexpected(toml.error());
  std::string header = std::string(k_inferred_header) + " from " + file.filename().string() +
                       " and " + model.filename().string() + " (inputs " + hash + ").\n";
  std::string kernel =
      "\n# The ModelNew of " + file.filename().string() + ", as a kernel: " + kernel_file +
      " is that file with run_kernel() added by kopt.\n" + model_new_kernel_toml(stem, kernel_file);
  if (auto w = write_text_atomic(out.spec, header + *toml + kernel); !w)
    return Unexpected(w.error());
  auto loaded = load_problem(out.spec);
  if (!loaded)
    return Unexpected(
        internal_error("the ModelNew problem does not load: " + loaded.error().to_string()));
  out.name = loaded->name;
  out.written = true;
  out.guesses = imported->notes;
  out.guesses.insert(out.guesses.begin(),
                     "the problem: " + model.filename().string() + " imported into " +
                         dir.string() + "; ModelNew runs with Model's init inputs and weights");
  return out;
}

}  // namespace

Expected<InitOutcome> init_bare_problem(const BareRequest& req, const fs::path& cache_root,
                                        bool force) {
  if (!req.kernels.empty()) {
    auto first = read_bare_kernel(req.kernels.front());
    if (first && first->kind == BareKind::model_new) return init_model_new(req, cache_root, force);
  }
  auto b = BareInference::start(req);
  if (!b) return Unexpected(b.error());
  InitOutcome out;
  out.spec = req.out_dir / "kopt.toml";
  auto kept = kept_if_current(out.spec, b->input_hash(), force);
  if (!kept) return Unexpected(kept.error());
  if (*kept) return **kept;
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
