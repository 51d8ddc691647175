#include "kopt/core/fork_server.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <set>
#include <thread>

#include "kopt/core/fs.hpp"

namespace kopt {
namespace {
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A server of the protocol fork_server.hpp states, in a few lines of Python: it counts its starts
// in a file and sleeps a while before its first accept (the start a real server pays once),
// then forks a child for each connection that echoes its lines with its pid in front, and
// writes one line to its log.
constexpr const char* k_echo_server = R"PY(
import json, os, select, signal, socket, sys, time
open(sys.argv[1], "a").write("start\n")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[2]); s.listen(16)
print("listening", flush=True)
time.sleep(0.3)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
while True:
    r, _, _ = select.select([s, sys.stdin], [], [])
    if sys.stdin in r and not os.read(0, 4096):
        break
    if s in r:
        c, _ = s.accept()
        if os.fork() == 0:
            s.close()
            f, w = c.makefile("r"), c.makefile("w")
            log = open(json.loads(f.readline())["log"], "a")
            log.write("child %d\n" % os.getpid()); log.flush()
            w.write(json.dumps({"pid": os.getpid()}) + "\n"); w.flush()
            for line in f:
                w.write("%d %s" % (os.getpid(), line)); w.flush()
            os._exit(0)
        c.close()
)PY";

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

pid_t parent_of(pid_t pid) {
  auto stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return -1;
  auto after_name = stat->rfind(')');  // "pid (name) state ppid ..."
  return std::stoi(stat->substr(stat->find(' ', after_name + 2) + 1));
}

class ForkServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script = dir.path() / "echo_server.py";
    ASSERT_TRUE(write_text_atomic(script, k_echo_server));
  }
  std::vector<std::string> argv() { return {"python3", script.string(), starts.string()}; }
  std::size_t started() {
    auto text = read_text_file(starts);
    return text ? static_cast<std::size_t>(std::count(text->begin(), text->end(), '\n')) : 0;
  }
  TempDir dir{"kopt-fork-server-test"};
  fs::path script;
  fs::path starts = dir.path() / "starts";
};

// Four callers at once wait for one start of the server, not four: each gets a child of its
// own, with its own pid and log, that speaks lines both ways.
TEST_F(ForkServerTest, CallersAtOnceShareOneStartAndGetAChildEach) {
  ForkServer server(argv(), "the test's echo server");
  std::vector<ForkedChild> children(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      auto c = server.fork(dir.path() / ("child" + std::to_string(i) + ".log"), 30s);
      if (c)
        children[i] = std::move(*c);
      else
        errors[i] = c.error().to_string();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(started(), 1u);
  std::set<pid_t> pids;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(children[i].running()) << errors[i];
    pids.insert(children[i].pid());
    ASSERT_TRUE(children[i].write_line("hello " + std::to_string(i)));
    std::string line;
    ASSERT_EQ(children[i].read_line(line, 10s), LineChannel::ReadStatus::line);
    EXPECT_EQ(line, std::to_string(children[i].pid()) + " hello " + std::to_string(i));
    auto log = read_text_file(dir.path() / ("child" + std::to_string(i) + ".log"));
    ASSERT_TRUE(log);
    EXPECT_EQ(*log, "child " + std::to_string(children[i].pid()) + "\n");
  }
  EXPECT_EQ(pids.size(), 4u);
}

// kill() returns once the child is gone (its server reaps it), and a child forked after it
// comes without the server's start again.
TEST_F(ForkServerTest, AKilledChildIsGoneWhenKillReturnsAndTheNextNeedsNoNewStart) {
  ForkServer server(argv(), "the test's echo server");
  auto first = server.fork(dir.path() / "first.log", 30s);
  ASSERT_TRUE(first) << first.error().to_string();
  pid_t pid = first->pid();
  ASSERT_TRUE(alive(pid));
  EXPECT_EQ(first->kill(), "killed");
  EXPECT_FALSE(alive(pid));
  EXPECT_FALSE(first->running());
  EXPECT_FALSE(first->write_line("anyone?"));
  auto second = server.fork(dir.path() / "second.log", 30s);
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_NE(second->pid(), pid);
  EXPECT_EQ(started(), 1u);
}

// A child whose process ends is read as EOF, not waited for until the timeout.
TEST_F(ForkServerTest, AChildThatDiesIsReadAsItsEnd) {
  ForkServer server(argv(), "the test's echo server");
  auto child = server.fork(dir.path() / "child.log", 30s);
  ASSERT_TRUE(child) << child.error().to_string();
  ::kill(child->pid(), SIGKILL);
  std::string line;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(child->read_line(line, 20s), LineChannel::ReadStatus::eof);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// The server ends with its owner, its children before it: nothing of either is left running.
TEST_F(ForkServerTest, TheServerEndsWithItsOwner) {
  pid_t child_pid = -1, server_pid = -1;
  {
    ForkServer server(argv(), "the test's echo server");
    auto child = server.fork(dir.path() / "child.log", 30s);
    ASSERT_TRUE(child) << child.error().to_string();
    child_pid = child->pid();
    server_pid = parent_of(child_pid);
    ASSERT_GT(server_pid, 1);
    ASSERT_TRUE(alive(server_pid));
  }
  EXPECT_FALSE(alive(server_pid));  // reaped by the destructor
  EXPECT_FALSE(alive(child_pid));
}

// A server that died (killed here, as the kernel's out-of-memory killer would) is started again
// by the next fork, once, and the child it forked before lives on.
TEST_F(ForkServerTest, AServerThatDiedIsStartedAgainAndItsChildLivesOn) {
  ForkServer server(argv(), "the test's echo server");
  auto first = server.fork(dir.path() / "first.log", 30s);
  ASSERT_TRUE(first) << first.error().to_string();
  pid_t server_pid = parent_of(first->pid());
  ASSERT_GT(server_pid, 1);
  ::kill(server_pid, SIGKILL);
  for (int i = 0; i < 500 && parent_of(first->pid()) == server_pid; ++i)
    std::this_thread::sleep_for(10ms);  // the child is its server's no more
  auto second = server.fork(dir.path() / "second.log", 30s);
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_EQ(server.starts(), 2);
  EXPECT_EQ(started(), 2u);
  EXPECT_NE(parent_of(second->pid()), server_pid);
  for (ForkedChild* c : {&*first, &*second}) {
    ASSERT_TRUE(c->write_line("still here"));
    std::string line;
    ASSERT_EQ(c->read_line(line, 10s), LineChannel::ReadStatus::line);
    EXPECT_EQ(line, std::to_string(c->pid()) + " still here");
  }
}

TEST_F(ForkServerTest, AProgramThatCannotStartIsTheEnvironment) {
  ForkServer server({"kopt-no-such-program-anywhere"}, "a server that is not there");
  auto child = server.fork(dir.path() / "child.log", 5s);
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().kind, ErrorKind::environment);
}

// A server that never listens is kopt's to report, with what it said.
TEST_F(ForkServerTest, AServerThatBreaksTheProtocolIsAnErrorThatQuotesIt) {
  ForkServer server({"sh", "-c", "echo 'no torch here' >&2; echo ready"},
                    "the test's broken server");
  auto child = server.fork(dir.path() / "child.log", 5s);
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().kind, ErrorKind::internal);
  EXPECT_NE(child.error().message.find("ready"), std::string::npos) << child.error().message;
  EXPECT_NE(child.error().message.find("no torch here"), std::string::npos)
      << child.error().message;
}

}  // namespace
}  // namespace kopt
