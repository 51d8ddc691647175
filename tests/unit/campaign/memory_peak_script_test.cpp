// scripts/memory-peak replays a record of torch's allocator (KOPT_MEMORY_HISTORY) and names what
// was live at its peaks by the code that made it. The record here is written by the standard
// library's pickle in torch's layout (device_traces: alloc, free and segment events with their
// Python frames), so the replay is tested without torch or a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"

namespace kopt {
namespace {
namespace fs = std::filesystem;

const fs::path k_script = fs::path(KOPT_SOURCE_DIR) / "scripts" / "memory-peak";

// A problem's record: a 16 MiB scratch of the model, freed; a 64 MiB input drawn by kopt; the
// model's 32 MiB result; the segment mapped for them, then half of it unmapped.
constexpr const char* k_write_record = R"(
import pickle, sys
M = 1 << 20
def f(path, line, name):
    return {"filename": path, "line": line, "name": name}
torch_frame = f("/site-packages/torch/nn/functional.py", 5, "linear")
draw = [torch_frame, f("/w/kopt_worker_draw.py", 238, "_draw_tensor"), f("/w/kopt_worker_draw.py", 229, "draw_tensor")]
model = [torch_frame, f("/p/model.py", 22, "forward"), f("/p/ref.py", 149, "reference")]
scratch = [f("/p/model.py", 10, "forward")]
def e(action, addr, size, frames=()):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "frames": list(frames)}
trace = [e("segment_map", 0, 128 * M), e("alloc", 1, 16 * M, scratch), e("free_requested", 1, 16 * M),
         e("free_completed", 1, 16 * M), e("alloc", 2, 64 * M, draw), e("alloc", 3, 32 * M, model),
         e("free_requested", 3, 32 * M), e("segment_unmap", 0, 64 * M)]
pickle.dump({"segments": [], "device_traces": [trace]}, open(sys.argv[1], "wb"))
)";

CommandResult run(const std::vector<std::string>& argv) {
  return SystemCommandRunner{}.run(argv, std::chrono::seconds(60));
}

TEST(MemoryPeakScript, NamesWhatWasLiveAtEachPeakByTheCodeThatMadeIt) {
  TempDir dir("kopt-memory-peak");
  fs::path record = dir.path() / "001.pickle";
  CommandResult w = run({"python3", "-c", k_write_record, record.string()});
  ASSERT_TRUE(w.ok()) << w.err;
  CommandResult r = run({"python3", k_script.string(), record.string()});
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_NE(r.out.find("(cuda:0, model.py, 8 events)"), std::string::npos) << r.out;
  // Allocated peaks at the input and the result (the scratch was freed before them).
  EXPECT_NE(r.out.find("peak allocated 96.0 MiB (reserved then 128.0 MiB)"), std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("64.0 MiB    1 x  kopt_worker_draw.py:238 _draw_tensor < kopt_worker_draw.py:229 "
                 "draw_tensor"),
      std::string::npos)
      << "the innermost frame outside torch, and its caller: " << r.out;
  EXPECT_NE(r.out.find("32.0 MiB    1 x  model.py:22 forward < ref.py:149 reference"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("16.0 MiB"), std::string::npos)
      << "the freed scratch is not live: " << r.out;
  // The reserved peak came first, with only what was mapped for the scratch in use.
  EXPECT_NE(r.out.find("peak reserved 128.0 MiB (allocated then 0.0 MiB)"), std::string::npos)
      << r.out;
}

TEST(MemoryPeakScript, AFileThatIsNoRecordIsNamedWithExitCode2) {
  TempDir dir("kopt-memory-peak");
  fs::path bad = dir.path() / "002.pickle";
  ASSERT_TRUE(write_text_atomic(bad, "not a pickle"));
  CommandResult r = run({"python3", k_script.string(), bad.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(bad.string() + ": cannot read it"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kopt
