// `kopt import kernelbench FILE.py --out DIR`: a KernelBench problem as a kopt problem; and
// `kopt import kernelbench FOLDER --out DIR`: all of a folder, with a summary table.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <mutex>
#include <ranges>
#include <thread>

#include "commands.hpp"
#include "kopt/backend/cuda/executor.hpp"
#include "kopt/backend/python/kernelbench_import.hpp"
#include "kopt/campaign/kernelbench_batch.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/evaluate/devices.hpp"
#include "kopt/evaluate/roofs.hpp"
#include "kopt/evaluate/worker_pool.hpp"

namespace kopt::cli {
namespace fs = std::filesystem;

namespace {
using campaign::KernelbenchBatchOptions;
using campaign::KernelbenchEntry;
using campaign::KernelbenchEvaluator;

struct ImportCliOptions {
  std::string file;  // a KernelBench problem (.py), or a folder of them
  std::string out;   // the problem directory to write (a folder: one per problem under it)
  bool force = false;
  // A folder only: parallel imports, then each reference run once (--check) and its PyTorch
  // baselines timed (--vs-torch) for --max-time each; the table also written to --report.
  int jobs = 0;
  bool check = false;
  bool vs_torch = false;
  double max_time_s = 1.0;
  std::string report;
  int device = 0;
  std::string gpus;  // a folder: --gpus all|N,M,...: problems evaluated on each device at once
  std::string candidates;  // a folder: ModelNew files named as the KernelBench files
};

int import_one_file(const GlobalOptions& g, const ImportCliOptions& o) {
  auto imported = import_kernelbench(o.file, o.out, cache_dir(), o.force);
  if (!imported)
    return report_error(g, "import kernelbench", exit_code(imported.error().kind),
                        imported.error().to_string());
  if (g.json) {
    std::cout << nlohmann::json{{"schema_version", 1},
                                {"command", "import kernelbench"},
                                {"problem", imported->name},
                                {"dir", fs::absolute(o.out).string()},
                                {"files",
                                 {"kopt.toml", "ref.py", "model.py", k_model_new_adapter_file}},
                                {"notes", imported->notes}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "imported " << imported->name << " into " << o.out
            << ": kopt.toml, ref.py, model.py\n";
  for (const auto& n : imported->notes) std::cout << "  note: " << n << "\n";
  std::cout << "next: add a kernel to " << o.out
            << "/kopt.toml (a template is at its end), then `kopt check " << o.out
            << "` and `kopt bench " << o.out << " --vs-torch`\n";
  return 0;
}

// Each problem's GPU memory, read through NVML (the device's memory in use, as nvidia-smi
// shows it) where the device is a CUDA GPU.
void watch_memory(KernelbenchBatchOptions& bo, DeviceFamily family, const std::string& bus) {
  if (family != DeviceFamily::cuda) {
    bo.memory_note = "an OpenCL device: kopt reads the memory of CUDA GPUs only (NVML)";
    return;
  }
  if (auto first = cuda::read_memory_used(bus); !first) {
    bo.memory_note = first.error().message;
    return;
  }
  bo.memory_used = [bus]() -> std::optional<std::uint64_t> {
    auto used = cuda::read_memory_used(bus);
    return used ? std::optional(*used) : std::nullopt;
  };
}

int import_folder(const GlobalOptions& g, const ImportCliOptions& o) {
  KernelbenchBatchOptions bo;
  bo.source = o.file;
  bo.out = o.out;
  bo.cache_root = cache_dir();
  bo.jobs = o.jobs;
  bo.force = o.force;
  bo.check = o.check || !o.candidates.empty();  // a candidate is checked against its reference
  bo.baselines = o.vs_torch;
  if (!o.candidates.empty()) {
    if (device_family() != DeviceFamily::cuda)
      return report_error(g, "import kernelbench", 3,
                          "--candidates: a ModelNew candidate runs in PyTorch on a CUDA GPU; "
                          "this backend (" +
                              std::string(device_family_name(device_family())) +
                              ") runs no Python candidates");
    if (!fs::is_directory(o.candidates))
      return report_error(g, "import kernelbench", 2,
                          "--candidates " + o.candidates + ": not a folder");
    bo.candidates = fs::absolute(o.candidates);
  }
  bo.rigour.timing.rule.max_time_s = o.max_time_s;
  bo.rigour.timing.rule.min_time_s = std::min(bo.rigour.timing.rule.min_time_s, o.max_time_s / 2);
  bo.log = [](const std::string& line) { std::cerr << "kopt: " << line << "\n"; };
  if (o.jobs < 0) return report_error(g, "import kernelbench", 2, "--jobs must be at least 1");
  if (o.max_time_s <= 0)
    return report_error(g, "import kernelbench", 2, "--max-time must be positive");

  // Import processes, each kept for file after file, one per import thread at a time, forked
  // from one Python that imports torch once for all of them.
  auto server = kernelbench_import_server(bo.cache_root);
  std::mutex idle_mutex;
  std::vector<std::unique_ptr<KernelbenchImportProcess>> idle;
  auto importer = [&](const fs::path& file,
                      const fs::path& dir) -> Expected<campaign::KernelbenchImported> {
    std::unique_ptr<KernelbenchImportProcess> process;
    {
      std::lock_guard lock(idle_mutex);
      if (!idle.empty()) {
        process = std::move(idle.back());
        idle.pop_back();
      }
    }
    if (!process) process = std::make_unique<KernelbenchImportProcess>(bo.cache_root, server.get());
    // The batch decides what to keep: force.
    auto p = import_kernelbench(file, dir, bo.cache_root, true, process.get());
    {
      std::lock_guard lock(idle_mutex);
      idle.push_back(std::move(process));
    }
    if (!p) return Unexpected(p.error());
    return campaign::KernelbenchImported{p->notes, p->process_start_s};
  };
  // The workers' Pythons start while the files are imported (joined before they are used).
  std::vector<std::jthread> warming;
  // The devices the batch evaluates on, where it has work for them (before_imports says so).
  std::vector<std::pair<WorkerClient*, DeviceInfo>> devices;
  bool work_ahead = false;
  // The import processes' GPU memory and contexts are given back before anything is timed.
  bo.after_imports = [&] {
    {
      std::lock_guard lock(idle_mutex);
      idle.clear();
    }
    server.reset();   // no import thread is left to ask it
    warming.clear();  // joins
    // With the GPU idle again, each device's ceilings (the roofs of every bench's floor,
    // measured on first use in 1-2 s where the cache has none): a cost of the batch, said so,
    // not charged to the baselines of whichever problem comes first.
    if (!work_ahead || (!bo.baselines && bo.candidates.empty())) return;  // nothing timed
    for (auto& [worker, info] : devices) {
      // "measured now (first use, 1.4 s)", "measured <date>" (stored), or why there are none.
      auto roofs = evaluate::resolve_roofs(bo.cache_root, info, evaluate::worker_ceilings(*worker));
      bo.log(fmt::format("{}'s ceilings before the first problem: {}", info.name, roofs.source));
    }
  };
  std::unique_ptr<evaluate::WorkerPool> pool;
  std::vector<KernelbenchEvaluator> evaluators{
      [](KernelbenchEntry&, const fs::path&) -> Expected<void> { return {}; }};
  std::string device;
  if (bo.check || o.vs_torch) {
    auto opened = evaluate::WorkerPool::open({device_family(), o.gpus, "", o.device, false});
    if (!opened)
      return report_error(g, "import kernelbench", exit_code(opened.error().kind),
                          opened.error().to_string());
    pool = std::move(*opened);
    auto contexts = pool->contexts();
    evaluators.clear();
    for (std::size_t i = 0; i < contexts.size(); ++i) {
      const evaluate::CheckContext& ctx = contexts[i];
      KernelbenchBatchOptions mine = bo;  // its own device's memory
      std::string label;
      if (auto d = ctx.worker.device_info()) {
        if (!device.empty() && d->name != device)
          return report_error(g, "import kernelbench", 2,
                              "--gpus: '" + d->name + "' beside '" + device +
                                  "': one batch's rows are timed on devices of one model; "
                                  "name those of one model");
        device = d->name;
        label = fmt::format("{} (device {})", d->name, d->ordinal);
        watch_memory(mine, device_family(), d->pci_bus_id);
        devices.emplace_back(&ctx.worker, *d);
      }
      auto inner = campaign::worker_evaluator(mine, ctx);
      evaluators.push_back([inner, label](KernelbenchEntry& e, const fs::path& dir) mutable {
        e.device = label;
        return inner(e, dir);
      });
    }
    if (contexts.size() > 1) device = fmt::format("{} x {}", contexts.size(), device);
    bo.before_imports = [&warming, &work_ahead, &devices, compile = o.vs_torch] {
      work_ahead = true;
      for (WorkerClient* w : devices | std::views::keys)
        warming.emplace_back([w, compile] {
          (void)w->warm_python(compile);  // where it fails, the first job says why
        });
    };
  }
  auto batch = campaign::run_kernelbench_batch(bo, importer, evaluators);
  if (!batch)
    return report_error(g, "import kernelbench", exit_code(batch.error().kind),
                        batch.error().to_string());
  batch->device = device;
  std::string table = kernelbench_markdown(*batch);
  if (!o.report.empty())
    if (auto w = write_text_atomic(o.report, table); !w)
      return report_error(g, "import kernelbench", 4, w.error().message);
  if (g.json)
    std::cout << to_json(*batch).dump(2) << "\n";
  else
    std::cout << table
              << fmt::format("\n{:.1f} s; the state of each problem is in {}\n", batch->wall_s,
                             (fs::path(o.out) / "kernelbench.json").string());
  return batch->exit_code();
}

int run_import_kernelbench_command(const GlobalOptions& g, const ImportCliOptions& o) {
  if (fs::is_directory(o.file)) return import_folder(g, o);
  if (o.check || o.vs_torch || !o.report.empty() || !o.candidates.empty())
    return report_error(
        g, "import kernelbench", 2,
        "--check, --vs-torch, --candidates and --report apply to a folder; for one problem run "
        "`kopt check` and `kopt bench --vs-torch` on what the import wrote (`kopt check NEW.py "
        "--ref FILE.py` for a ModelNew)");
  return import_one_file(g, o);
}

}  // namespace

std::vector<Command> import_commands(const GlobalRef& g) {
  auto o = std::make_shared<ImportCliOptions>();
  Command c{.path = {"import", "kernelbench"},
            .help =
                "a KernelBench problem (Model, get_inputs, get_init_inputs) -> kopt.toml, "
                "ref.py, model.py; or a folder of them",
            .run = [g, o] { return run_import_kernelbench_command(*g, *o); },
            .storage = o};
  c.options = {
      {.names = "file",
       .help = "the KernelBench problem (.py), or a folder of them",
       .target = &o->file,
       .required = true},
      {.names = "--out",
       .help = "the problem directory to write (for a folder: one directory per problem under it)",
       .target = &o->out,
       .required = true},
      {.names = "--force",
       .help = "replace the imported files of an earlier import (a folder: import and evaluate "
               "all again)",
       .target = &o->force},
      {.names = "--jobs",
       .help = "a folder: imports at a time (0: the machine's cores)",
       .target = &o->jobs,
       .range = {{0, 1024}}},
      {.names = "--check",
       .help = "a folder: run each problem's reference once",
       .target = &o->check},
      {.names = "--vs-torch",
       .help = "a folder: time each problem's PyTorch baselines, eager and torch.compile",
       .target = &o->vs_torch},
      {.names = "--max-time",
       .help = "a folder: seconds of timing per baseline",
       .target = &o->max_time_s,
       .positive = true},
      {.names = "--report",
       .help = "a folder: also write the summary table to this markdown file",
       .target = &o->report},
      {.names = "--device", .help = "GPU ordinal for --check and --vs-torch", .target = &o->device},
      {.names = "--gpus",
       .help = "a folder: all, or N,M,...: --check and --vs-torch on every device named, one "
               "problem at a time on each (devices of one model)",
       .target = &o->gpus},
      {.names = "--candidates",
       .help = "a folder: ModelNew files named as the KernelBench files (NAME.py), each checked "
               "against its problem (every seed, a secret seed, other shapes) and timed on "
               "verified samples; implies --check; one changed since its evaluation runs again",
       .target = &o->candidates}};
  return {c};
}

}  // namespace kopt::cli
