#pragma once
// Confinement for code kopt does not trust (docs/honesty.md, "a sandbox for candidates"): a
// process that may read what it needs to run (the system, its Python, its own inputs), write
// only its scratch directory, and open no socket but a local one. Files by Landlock, sockets by
// seccomp, each where the kernel allows it; what the machine does not allow is said (`kopt env`,
// every report), never silently skipped.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kopt {

// What this machine's kernel allows, probed once.
struct SandboxSupport {
  int landlock_abi = 0;      // 0: no Landlock
  std::string landlock_why;  // why not, when 0
  bool seccomp = false;      // seccomp filters (the network rule)
  std::string seccomp_why;   // why not
  bool files() const { return landlock_abi > 0; }
  bool network() const { return seccomp; }
  // One line: "Landlock ABI 7 (files) and seccomp (network)", or what is missing and why.
  std::string summary() const;
};
const SandboxSupport& sandbox_support();

struct SandboxPolicy {
  std::vector<std::filesystem::path> read;        // read and execute, beneath each
  std::vector<std::filesystem::path> read_write;  // and create, write, remove beneath each
  bool deny_network = true;                       // sockets other than AF_UNIX refused
};

// A policy turned into what a forked child needs: built in the parent (it allocates), applied
// in the child between fork and exec, where only system calls are safe. The rules then hold for
// the program exec'd and everything it starts.
class PreparedSandbox {
 public:
  explicit PreparedSandbox(const SandboxPolicy& policy);
  // In the child: 0, or the errno of the step that failed (the child must not run then).
  int apply() const noexcept;
  // What the rules enforce on this machine (SandboxSupport::summary of the parts used).
  std::string describe() const;

 private:
  struct Rule {
    std::string path;
    std::uint64_t access = 0;
  };
  std::vector<Rule> m_rules;
  std::uint64_t m_handled = 0;          // Landlock access rights handled (0: no Landlock)
  std::vector<std::uint64_t> m_filter;  // seccomp program (struct sock_filter, 8 bytes each)
};

// What a confined Python needs: the interpreter itself (`python` may be a launcher, such as
// pyenv's shims, that reads from places a confined process may not: the program it runs is
// started directly, as sys.executable names it, a virtual environment's link included, since
// the link is what makes Python read its pyvenv.cfg) and the directories it reads its standard
// library and packages from (sys.path, its prefixes, the user site). Asked of `python` once per
// process; `executable` is `python` and `read` empty when it cannot say.
struct PythonLayout {
  std::string executable;
  std::vector<std::filesystem::path> read;
};
PythonLayout python_layout(const std::string& python);

// The read-only system directories and device files any confined program is given: /usr, /lib*,
// /etc, /opt, /proc, /sys, and under /dev the null, random and GPU devices (never /dev/shm, where
// kopt's tensors may lie). `writable` gets the device files that are opened for writing.
void system_sandbox_paths(std::vector<std::filesystem::path>& read,
                          std::vector<std::filesystem::path>& writable);

}  // namespace kopt
