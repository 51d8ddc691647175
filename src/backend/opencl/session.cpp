#include <algorithm>

#include "handles.hpp"
#include "host_cache.hpp"

namespace kopt::opencl {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

int type_rank(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return 0;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return 1;
  return 2;
}

std::string type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "gpu";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (t & CL_DEVICE_TYPE_CPU) return "cpu";
  return "other";
}

DeviceInfo describe(const OpenclApi& api, const DeviceRef& r, int ordinal) {
  DeviceInfo d;
  d.backend = "opencl";
  d.ordinal = ordinal;
  d.name = r.name;
  d.platform = r.platform_name;
  d.device_type = type_name(r.type);
  d.opencl_version = device_string(api, r.device, CL_DEVICE_VERSION);
  d.driver_release = device_string(api, r.device, CL_DRIVER_VERSION);
  d.sm_count = static_cast<int>(device_value<cl_uint>(api, r.device, CL_DEVICE_MAX_COMPUTE_UNITS));
  d.l2_bytes = static_cast<std::int64_t>(
      device_value<cl_ulong>(api, r.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE));
  d.memory_bytes =
      static_cast<std::int64_t>(device_value<cl_ulong>(api, r.device, CL_DEVICE_GLOBAL_MEM_SIZE));
  auto local =
      static_cast<std::int64_t>(device_value<cl_ulong>(api, r.device, CL_DEVICE_LOCAL_MEM_SIZE));
  d.max_shared_per_block_optin = local;
  d.max_shared_per_sm = local;
  d.warp_size = 1;  // no portable notion of a warp
  auto wg = static_cast<std::int64_t>(
      device_value<std::size_t>(api, r.device, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  d.limits.max_threads_per_block = wg;
  std::size_t items[3] = {};
  api.get_device_info(r.device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, nullptr);
  d.limits.max_block = {static_cast<std::int64_t>(items[0]), static_cast<std::int64_t>(items[1]),
                        static_cast<std::int64_t>(items[2])};
  // OpenCL bounds the global size only by size_t; grid = global / local.
  d.limits.max_grid = {std::int64_t{1} << 31, std::int64_t{1} << 31, std::int64_t{1} << 31};
  d.limits.max_shared_per_block_optin = local;
  d.limits.sm_count = d.sm_count;
  d.clocks.max_sm_mhz = device_value<cl_uint>(api, r.device, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  d.clocks.nvml_error = "the OpenCL backend reads no clocks (CL_DEVICE_MAX_CLOCK_FREQUENCY: " +
                        std::to_string(d.clocks.max_sm_mhz) + " MHz)";
  return d;
}

}  // namespace

std::string device_string(const OpenclApi& api, cl_device_id d, cl_device_info what) {
  std::size_t n = 0;
  if (api.get_device_info(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  api.get_device_info(d, what, n, s.data(), nullptr);
  return trimmed(s);
}

Expected<std::vector<DeviceRef>> list_devices(const OpenclApi& api) {
  const std::string hint =
      ". Install an OpenCL driver: `apt-get install pocl-opencl-icd` runs OpenCL on the CPU";
  cl_uint np = 0;
  cl_int r = api.get_platform_ids(0, nullptr, &np);
  if (r != CL_SUCCESS || np == 0)
    return Unexpected(environment_error(
        "no OpenCL platform (clGetPlatformIDs: " + cl_error_name(r) + ")" + hint));
  std::vector<cl_platform_id> platforms(np);
  api.get_platform_ids(np, platforms.data(), nullptr);
  std::vector<DeviceRef> out;
  for (cl_platform_id p : platforms) {
    std::size_t n = 0;
    api.get_platform_info(p, CL_PLATFORM_NAME, 0, nullptr, &n);
    std::string pname(n, '\0');
    api.get_platform_info(p, CL_PLATFORM_NAME, n, pname.data(), nullptr);
    cl_uint nd = 0;
    if (api.get_device_ids(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0)
      continue;
    std::vector<cl_device_id> devs(nd);
    api.get_device_ids(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr);
    for (cl_device_id d : devs)
      out.push_back(DeviceRef{p, d, trimmed(pname), device_string(api, d, CL_DEVICE_NAME),
                              device_value<cl_device_type>(api, d, CL_DEVICE_TYPE)});
  }
  if (out.empty())
    return Unexpected(environment_error("the OpenCL platforms list no device" + hint));
  std::stable_sort(out.begin(), out.end(), [](const DeviceRef& a, const DeviceRef& b) {
    return type_rank(a.type) < type_rank(b.type);
  });
  return out;
}

Expected<std::unique_ptr<Session>> open_session(int ordinal) {
  auto api = opencl_api();
  if (!api) return Unexpected(api.error());
  auto devices = list_devices(**api);
  if (!devices) return Unexpected(devices.error());
  if (ordinal < 0 || ordinal >= static_cast<int>(devices->size()))
    return Unexpected(environment_error("no OpenCL device " + std::to_string(ordinal) + " (" +
                                        std::to_string(devices->size()) + " present)"));
  auto s = std::make_unique<Session>();
  s->api = *api;
  s->ref = (*devices)[static_cast<std::size_t>(ordinal)];
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(s->ref.platform), 0};
  cl_context ctx = s->api->create_context(props, 1, &s->ref.device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS)
    return Unexpected(
        environment_error("clCreateContext(" + s->ref.name + "): " + cl_error_name(err)));
  s->context = Context(s->api, ctx);
  cl_command_queue q =
      s->api->create_command_queue(ctx, s->ref.device, CL_QUEUE_PROFILING_ENABLE, &err);
  if (err != CL_SUCCESS)
    return Unexpected(
        environment_error("clCreateCommandQueue(" + s->ref.name + "): " + cl_error_name(err)));
  s->queue = Queue(s->api, q);
  s->info = describe(**api, s->ref, ordinal);
  s->tensors_in_place = s->info.is_host_cpu() && probe_in_place(*s);
  return s;
}

BuiltProgram build_program(const Session& s, const std::string& source,
                           const std::string& options) {
  BuiltProgram b;
  const char* text = source.c_str();
  std::size_t len = source.size();
  cl_int err = CL_SUCCESS;
  cl_program p = s.api->create_program_with_source(s.context.get(), 1, &text, &len, &err);
  if (err != CL_SUCCESS) {
    b.status = err;
    b.log = "clCreateProgramWithSource: " + cl_error_name(err);
    return b;
  }
  b.program = Program(s.api, p);
  b.status = s.api->build_program(p, 1, &s.ref.device, options.c_str(), nullptr, nullptr);
  std::size_t n = 0;
  s.api->get_program_build_info(p, s.ref.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  if (n > 1) {
    std::string log(n, '\0');
    s.api->get_program_build_info(p, s.ref.device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    b.log = trimmed(log);
  }
  return b;
}

}  // namespace kopt::opencl
