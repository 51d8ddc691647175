#include "kopt/tools/ncu.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace kopt {
namespace {

std::vector<std::string> stall_metrics() {
  static const char* reasons[] = {"barrier",
                                  "branch_resolving",
                                  "dispatch_stall",
                                  "drain",
                                  "imc_miss",
                                  "lg_throttle",
                                  "long_scoreboard",
                                  "math_pipe_throttle",
                                  "membar",
                                  "mio_throttle",
                                  "misc",
                                  "no_instruction",
                                  "not_selected",
                                  "selected",
                                  "short_scoreboard",
                                  "sleeping",
                                  "tex_throttle",
                                  "wait"};
  std::vector<std::string> m{"smsp__average_warps_active_per_issue_active.ratio"};
  for (const char* r : reasons)
    m.push_back(std::string("smsp__average_warps_issue_stalled_") + r + "_per_issue_active.ratio");
  return m;
}

}  // namespace

// Metric names checked against ncu 2025.3 on an H100 (tests/fixtures/ncu/README.md).
const std::vector<NcuQuestion>& ncu_questions() {
  static const std::vector<NcuQuestion> questions = {
      {"sol",
       "speed of light: time, SM and memory throughput against peak",
       {"gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed", "sm__cycles_elapsed.avg.per_second",
        "dram__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.max", "sm__cycles_active.avg"},
       {}},
      {"memory",
       "bytes moved at each level, coalescing, bank conflicts, spills, hit rates",
       {"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "lts__t_sector_hit_rate.pct",
        "l1tex__t_sector_hit_rate.pct"},
       {}},
      {"compute",
       "FLOPs by precision (FFMA counts twice), tensor-core ops, pipe utilization",
       {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
        "sm__ops_path_tensor_src_fp16.sum",
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
        "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
        "sm__ops_path_tensor_src_fp8.sum",
        "sm__ops_path_tensor_src_int8.sum",
        "sm__ops_path_tensor_src_fp64.sum",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"},
       {}},
      {"occupancy",
       "theoretical and achieved occupancy, and what limits it",
       {"sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__maximum_warps_per_active_cycle_pct", "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_blocks",
        "launch__occupancy_limit_warps"},
       {}},
      {"launch",
       "launch shape, resources and waves",
       {"launch__grid_size", "launch__block_size", "launch__registers_per_thread",
        "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
        "launch__waves_per_multiprocessor", "launch__thread_count",
        "device__attribute_multiprocessor_count", "device__attribute_max_warps_per_multiprocessor"},
       {}},
      {"stalls", "warp stall reasons (cycles per issued instruction)", stall_metrics(), {}},
      {"instructions",
       "instruction counts, issue rate, divergence",
       {"smsp__inst_executed.sum", "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "smsp__issue_active.avg.per_cycle_active",
        "smsp__thread_inst_executed_per_inst_executed.ratio",
        "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
        "smsp__sass_branch_targets_threads_divergent.sum", "smsp__sass_branch_targets.sum"},
       {}},
      {"source",
       "source counters: per-instruction sectors, excessive (uncoalesced) sectors, sampled stalls",
       {},
       {"SourceCounters"}},
  };
  return questions;
}

std::vector<std::string> default_ncu_questions() {
  return {"sol", "memory", "compute", "occupancy", "launch", "stalls", "instructions"};
}

Expected<std::vector<std::string>> metrics_for_questions(const std::vector<std::string>& ids,
                                                         std::vector<std::string>* sections) {
  std::vector<std::string> metrics;
  for (const auto& id : ids) {
    const auto& all = ncu_questions();
    auto q = std::find_if(all.begin(), all.end(), [&](const NcuQuestion& x) { return x.id == id; });
    if (q == all.end()) {
      std::string known;
      for (const auto& x : all) known += (known.empty() ? "" : ", ") + x.id;
      return Unexpected(bad_input("unknown profiling question '" + id + "' (known: " + known + ")",
                                  "", 0, "--question"));
    }
    for (const auto& m : q->metrics)
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    if (sections)
      for (const auto& s : q->sections) sections->push_back(s);
  }
  return metrics;
}

std::vector<std::string> ncu_profile_argv(const NcuRequest& r) {
  std::vector<std::string> argv{r.ncu.string(), "--clock-control", r.clock_control,
                                "--kernel-name-base", "mangled"};
  if (!r.kernel_name.empty()) {
    argv.push_back("--kernel-name");
    argv.push_back(r.kernel_name);
  }
  argv.insert(argv.end(), {"--nvtx", "--nvtx-include", "regex:kopt-job-[0-9]+/"});
  if (r.set) {
    argv.push_back("--set");
    argv.push_back(*r.set);
  } else {
    std::vector<std::string> sections;
    auto metrics = metrics_for_questions(r.questions, &sections);
    if (metrics && !metrics->empty()) {
      std::string joined;
      for (const auto& m : *metrics) joined += (joined.empty() ? "" : ",") + m;
      argv.push_back("--metrics");
      argv.push_back(joined);
    }
    for (const auto& s : sections) {
      argv.push_back("--section");
      argv.push_back(s);
    }
  }
  argv.insert(argv.end(), {"--export", r.report.string(), "--force-overwrite"});
  argv.insert(argv.end(), r.program.begin(), r.program.end());
  return argv;
}

std::string ncu_kernel_filter_union(const std::vector<std::string>& filters) {
  std::set<std::string> distinct(filters.begin(), filters.end());
  if (distinct.empty() || distinct.contains("")) return "";
  if (distinct.size() == 1) return *distinct.begin();
  std::string alternatives;
  for (const auto& f : distinct) {
    std::string part;
    if (f.starts_with("regex:^(") && f.ends_with(")$")) {
      part = f.substr(
          8, f.size() - 10);  // a Triton kernel's regex of its names: its alternatives join
    } else {
      for (char c : f) {  // a mangled name, every character but letters, digits and '_' escaped
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') part += '\\';
        part += c;
      }
    }
    alternatives += (alternatives.empty() ? "" : "|") + part;
  }
  return "regex:^(" + alternatives + ")$";
}

std::string ncu_job_range(std::size_t index) {
  return "kopt-job-" + std::to_string(index);
}

std::string ncu_csv_for_job(std::string_view csv, std::size_t index) {
  // A launch's row starts with its quoted ID; its NVTX column holds the thread's push/pop
  // ranges as "<default domain>:kopt-job-3:none:...".
  const std::string mark = ":" + ncu_job_range(index) + ":";
  std::string out;
  while (!csv.empty()) {
    auto end = csv.find('\n');
    std::string_view line = csv.substr(0, end == std::string_view::npos ? csv.size() : end + 1);
    csv.remove_prefix(line.size());
    bool launch =
        line.size() > 1 && line[0] == '"' && std::isdigit(static_cast<unsigned char>(line[1]));
    if (!launch || line.find(mark) != std::string_view::npos) out += line;
  }
  return out;
}

std::vector<std::string> ncu_import_argv(const std::filesystem::path& ncu,
                                         const std::filesystem::path& report_file) {
  return {ncu.string(), "--import", report_file.string(), "--csv",
          "--page",     "raw",      "--print-units",      "base"};
}

std::string ncu_permission_help() {
  return "ncu may not read GPU performance counters (ERR_NVGPUCTRPERM). Run as root, or let every "
         "user "
         "profile: load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0 (see the "
         "Nsight Compute "
         "documentation on ERR_NVGPUCTRPERM).";
}

NcuOutcome classify_ncu_run(const CommandResult& r) {
  std::string all = r.out + "\n" + r.err;
  if (!r.started) return {NcuFailure::not_found, "ncu could not be executed"};
  if (all.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return {NcuFailure::no_permission, ncu_permission_help()};
  if (r.timed_out) return {NcuFailure::other, "ncu timed out"};
  if (all.find("No kernels were profiled") != std::string::npos)
    return {NcuFailure::no_kernel_profiled,
            "ncu profiled no kernel: the kernel filter matched no launch"};
  if (!r.ok()) {
    // The last ==ERROR== line says most; else the tail of the output.
    std::string msg;
    std::size_t pos = all.rfind("==ERROR==");
    if (pos != std::string::npos) msg = all.substr(pos, all.find('\n', pos) - pos);
    if (msg.empty()) msg = all.size() > 400 ? all.substr(all.size() - 400) : all;
    return {NcuFailure::program_failed,
            "ncu failed (" +
                (r.signal ? "signal " + std::to_string(r.signal)
                          : "exit code " + std::to_string(r.exit_code)) +
                "): " + msg};
  }
  return {};
}

}  // namespace kopt
