// The sandbox kopt puts candidates in (core/sandbox.hpp), attacked from a confined shell and a
// confined Python: each test runs the same probe unconfined first, so that it cannot pass
// because the probe itself is broken.
#include "kopt/core/sandbox.hpp"

#include <gtest/gtest.h>

#include "kopt/core/fs.hpp"
#include "kopt/core/process.hpp"
#include "kopt/core/python.hpp"

namespace kopt {
namespace {
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Runs `script` under /bin/sh (confined by `sandbox` when given) and returns its first line.
std::string first_line(const std::vector<std::string>& argv, const fs::path& log,
                       const PreparedSandbox* sandbox) {
  SpawnOptions options;
  options.sandbox = sandbox;
  auto child = Subprocess::spawn(argv, log, options);
  EXPECT_TRUE(child) << (child ? "" : child.error().message);
  if (!child) return "did not start";
  std::string line;
  if (child->read_line(line, 60s) != Subprocess::ReadStatus::line) line = "no answer";
  child->reap(10s);
  return line;
}

class Sandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(write_text_atomic(m_secret.path() / "reference.bin", "the answers"));
    fs::create_directories(m_room.path() / "rw");
  }
  // The probe's first line unconfined, then confined by policy(python).
  void expect_lines(const std::vector<std::string>& argv, const std::string& open,
                    const std::string& confined, const PythonLayout& python = {}) {
    fs::path log = m_room.path() / "log";
    EXPECT_EQ(first_line(argv, log, nullptr), open);
    PreparedSandbox sandbox(policy(python));
    EXPECT_EQ(first_line(argv, log, &sandbox), confined) << read_text_file(log).value_or("");
  }
  SandboxPolicy policy(const PythonLayout& python = {}) {
    SandboxPolicy p;
    system_sandbox_paths(p.read, p.read_write);
    for (const auto& dir : python.read) p.read.push_back(dir);
    p.read_write.push_back(m_room.path() / "rw");
    return p;
  }
  TempDir m_secret{"kopt-secret"}, m_room{"kopt-room"};
};

TEST_F(Sandbox, WhatTheMachineAllowsIsSaid) {
  const SandboxSupport& s = sandbox_support();
  std::string line = s.summary();
  EXPECT_NE(line.find(s.files() ? "Landlock ABI" : "files not confined"), std::string::npos)
      << line;
  EXPECT_NE(line.find(s.network() ? "seccomp" : "network not confined"), std::string::npos) << line;
  PreparedSandbox none(SandboxPolicy{{}, {}, false});
  EXPECT_NE(none.describe().find("network NOT confined"), std::string::npos) << none.describe();
}

TEST_F(Sandbox, AConfinedChildReadsAndWritesOnlyWhatItIsGiven) {
  if (!sandbox_support().files()) GTEST_SKIP() << sandbox_support().summary();
  fs::path secret = m_secret.path() / "reference.bin";
  fs::path mine = m_room.path() / "rw" / "mine.txt";
  fs::path theirs = m_secret.path() / "planted.txt";
  std::string script = "cat '" + secret.string() + "' >/dev/null 2>&1 && r=read || r=denied; " +
                       "echo x > '" + mine.string() + "' 2>/dev/null && w=wrote || w=denied; " +
                       "echo x > '" + theirs.string() +
                       "' 2>/dev/null && o=planted || o=denied; echo $r $w $o";
  fs::path log = m_room.path() / "log";
  // Unconfined, the same probe reads the secret and writes both files.
  EXPECT_EQ(first_line({"/bin/sh", "-c", script}, log, nullptr), "read wrote planted");
  fs::remove(theirs);
  PreparedSandbox sandbox(policy());
  EXPECT_EQ(first_line({"/bin/sh", "-c", script}, log, &sandbox), "denied wrote denied");
  EXPECT_FALSE(fs::exists(theirs));
  EXPECT_NE(sandbox.describe().find("files confined by Landlock"), std::string::npos);
}

TEST_F(Sandbox, AConfinedChildOpensNoNetworkSocketButALocalOne) {
  if (!sandbox_support().network()) GTEST_SKIP() << sandbox_support().summary();
  PythonLayout python = python_layout(choose_python("socket"));
  if (python.read.empty()) GTEST_SKIP() << "no Python that answers";
  std::string probe =
      "import socket\n"
      "out = []\n"
      "for fam in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):\n"
      "    try:\n"
      "        socket.socket(fam, socket.SOCK_STREAM).close(); out.append('open')\n"
      "    except OSError as e:\n"
      "        out.append('refused')\n"
      "print(' '.join(out), flush=True)\n";
  expect_lines({python.executable, "-c", probe}, "open open open", "refused refused open", python);
}

TEST_F(Sandbox, PythonRunsConfinedWithItsOwnLibraries) {
  if (!sandbox_support().files()) GTEST_SKIP() << sandbox_support().summary();
  PythonLayout python = python_layout(choose_python("numpy"));
  if (python.read.empty()) GTEST_SKIP() << "no Python with numpy";
  fs::path secret = m_secret.path() / "reference.bin";
  std::string probe = "import json, numpy\ntry:\n    open('" + secret.string() +
                      "').read(); print('read', flush=True)\n"
                      "except PermissionError:\n    print('denied', flush=True)\n";
  expect_lines({python.executable, "-c", probe}, "read", "denied", python);
}

// A virtual environment's interpreter is a link to the system's: started by its real path, it
// would not be that environment (no pyvenv.cfg beside it, none of its packages), as happened
// on the GPU machine, whose torch lives in a venv.
TEST_F(Sandbox, AVirtualEnvironmentStaysItselfWhenConfined) {
  if (!sandbox_support().files()) GTEST_SKIP() << sandbox_support().summary();
  std::string base = choose_python("venv");
  fs::path venv = m_room.path() / "venv";
  SystemCommandRunner runner;
  if (!runner.run({base, "-m", "venv", "--without-pip", venv.string()}, 60s).ok())
    GTEST_SKIP() << base << " cannot make a virtual environment";
  PythonLayout python = python_layout((venv / "bin" / "python3").string());
  EXPECT_EQ(python.executable, (venv / "bin" / "python3").string());
  PreparedSandbox sandbox(policy(python));
  std::vector<std::string> argv{python.executable, "-c",
                                "import sys; print(sys.prefix, flush=True)"};
  EXPECT_EQ(first_line(argv, m_room.path() / "log", &sandbox), venv.string());
}

}  // namespace
}  // namespace kopt
