#include "kopt/backend/python/candidate_room.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kopt/core/hash.hpp"
#include "kopt/core/units.hpp"
#include "kopt/problem/dtype.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

SandboxPolicy room_policy(const fs::path& ro, const fs::path& rw, const PythonLayout& python) {
  SandboxPolicy p;
  system_sandbox_paths(p.read, p.read_write);
  for (const auto& dir : python.read) p.read.push_back(dir);
  p.read.push_back(ro);
  p.read_write.push_back(rw);
  return p;
}

// A job tensor's bytes, from the dtype and shape kopt wrote into the request.
std::uintmax_t tensor_bytes(const json& t) {
  auto dtype = parse_dtype(t.value("dtype", std::string()));
  return shape_numel(t.value("shape", std::vector<std::int64_t>{})) *
         (dtype ? dtype_size(*dtype) : 8);
}

}  // namespace

std::uintmax_t room_allowance_bytes() {
  return env_gib("KOPT_CANDIDATE_ROOM_GB").value_or(std::uintmax_t{4} << 30);
}

std::string CandidateRoom::overfull(const Handover& h) const {
  std::uintmax_t held = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           m_rw, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec) && !it->is_symlink(size_ec)) {
      auto size = it->file_size(size_ec);
      if (!size_ec) held += size;
    }
  }
  const std::uintmax_t allowed = h.output_bytes + room_allowance_bytes();
  if (held <= allowed) return {};
  return fmt::format(
      "the candidate filled its room: it holds {} after the call, more than its allowance of {} "
      "(its outputs' {} and {} for caches and temporary files; KOPT_CANDIDATE_ROOM_GB)",
      human_bytes(held), human_bytes(allowed), human_bytes(h.output_bytes),
      human_bytes(room_allowance_bytes()));
}

CandidateRoom::CandidateRoom(const std::string& python, const EmbeddedFile* worker_files)
    : m_dir("kopt-candidate", 0),
      m_ro(m_dir.path() / "ro"),
      m_rw(m_dir.path() / "rw"),
      m_python(python_layout(python)),
      m_sandbox(room_policy(m_ro, m_rw, m_python)) {
  for (const char* sub : {"in", "modules"}) fs::create_directories(m_ro / sub);
  for (const char* sub : {"out", "tmp", "home", "cache"}) fs::create_directories(m_rw / sub);
  for (const EmbeddedFile* f = worker_files; f->name; ++f)
    (void)write_text_atomic(m_ro / f->name, f->text);
  m_options.sandbox = &m_sandbox;
  m_options.cwd = m_rw;
  // Every cache a candidate's libraries keep (Triton's, CUDA's JIT, torch's) in its own room:
  // one candidate cannot leave a compiled kernel for another, nor write kopt's.
  m_options.env = {{"KOPT_PYTHON_ROLE", "candidate"},  // not the trusted process's memory policy
                   {"TMPDIR", (m_rw / "tmp").string()},
                   {"TRITON_HOME", (m_rw / "home").string()},
                   {"TRITON_CACHE_DIR", (m_rw / "cache" / "triton").string()},
                   {"CUDA_CACHE_PATH", (m_rw / "cache" / "nv").string()},
                   {"XDG_CACHE_HOME", (m_rw / "cache").string()},
                   {"TORCHINDUCTOR_CACHE_DIR", (m_rw / "cache" / "inductor").string()},
                   {"TORCH_EXTENSIONS_DIR", (m_rw / "cache" / "torch_extensions").string()},
                   {"MPLCONFIGDIR", (m_rw / "cache" / "mpl").string()},
                   {"PYTHONDONTWRITEBYTECODE", "1"},
                   {"KOPT_SANDBOX", m_sandbox.describe()}};
}

std::vector<std::string> CandidateRoom::argv() const {
  return {m_python.executable, (m_ro / "kopt_python_worker.py").string()};
}

Expected<fs::path> CandidateRoom::admit_module(const fs::path& module) {
  // One place per source path, so that the worker, which keys its modules by path and time,
  // imports a version once; copied again when the source changed.
  Sha256 h;
  h.field(fs::absolute(module).string());
  fs::path dir = m_ro / "modules" / h.hex().substr(0, 16);
  fs::path copy = dir / module.filename();
  std::error_code ec;
  auto source_time = fs::last_write_time(module, ec);
  if (ec)
    return Unexpected(environment_error("cannot read " + module.string() + ": " + ec.message()));
  if (!fs::exists(copy) || fs::last_write_time(copy, ec) != source_time) {
    fs::create_directories(dir, ec);
    if (auto c = copy_file_atomic(module, copy); !c) return Unexpected(c.error());
    fs::last_write_time(copy, source_time, ec);
  }
  return copy;
}

Expected<fs::path> CandidateRoom::admit_input(const fs::path& input, const std::string& name) {
  fs::path link = m_ro / "in" / (std::to_string(m_next++) + "_" + name + ".bin");
  // A hard link costs nothing and cannot be written through ro/; across file systems, a copy.
  if (::link(input.c_str(), link.c_str()) == 0) return link;
  if (errno != EXDEV)
    return Unexpected(environment_error("cannot give the candidate " + input.string() + ": " +
                                        std::strerror(errno)));
  if (auto c = copy_file_atomic(input, link); !c) return Unexpected(c.error());
  return link;
}

Expected<CandidateRoom::Handover> CandidateRoom::admit(json& request) {
  Handover h;
  if (!request.contains("job")) return h;
  json& job = request["job"];
  if (std::string module = job.value("module", ""); !module.empty()) {
    auto copy = admit_module(module);
    if (!copy) return Unexpected(copy.error());
    job["module"] = copy->string();
  }
  for (json& t : job["tensors"]) {
    std::string name = t.value("name", "t");
    if (std::string in = t.value("input_path", ""); !in.empty()) {
      auto link = admit_input(in, name);
      if (!link) return Unexpected(link.error());
      h.inputs.push_back(*link);
      t["input_path"] = link->string();
    }
    if (std::string out = t.value("output_path", ""); !out.empty()) {
      fs::path room = m_rw / "out" / (std::to_string(m_next++) + "_" + name + ".bin");
      h.outputs.emplace_back(room, out);
      h.output_bytes += tensor_bytes(t);
      t["output_path"] = room.string();
    }
  }
  return h;
}

Expected<void> CandidateRoom::hand_back(const Handover& h) {
  std::error_code ec;
  for (const auto& in : h.inputs) fs::remove(in, ec);
  Expected<void> result;
  for (const auto& [room, caller] : h.outputs) {
    if (!fs::exists(room, ec)) continue;
    // A copy, never a rename: the candidate's process may still hold the file it wrote.
    if (auto c = copy_file_atomic(room, caller); !c && result) result = Unexpected(c.error());
    fs::remove(room, ec);
  }
  return result;
}

}  // namespace kopt
