#include "kopt/core/process.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "kopt/core/fs.hpp"

namespace kopt {
namespace {
using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(SystemCommandRunner, CapturesOutputAndExitCode) {
  SystemCommandRunner r;
  CommandResult res = r.run({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
  EXPECT_TRUE(res.started);
  EXPECT_EQ(res.exit_code, 3);
  EXPECT_EQ(res.out, "out\n");
  EXPECT_EQ(res.err, "err\n");
  EXPECT_FALSE(res.ok());
}

TEST(SystemCommandRunner, KillsOnTimeout) {
  SystemCommandRunner r;
  auto start = std::chrono::steady_clock::now();
  CommandResult res = r.run({"sh", "-c", "sleep 20"}, 300ms);
  EXPECT_TRUE(res.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// The MCP server's view of a call: ticks with the last whole stderr line while the command runs.
TEST(RunWatched, TicksWithTheLastLogLineWhileItRuns) {
  std::vector<std::string> seen;
  RunWatch w{.tick = 40ms, .on_tick = [&](const std::string& line) { seen.push_back(line); }};
  CommandResult res = run_watched(
      {"sh", "-c", "sleep 0.2; printf 'one\\ntwo\\npart' >&2; sleep 0.3; echo done"}, 10s, w);
  EXPECT_TRUE(res.ok());
  EXPECT_EQ(res.out, "done\n");
  ASSERT_GE(seen.size(), 4u);
  EXPECT_EQ(seen.front(), "");    // before the first line
  EXPECT_EQ(seen.back(), "two");  // a line not ended yet is not shown
}

// A cancel: SIGTERM to the command's group (a shell and its sleep alike), and SIGKILL after the
// grace for a command that ignores SIGTERM.
TEST(RunWatched, AStopEndsTheCommandAndItsGroupEvenOneThatIgnoresSigterm) {
  for (const char* script : {"sleep 30 & wait", "trap '' TERM; sleep 30 & wait; sleep 30"}) {
    auto start = std::chrono::steady_clock::now();
    RunWatch w{.tick = 20ms,
               .stop = [&] { return std::chrono::steady_clock::now() - start > 200ms; },
               .grace = 500ms};
    CommandResult res = run_watched({"sh", "-c", script}, 60s, w);
    EXPECT_TRUE(res.stopped) << script;
    EXPECT_FALSE(res.ok()) << script;
    EXPECT_FALSE(res.timed_out) << script;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << script;
  }
}

TEST(SystemCommandRunner, MissingProgramIsNotStarted) {
  SystemCommandRunner r;
  EXPECT_FALSE(r.run({"kopt-definitely-missing-program"}, 5s).started);
}

// A long-lived child is found on PATH by its bare name, as SystemCommandRunner finds one:
// the Python worker is started as "python3" by default.
TEST(Subprocess, StartsABareNameFromPath) {
  TempDir dir("kopt-spawn");
  auto child = Subprocess::spawn({"cat"}, dir.path() / "err");
  ASSERT_TRUE(child) << child.error().message;
  ASSERT_TRUE(child->write_line("hello"));
  std::string line;
  ASSERT_EQ(child->read_line(line, 5s), Subprocess::ReadStatus::line);
  EXPECT_EQ(line, "hello");
}

TEST(Subprocess, AMissingProgramIsAnEnvironmentErrorThatNamesIt) {
  TempDir dir("kopt-spawn");
  auto child = Subprocess::spawn({"kopt-definitely-missing-program"}, dir.path() / "err");
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().kind, ErrorKind::environment);
  EXPECT_NE(child.error().message.find("kopt-definitely-missing-program"), std::string::npos);
  EXPECT_NE(child.error().message.find("PATH"), std::string::npos);
}

TEST(Subprocess, AFileThatCannotBeExecutedIsAnErrorNotADeadChild) {
  TempDir dir("kopt-spawn");
  ASSERT_TRUE(write_text_atomic(dir.path() / "not-a-program", "\x7f garbage"));
  fs::permissions(dir.path() / "not-a-program", fs::perms::owner_all);
  auto child = Subprocess::spawn({(dir.path() / "not-a-program").string()}, dir.path() / "err");
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().kind, ErrorKind::environment);
}

TEST(SystemCommandRunner, ReportsASignal) {
  SystemCommandRunner r;
  CommandResult res = r.run({"sh", "-c", "kill -SEGV $$"}, 5s);
  EXPECT_EQ(res.signal, 11);
  EXPECT_FALSE(res.ok());
}

TEST(Subprocess, AChildEndedByTheFileSizeLimitWasEndedByALimitOfTheMachines) {
  TempDir dir("kopt-spawn");
  auto ended = [&](const char* script) {
    auto child = Subprocess::spawn({"sh", "-c", script}, dir.path() / "err");
    EXPECT_TRUE(child);
    std::string line;
    EXPECT_EQ(child->read_line(line, 5s), Subprocess::ReadStatus::eof);
    child->reap(5s);
    return child->ended_by_a_limit();
  };
  EXPECT_TRUE(ended("kill -XFSZ $$"));
  EXPECT_TRUE(ended("kill -XCPU $$"));
  EXPECT_FALSE(ended("kill -SEGV $$"));
  EXPECT_FALSE(ended("exit 1"));
  auto hung = Subprocess::spawn({"sleep", "30"}, dir.path() / "err");
  ASSERT_TRUE(hung);
  hung->kill_and_reap();  // kopt's own kill is not the machine's limit
  EXPECT_FALSE(hung->ended_by_a_limit());
}

TEST(FileWrites, AWriteTheMachineRefusesIsTheEnvironmentAndLeavesNothing) {
  TempDir dir("kopt-fs-test");
  struct rlimit before {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // as kopt's main: EFBIG, not a signal
  struct rlimit small = before;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto w = write_file_atomic(dir.path() / "big.bin", std::vector<std::byte>(1 << 20));
  ::setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind, ErrorKind::environment);
  EXPECT_NE(w.error().message.find("File too large"), std::string::npos) << w.error().message;
  EXPECT_TRUE(fs::is_empty(dir.path())) << "no temporary left behind";
}

// The same for a copy of kopt's (a reference kept, a candidate's output handed back): a full
// disk found on the device made those "cannot copy" failures the candidates' verdicts.
TEST(FileWrites, ACopyTheMachineRefusesIsTheEnvironmentAndLeavesNothing) {
  TempDir dir("kopt-fs-test");
  ASSERT_TRUE(write_file_atomic(dir.path() / "src.bin", std::vector<std::byte>(1 << 20)));
  struct rlimit before {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = before;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto c = copy_file_atomic(dir.path() / "src.bin", dir.path() / "out" / "copy.bin");
  ::setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, ErrorKind::environment) << c.error().message;
  EXPECT_TRUE(fs::is_empty(dir.path() / "out")) << "no temporary left behind";
  // A copy of a file that is not there is kopt's own bug, not the machine's.
  auto missing = copy_file_atomic(dir.path() / "none.bin", dir.path() / "out" / "x.bin");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::internal);
}

TEST(FileWrites, AreAtomicAndLeaveNoTemporaries) {
  TempDir dir("kopt-fs-test");
  auto path = dir.path() / "sub" / "state.json";
  ASSERT_TRUE(write_text_atomic(path, "one"));
  ASSERT_TRUE(write_text_atomic(path, "two"));
  EXPECT_EQ(*read_text_file(path), "two");
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path.parent_path()))
    ++files;
  EXPECT_EQ(files, 1);
  auto missing = read_text_file(dir.path() / "nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
}

TEST(Error, FormatsFileLineAndField) {
  EXPECT_EQ(bad_input("unknown dtype 'x'", "p/kopt.toml", 12, "tensors[0].dtype").to_string(),
            "p/kopt.toml:12: tensors[0].dtype: unknown dtype 'x'");
  EXPECT_EQ(bad_input("no such file", "p").to_string(), "p: no such file");
  EXPECT_EQ(exit_code(ErrorKind::bad_input), 2);
  EXPECT_EQ(exit_code(ErrorKind::environment), 3);
  EXPECT_EQ(exit_code(ErrorKind::internal), 4);
}

}  // namespace
}  // namespace kopt
