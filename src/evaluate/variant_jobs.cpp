#include "kopt/evaluate/variant_jobs.hpp"

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/evaluate/include_dirs.hpp"
#include "kopt/problem/arch_target.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::evaluate {
namespace fs = std::filesystem;

CompileRequest compile_request(const Problem& p, const KernelSpec& k, const ParamPoint& point,
                               const std::string& arch) {
  CompileRequest req;
  req.source_path = p.dir / k.source;
  req.source_text = read_text_file(p.dir / k.source).value_or("");
  req.entry = k.entry;
  for (const auto& [name, value] : point) req.defines.emplace_back(name, std::to_string(value));
  req.options = k.compile_options;
  req.include_dirs = {p.dir.empty() ? fs::path(".") : p.dir};
  // The kernel's own arch-specific target (sm_90a) where the device runs it; where it does
  // not, the request is refused and its build fails with the reason. So it is when one of
  // its include_dirs is missing (a Python package of headers not installed).
  BuildTarget target = build_target(p, k, arch);
  req.arch = target.arch;
  req.refused = target.refused;
  ResolvedIncludes includes = resolve_include_dirs(p, k);
  req.include_dirs.insert(req.include_dirs.end(), includes.dirs.begin(), includes.dirs.end());
  if (req.refused.empty()) req.refused = includes.missing;
  req.solve_abi = k.abi == KernelSpec::Abi::solve;
  return req;
}

Expected<SeedInputs> write_seed_inputs(const Problem& p, std::uint64_t seed, const fs::path& dir,
                                       InputFiles files) {
  SeedInputs in;
  in.seed = seed;
  Scope dims = p.dim_scope();
  for (const auto& t : p.tensors) {
    auto shape = tensor_shape(t, dims);
    if (!shape) return Unexpected(shape.error());
    in.shapes[t.name] = *shape;
    if (t.role == Role::output) continue;
    DrawRecipe recipe = draw_recipe(t, seed);
    in.draws[t.name] = recipe;
    fs::path file = dir / (t.name + ".bin");
    in.files[t.name] = file;
    if (files == InputFiles::on_demand) {
      if (t.role == Role::input) in.checksums[t.name] = draw_token(recipe);
      continue;
    }
    HostTensor h = draw_tensor(recipe, *shape);
    if (auto w = write_file_atomic(file, h.data); !w) return Unexpected(w.error());
    if (t.role == Role::input) in.checksums[t.name] = hex64(checksum64(h.data));
  }
  return in;
}

namespace {

// One tensor of a seed's job: where its input is, how it was drawn, where its output goes.
JobTensor job_tensor(const Problem& p, const TensorSpec& t, const SeedInputs& in,
                     const fs::path& out_dir) {
  JobTensor jt;
  jt.name = t.name;
  jt.dtype = t.dtype;
  jt.bytes = shape_numel(in.shapes.at(t.name)) * dtype_size(t.dtype);
  jt.role = t.role;
  jt.shape = in.shapes.at(t.name);
  if (t.role != Role::output) jt.input_path = in.files.at(t.name);
  if (auto d = in.draws.find(t.name); d != in.draws.end()) jt.draw = d->second;
  if (auto c = in.checksums.find(t.name); c != in.checksums.end()) jt.checksum = c->second;
  if (t.role != Role::input) jt.output_path = out_dir / (t.name + ".bin");
  jt.tolerance = p.tolerance_for(t);
  return jt;
}

}  // namespace

std::vector<JobTensor> job_tensors(const Problem& p, const SeedInputs& in,
                                   const fs::path& out_dir) {
  std::vector<JobTensor> out;
  for (const auto& t : p.tensors) out.push_back(job_tensor(p, t, in, out_dir));
  return out;
}

RunJob kernel_job(std::string label, const Build& build, const ResolvedLaunch& launch,
                  std::vector<JobTensor> tensors) {
  RunJob job;
  job.label = std::move(label);
  job.kind = build.module_kind;
  job.module_path = build.cubin_path;
  job.entry = build.lowered_entry;
  job.grid = launch.grid;
  job.block = launch.block;
  job.shared_mem = launch.shared_mem;
  job.args = launch.args;
  job.scalars = launch.scalars;
  job.tensors = std::move(tensors);
  return job;
}

}  // namespace kopt::evaluate
