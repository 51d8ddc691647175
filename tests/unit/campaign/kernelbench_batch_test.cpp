// `kopt import kernelbench FOLDER`: the batch over fake importers and evaluators: order,
// refusals with their reasons, resumption after a stop, and the table.
#include "kopt/campaign/kernelbench_batch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "kopt/backend/python/kernelbench_import.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/problem/kernelbench.hpp"

namespace kopt::campaign {
namespace {
namespace fs = std::filesystem;

// A problem as an import writes it: a python reference, flops only when asked.
std::string spec(const std::string& name, bool flops, int n = 64) {
  return "# an import\n" + kernelbench_import_stamp() + "\nname = \"" + name +
         "\"\n[dims]\nn = " + std::to_string(n) +
         "\n[[tensors]]\nname = \"x\"\ndtype = \"f32\"\nshape = [\"n\"]\n" +
         "role = \"input\"\n[[tensors]]\nname = \"out\"\ndtype = \"f32\"\nshape = [\"n\"]\nrole = "
         "\"output\"\n" +
         "[cost]\n" + (flops ? "flops = \"n\"\n" : "") + "bytes = \"8 * n\"\n" +
         "[reference]\nkind = \"python\"\nsource = \"ref.py\"\n";
}

class KernelbenchBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"10_Big.py", "2_Small.py", "1_First.py", "3_Bool.py", "README.md"})
      ASSERT_TRUE(write_text_atomic(m_dir.path() / "src" / f, "# a KernelBench file\n"));
    m_options.source = m_dir.path() / "src";
    m_options.out = m_dir.path() / "out";
    m_options.cache_root = m_dir.path() / "cache";
    m_options.jobs = 2;
  }

  KernelbenchImporter importer() {
    return [this](const fs::path& file, const fs::path& dir) -> Expected<KernelbenchImported> {
      {
        std::lock_guard lock(m_mutex);
        m_imported.insert(file.filename().string());
      }
      std::string stem = file.stem().string();
      if (stem == "3_Bool")
        return Unexpected(
            bad_input("the get_inputs() tensor 'mask' is a bool tensor", file.string()));
      int n = m_sizes.count(stem) ? m_sizes.at(stem) : 64;
      std::string toml = spec(stem, stem != "2_Small", n);
      if (m_earlier_format) toml.replace(toml.find("# kopt import format"), 2, "# (earlier) ");
      if (auto w = write_text_atomic(dir / "kopt.toml", toml); !w) return Unexpected(w.error());
      (void)write_text_atomic(dir / "ref.py", "def reference(**kw):\n    pass\n");
      // The first file waited for its import process's start (torch's import).
      return KernelbenchImported{
          {stem == "2_Small" ? "flops not derived: kopt has no formula for foo" : "ok"},
          stem == "1_First" ? 4.25 : 0.0};
    };
  }

  KernelbenchEvaluator evaluator() {
    return [this](KernelbenchEntry& e, const fs::path& dir) -> Expected<void> {
      m_evaluated.push_back(e.problem);
      if (e.problem == m_machine_fails_on)
        return Unexpected(environment_error("kopt's worker ran out of host memory (run)"));
      EXPECT_TRUE(fs::exists(dir / "kopt.toml"));
      e.reference = ReferenceStatus::ok;
      e.reference_s = 0.5;
      e.eager.status = e.compiled.status = VariantStatus::ok;
      e.eager.median_s = 100e-6;
      e.compiled.median_s = 80e-6;
      e.compiled.rel_noise = 0.19;
      e.compiled.flags = {"noisy: 19.0 % spread between samples"};
      if (e.candidate.verdict == CandidateVerdict::not_run) {
        m_candidates_run.push_back(e.problem);
        // A candidate whose file says "cheat" is refused by the check, as a wrong one is.
        auto text = read_text_file(m_options.candidates / e.candidate.file);
        bool cheat = text && text->find("cheat") != std::string::npos;
        e.candidate.check =
            cheat ? evaluate::KernelStatus::mismatch : evaluate::KernelStatus::passed;
        e.candidate.verdict = cheat ? CandidateVerdict::failed : CandidateVerdict::passed;
        e.candidate.cause = cheat ? "mismatch: 12 of 64 elements differ" : "";
        e.candidate.timing.status = cheat ? VariantStatus::not_run : VariantStatus::ok;
        e.candidate.timing.median_s = 50e-6;
      }
      return {};
    };
  }

  // 1_First's candidate honest, 10_Big's a cheat (the evaluator refuses it), checked.
  fs::path two_candidates() {
    fs::path candidates = m_dir.path() / "candidates";
    EXPECT_TRUE(write_text_atomic(candidates / "1_First.py", "class ModelNew(Model): pass\n"));
    EXPECT_TRUE(write_text_atomic(candidates / "10_Big.py", "class ModelNew: # cheat\n"));
    m_options.check = true;
    m_options.candidates = candidates;
    return candidates;
  }

  TempDir m_dir{"kopt-kb-batch"};
  KernelbenchBatchOptions m_options;
  std::mutex m_mutex;
  std::set<std::string> m_imported;
  std::vector<std::string> m_evaluated;
  std::string m_machine_fails_on;      // the problem whose evaluation the machine fails
  std::map<std::string, int> m_sizes;  // a problem's n where it is not 64
  bool m_earlier_format = false;       // imports as an earlier kopt wrote them
  std::vector<std::string> m_candidates_run;
};

