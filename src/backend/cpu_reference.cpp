#include "kopt/backend/cpu_reference.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

Expected<CpuReferenceBuild> build_cpu_reference(CommandRunner& runner, const fs::path& source,
                                                const std::vector<std::string>& cxx_flags,
                                                const fs::path& cache_root) {
  std::string cxx = "c++";
  if (const char* v = std::getenv("CXX"); v && *v) cxx = v;
  auto text = read_text_file(source);
  if (!text) return Unexpected(text.error());
  CommandResult version = runner.run({cxx, "--version"}, 30s);
  if (!version.ok())
    return Unexpected(environment_error("no C++ compiler to build the reference (" + cxx +
                                        "); install g++ or set $CXX"));
  Sha256 h;
  h.field("kopt-cpu-ref-v1")
      .field(version.out.substr(0, version.out.find('\n')))
      .field(source.string())
      .field(*text);
  for (const auto& f : cxx_flags) h.field(f);
  std::string key = h.hex();
  fs::path dir = cache_root / key.substr(0, 2) / key;
  CpuReferenceBuild b;
  b.library = dir / "reference.so";
  if (fs::is_regular_file(b.library)) {
    b.ok = b.from_cache = true;
    return b;
  }
  fs::create_directories(dir);
  // Unique per process and per call: two threads (tune --gpus) may build the same reference.
  static std::atomic<std::uint64_t> k_builds{0};
  fs::path tmp =
      dir / ("reference.so.tmp." + std::to_string(::getpid()) + "." + std::to_string(k_builds++));
  std::vector<std::string> argv = {cxx,     "-O2", "-std=c++17", "-shared",
                                   "-fPIC", "-o",  tmp.string(), source.string()};
  argv.insert(argv.end(), cxx_flags.begin(), cxx_flags.end());
  CommandResult r = runner.run(argv, 300s);
  b.log = r.out + r.err;
  if (!r.ok()) {
    if (r.timed_out) b.log += "\nkopt: the C++ compiler timed out";
    std::error_code ec;
    fs::remove(tmp, ec);
    return b;
  }
  fs::rename(tmp, b.library);
  b.ok = true;
  return b;
}

RunResult run_cpu_reference(const RunJob& job) {
  RunResult result;
  auto fail = [&](RunStatus s, std::string why) {
    result.status = s;
    result.error = std::move(why);
    return result;
  };
  if (std::string why = tensor_map_refusal(job.args, "a C++ reference"); !why.empty())
    return fail(RunStatus::launch_failed, why);
  void* handle = ::dlopen(job.module_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return fail(RunStatus::load_failed, std::string("dlopen: ") + ::dlerror());
  std::unique_ptr<void, int (*)(void*)> guard(handle, ::dlclose);
  using Entry = int (*)(void**);
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, job.entry.c_str()));
  if (!entry)
    return fail(RunStatus::load_failed, "symbol '" + job.entry + "' not found in " +
                                            job.module_path.string() +
                                            " (is it declared extern \"C\"?)");
  std::map<std::string, std::vector<std::byte>> host;
  for (const auto& t : job.tensors) {
    if (t.role == Role::output) {
      TensorSpec spec;
      spec.name = t.name;
      spec.dtype = t.dtype;
      host[t.name] =
          poisoned_tensor(spec, {static_cast<std::int64_t>(t.bytes / dtype_size(t.dtype))}).data;
      continue;
    }
    auto data = read_binary_file(t.input_path);
    if (!data) return fail(RunStatus::launch_failed, data.error().to_string());
    host[t.name] = std::move(*data);
  }
  std::vector<std::array<unsigned char, 8>> scalars(job.args.size());
  std::vector<void*> args;
  for (std::size_t i = 0; i < job.args.size(); ++i) {
    const auto& a = job.args[i];
    if (!a.tensor.empty()) {
      args.push_back(host.at(a.tensor).data());
      continue;
    }
    auto put = [&](auto v) { std::memcpy(scalars[i].data(), &v, sizeof v); };
    if (std::holds_alternative<double>(a.value)) {
      if (a.dtype == DType::f64)
        put(std::get<double>(a.value));
      else
        put(static_cast<float>(std::get<double>(a.value)));
    } else {
      std::int64_t v = std::get<std::int64_t>(a.value);
      if (a.dtype == DType::i64)
        put(v);
      else if (a.dtype == DType::u8)
        put(static_cast<std::uint8_t>(v));
      else
        put(static_cast<std::int32_t>(v));
    }
    args.push_back(scalars[i].data());
  }
  if (int rc = entry(args.data()); rc != 0)
    return fail(RunStatus::reference_failed,
                "reference '" + job.entry + "' returned " + std::to_string(rc));
  for (const auto& t : job.tensors) {
    const auto& bytes = host.at(t.name);
    if (t.role == Role::input)
      result.input_checksums[t.name] = hex64(checksum64(bytes));
    else if (auto w = write_file_atomic(t.output_path, bytes); !w)
      return fail(RunStatus::launch_failed, w.error().to_string());
  }
  return result;
}

}  // namespace kopt