TEST(KernelbenchFiles, AreThePythonFilesInKernelbenchsNumericOrder) {
  TempDir dir("kopt-kb-files");
  for (const char* f : {"10_B.py", "2_A.py", "1_C.py", "notes.txt", "x.py"})
    ASSERT_TRUE(write_text_atomic(dir.path() / f, ""));
  std::vector<std::string> names;
  for (const auto& p : kernelbench_files(dir.path())) names.push_back(p.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"x.py", "1_C.py", "2_A.py", "10_B.py"}));
}

TEST_F(KernelbenchBatchTest, ImportsEveryFileAndSaysWhyOneWasRefused) {
  m_options.check = m_options.baselines = true;
  auto batch = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(batch) << batch.error().to_string();
  ASSERT_EQ(batch->entries.size(), 4u);
  EXPECT_EQ(batch->entries[0].problem, "1_First");
  EXPECT_EQ(batch->entries[3].problem, "10_Big");
  const KernelbenchEntry& refused = batch->entries[2];
  EXPECT_EQ(refused.status, ImportStatus::refused);
  EXPECT_NE(refused.error.find("bool tensor"), std::string::npos);
  EXPECT_EQ(batch->entries[0].status, ImportStatus::imported);
  EXPECT_TRUE(batch->entries[0].flops_known);
  EXPECT_FALSE(batch->entries[1].flops_known) << "2_Small has no flops formula";
  // Only what imported is evaluated, one problem at a time.
  EXPECT_EQ(m_evaluated, (std::vector<std::string>{"1_First", "2_Small", "10_Big"}));
  EXPECT_EQ(batch->exit_code(), 1) << "a refused file is a failure of the batch";
  std::string md = kernelbench_markdown(*batch);
  EXPECT_NE(md.find("4 files: 3 imported, 1 refused, 0 failed"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2_Small | "), std::string::npos);
  EXPECT_NE(md.find("unknown"), std::string::npos) << "no flops formula is said, not shown as 0";
  EXPECT_NE(md.find("refused: "), std::string::npos);
  EXPECT_NE(md.find("compile noisy: 19.0 %"), std::string::npos) << md;
  EXPECT_TRUE(fs::exists(m_options.out / "kernelbench.json"));
  // The import process's start is told apart from the file's own import, and kept.
  EXPECT_EQ(batch->entries[0].import_start_s, 4.25);
  EXPECT_EQ(batch->entries[1].import_start_s, 0.0);
  EXPECT_NE(md.find(" (4.2 start) |"), std::string::npos) << md;
  EXPECT_NE(md.find("which a harness of one process pays once"), std::string::npos) << md;
  EXPECT_EQ(kernelbench_entry_from_json(to_json(batch->entries[0])).import_start_s, 4.25);
}

TEST_F(KernelbenchBatchTest, ASecondRunResumesAndRedoesNothingDone) {
  m_options.check = m_options.baselines = true;
  int set_ups = 0;
  m_options.before_imports = [&] { ++set_ups; };
  ASSERT_TRUE(run_kernelbench_batch(m_options, importer(), evaluator()));
  EXPECT_EQ(set_ups, 1) << "the device's set-up starts beside the imports";
  m_imported.clear();
  m_evaluated.clear();
  auto again = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(again);
  EXPECT_EQ(set_ups, 1) << "nothing left for the device: no set-up";
  // The refused file is tried again (the user may have fixed it); nothing else is.
  EXPECT_EQ(m_imported, (std::set<std::string>{"3_Bool.py"}));
  EXPECT_TRUE(m_evaluated.empty()) << (m_evaluated.empty() ? "" : m_evaluated.front());
  EXPECT_EQ(again->entries[0].reference, ReferenceStatus::ok)
      << "the outcome of the first run is kept";
  EXPECT_EQ(again->entries[3].compiled.median_s, 80e-6);
}

TEST_F(KernelbenchBatchTest, AStateCutShortByAKillResumesFromTheProblemDirectories) {
  ASSERT_TRUE(run_kernelbench_batch(m_options, importer(), evaluator()));
  // The state file lost (killed while writing it is impossible: it is replaced atomically,
  // but a user may delete it): problems already on disk are kept, not imported again.
  fs::remove(m_options.out / "kernelbench.json");
  m_imported.clear();
  m_options.check = true;
  auto again = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(again);
  EXPECT_EQ(m_imported, (std::set<std::string>{"3_Bool.py"}));
  EXPECT_EQ(again->entries[0].status, ImportStatus::kept);
  EXPECT_EQ(m_evaluated.size(), 3u) << "never evaluated before, so evaluated now";
}

TEST_F(KernelbenchBatchTest, ForceImportsAndEvaluatesEverythingAgain) {
  m_options.check = true;
  ASSERT_TRUE(run_kernelbench_batch(m_options, importer(), evaluator()));
  m_imported.clear();
  m_evaluated.clear();
  m_options.force = true;
  ASSERT_TRUE(run_kernelbench_batch(m_options, importer(), evaluator()));
  EXPECT_EQ(m_imported.size(), 4u);
  EXPECT_EQ(m_evaluated.size(), 3u);
}

TEST_F(KernelbenchBatchTest, WithoutTorchTheBatchStopsWithTheEnvironmentError) {
  std::atomic<int> calls{0};
  auto no_torch = [&](const fs::path&, const fs::path&) -> Expected<KernelbenchImported> {
    ++calls;
    return Unexpected(environment_error("this Python cannot import torch"));
  };
  m_options.jobs = 1;
  auto batch = run_kernelbench_batch(m_options, no_torch, evaluator());
  ASSERT_FALSE(batch);
  EXPECT_EQ(batch.error().kind, ErrorKind::environment);
  EXPECT_EQ(calls.load(), 1) << "one failure for the environment is enough";
}

// The machine failing a problem's evaluation (kopt's own memory, a full disk) is not the
// problem's verdict: the batch stops with that error, the problem is recorded as not run, and a
// resume evaluates it (and only what was left).
TEST_F(KernelbenchBatchTest, TheMachineFailingAnEvaluationStopsTheBatchAndAResumeRunsItAgain) {
  m_options.check = m_options.baselines = true;
  m_machine_fails_on = "2_Small";
  auto batch = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_FALSE(batch);
  EXPECT_EQ(batch.error().kind, ErrorKind::environment);
  EXPECT_EQ(m_evaluated, (std::vector<std::string>{"1_First", "2_Small"}));
  m_machine_fails_on.clear();
  m_evaluated.clear();
  auto again = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(m_evaluated, (std::vector<std::string>{"2_Small", "10_Big"}))
      << "the first problem's outcome was saved; the one the machine failed is run again";
  EXPECT_EQ(again->entries[1].reference, ReferenceStatus::ok);
}

// The smallest problems first, so that a batch cut off by its time limit has done the most;
// the table keeps the files' order.
TEST_F(KernelbenchBatchTest, TheSmallestProblemsAreEvaluatedFirst) {
  m_options.check = m_options.baselines = true;
  m_sizes = {{"1_First", 1 << 20}, {"10_Big", 16}};
  auto batch = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(batch) << batch.error().to_string();
  EXPECT_EQ(m_evaluated, (std::vector<std::string>{"10_Big", "2_Small", "1_First"}));
  ASSERT_EQ(batch->entries.size(), 4u);
  EXPECT_EQ(batch->entries[0].problem, "1_First");
  EXPECT_EQ(batch->entries[0].reference, ReferenceStatus::ok);
}

// Several devices (--gpus): each evaluates one problem at a time and takes the next when it is
// done; every problem is evaluated once, on one of them, and says which.
TEST_F(KernelbenchBatchTest, SeveralDevicesShareTheProblemsOneAtATimeEach) {
  m_options.check = m_options.baselines = true;
  std::mutex m;
  std::map<std::string, int> on;  // problem -> device
  int busy = 0, most_busy = 0;
  auto device = [&](int d) -> KernelbenchEvaluator {
    return [&, d](KernelbenchEntry& e, const fs::path&) -> Expected<void> {
      {
        std::lock_guard lock(m);
        EXPECT_EQ(on.count(e.problem), 0u) << e.problem << " evaluated twice";
        on[e.problem] = d;
        most_busy = std::max(most_busy, ++busy);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      e.reference = ReferenceStatus::ok;
      e.eager.status = e.compiled.status = VariantStatus::ok;
      e.device = "device " + std::to_string(d);
      std::lock_guard lock(m);
      --busy;
      return {};
    };
  };
  auto batch = run_kernelbench_batch(m_options, importer(), {device(0), device(1)});
  ASSERT_TRUE(batch) << batch.error().to_string();
  EXPECT_EQ(on.size(), 3u);
  EXPECT_EQ(most_busy, 2) << "both devices at work at once";
  for (const auto& e : batch->entries)
    if (e.status == ImportStatus::imported) {
      EXPECT_EQ(e.reference, ReferenceStatus::ok) << e.problem;
      EXPECT_EQ(e.device, "device " + std::to_string(on.at(e.problem))) << e.problem;
    }
  // The state says where each ran, and a resume has nothing left to do.
  on.clear();
  auto again = run_kernelbench_batch(m_options, importer(), {device(0), device(1)});
  ASSERT_TRUE(again);
  EXPECT_TRUE(on.empty());
  EXPECT_EQ(again->entries[0].device.rfind("device ", 0), 0u);
}

// An import the GPU had no room for beside the others is kopt's own parallelism, not the
// problem's fault: it is tried again with no other import running, and only a file that does
// not fit alone fails, with torch's words; the batch goes on.
TEST_F(KernelbenchBatchTest, AnImportOutOfMemoryBesideOthersIsTriedAgainAlone) {
  std::atomic<int> running{0}, most_beside_a_retry{0};
  std::map<std::string, int> calls;
  std::mutex calls_mutex;
  auto base = importer();
  auto crowded = [&](const fs::path& file, const fs::path& dir) -> Expected<KernelbenchImported> {
    int now = ++running;
    int n;
    {
      std::lock_guard lock(calls_mutex);
      n = ++calls[file.stem().string()];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the others overlap it
    Expected<KernelbenchImported> out = base(file, dir);
    if (file.stem() == "10_Big" && n == 1)
      out = Unexpected(import_out_of_memory_error(file, "CUDA out of memory. Tried 8 GiB"));
    if (file.stem() == "2_Small")  // too large for the GPU even alone
      out = Unexpected(import_out_of_memory_error(file, "CUDA out of memory. Tried 90 GiB"));
    if (n == 2) most_beside_a_retry = std::max(most_beside_a_retry.load(), now);
    --running;
    return out;
  };
  m_options.jobs = 4;
  auto batch = run_kernelbench_batch(m_options, crowded, evaluator());
  ASSERT_TRUE(batch) << batch.error().to_string();
  EXPECT_EQ(calls["10_Big"], 2);
  EXPECT_EQ(calls["2_Small"], 2);
  EXPECT_EQ(most_beside_a_retry.load(), 1) << "a retry runs alone";
  auto row = [&](const std::string& p) {
    return *std::find_if(batch->entries.begin(), batch->entries.end(),
                         [&](const KernelbenchEntry& e) { return e.problem == p; });
  };
  EXPECT_EQ(row("10_Big").status, ImportStatus::imported);
  EXPECT_EQ(row("2_Small").status, ImportStatus::failed);
  EXPECT_NE(row("2_Small").error.find("Tried 90 GiB"), std::string::npos);
  EXPECT_EQ(row("1_First").status, ImportStatus::imported);
}

TEST_F(KernelbenchBatchTest, AFolderWithoutKernelbenchFilesIsBadInput) {
  m_options.source = m_dir.path() / "empty";
  fs::create_directories(m_options.source);
  auto batch = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_FALSE(batch);
  EXPECT_EQ(batch.error().kind, ErrorKind::bad_input);
}

// --candidates: each problem's ModelNew file of its name, evaluated once, and again when it
// changes; a failed one fails the batch and its row says why.
TEST_F(KernelbenchBatchTest, CandidatesAreEvaluatedOnceAndAgainWhenTheirFileChanges) {
  fs::path candidates = two_candidates();
  auto batch = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(batch) << batch.error().to_string();
  EXPECT_EQ(batch->entries[0].candidate.verdict, CandidateVerdict::passed);
  EXPECT_EQ(batch->entries[1].candidate.verdict, CandidateVerdict::none) << "2_Small has none";
  EXPECT_EQ(batch->entries[3].candidate.verdict, CandidateVerdict::failed);
  EXPECT_EQ(batch->exit_code(), 1);
  std::string md = kernelbench_markdown(*batch);
  EXPECT_NE(md.find("candidates: 1 passed, 1 failed, 0 not run of 2"), std::string::npos) << md;
  EXPECT_NE(md.find("| passed (50.0 us) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| failed (mismatch) |"), std::string::npos) << md;
  EXPECT_NE(md.find("candidate mismatch: 12 of 64 elements differ"), std::string::npos) << md;

  // Again: nothing to do. Then one candidate changes: that one alone runs again.
  m_evaluated.clear();
  ASSERT_TRUE(run_kernelbench_batch(m_options, importer(), evaluator()));
  EXPECT_TRUE(m_evaluated.empty());
  ASSERT_TRUE(write_text_atomic(candidates / "10_Big.py", "class ModelNew(Model): pass\n"));
  auto again = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(again);
  EXPECT_EQ(m_evaluated, (std::vector<std::string>{"10_Big"}));
  EXPECT_EQ(again->entries[3].candidate.verdict, CandidateVerdict::passed);
  EXPECT_EQ(again->entries[0].candidate.verdict, CandidateVerdict::passed) << "kept";
  EXPECT_EQ(again->exit_code(), 1) << "3_Bool is still refused";
  // Without --candidates, a later batch keeps what was recorded.
  m_options.candidates.clear();
  auto plain = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->entries[3].candidate.verdict, CandidateVerdict::passed);
}

// An import an earlier kopt wrote (its ref.py, its ModelNew adapter) is imported again; a
// candidate refused against it is evaluated again, since the refusal may have been the old
// import's (one kept stale weights); one that passed stays passed.
TEST_F(KernelbenchBatchTest, AnEarlierKoptsImportIsRedoneAndItsFailedCandidatesRunAgain) {
  fs::path candidates = two_candidates();
  m_earlier_format = true;
  auto batch = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(batch) << batch.error().to_string();
  EXPECT_EQ(batch->entries[0].candidate.verdict, CandidateVerdict::passed);
  EXPECT_EQ(batch->entries[3].candidate.verdict, CandidateVerdict::failed);

  m_earlier_format = false;
  m_imported.clear();
  m_candidates_run.clear();
  auto again = run_kernelbench_batch(m_options, importer(), evaluator());
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(m_imported.size(), 4u) << "every file imported again";
  EXPECT_EQ(m_candidates_run, (std::vector<std::string>{"10_Big"}));
  EXPECT_EQ(again->entries[0].candidate.verdict, CandidateVerdict::passed) << "kept";
  EXPECT_EQ(again->entries[0].reference, ReferenceStatus::ok) << "its reference ran again";

  // Now in this kopt's format: kept, nothing runs.
  m_imported.clear();
  m_candidates_run.clear();
  ASSERT_TRUE(run_kernelbench_batch(m_options, importer(), evaluator()));
  EXPECT_EQ(m_imported, (std::set<std::string>{"3_Bool.py"})) << "the refused file alone";
  EXPECT_TRUE(m_candidates_run.empty());
}

TEST(KernelbenchEntryJson, RoundTrips) {
  KernelbenchEntry e;
  e.file = "23_Softmax.py";
  e.problem = "23_Softmax";
  e.status = ImportStatus::imported;
  e.reference = ReferenceStatus::ok;
  e.compiled.status = VariantStatus::ok;
  e.compiled.median_s = 1e-4;
  e.compiled.flags = {"noisy"};
  e.reference_outputs["out"] = OutputSummary{1000, 2, 1, -3.5, 4.25, "00000000deadbeef"};
  KernelbenchEntry back = kernelbench_entry_from_json(to_json(e));
  EXPECT_EQ(back.reference_outputs["out"].nan, 2u);
  EXPECT_EQ(back.reference_outputs["out"].inf, 1u);
  EXPECT_EQ(back.reference_outputs["out"].min, -3.5);
  EXPECT_EQ(back.reference_outputs["out"].checksum, "00000000deadbeef");
  EXPECT_EQ(back.problem, "23_Softmax");
  EXPECT_EQ(back.reference, ReferenceStatus::ok);
  EXPECT_EQ(back.compiled.median_s, 1e-4);
  EXPECT_EQ(back.compiled.flags, e.compiled.flags);
  EXPECT_EQ(back.eager.status, VariantStatus::not_run);
  EXPECT_EQ(back.candidate.verdict, CandidateVerdict::none);
  e.candidate = {.file = "23_Softmax.py",
                 .hash = "ab12",
                 .verdict = CandidateVerdict::failed,
                 .check = evaluate::KernelStatus::passed,
                 .timing = {.status = VariantStatus::inconsistent,
                            .median_s = 2e-5,
                            .n = 40,
                            .flags = {"bimodal: two modes"}},
                 .cause = "inconsistent: poisoned sample 3"};
  back = kernelbench_entry_from_json(to_json(e));
  EXPECT_EQ(back.candidate.verdict, CandidateVerdict::failed);
  EXPECT_EQ(back.candidate.timing.status, VariantStatus::inconsistent);
  EXPECT_EQ(back.candidate.check, evaluate::KernelStatus::passed);
  EXPECT_EQ(back.candidate.hash, "ab12");
  EXPECT_EQ(back.candidate.cause, e.candidate.cause);
  EXPECT_EQ(back.candidate.timing.n, 40u);
  EXPECT_EQ(back.candidate.timing.flags, e.candidate.timing.flags);
}

}  // namespace
}  // namespace kopt::campaign
