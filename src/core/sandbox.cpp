#include "kopt/core/sandbox.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "kopt/core/process.hpp"

namespace kopt {
namespace fs = std::filesystem;

namespace {

// Landlock's system calls and structures, spelled out: their numbers are the same on every
// architecture, and the headers of older systems lack the newer access rights.
constexpr long k_sys_create_ruleset = 444;
constexpr long k_sys_add_rule = 445;
constexpr long k_sys_restrict_self = 446;
constexpr unsigned k_create_ruleset_version = 1U << 0;
constexpr int k_rule_path_beneath = 1;

constexpr std::uint64_t k_execute = 1ULL << 0, k_write_file = 1ULL << 1, k_read_file = 1ULL << 2,
                        k_read_dir = 1ULL << 3;
// Every right of ABI 1 (execute .. make_sym), then refer (ABI 2) and truncate (ABI 3). The
// device-ioctl right (ABI 5) is left unhandled: a GPU is driven by ioctls on /dev/nvidia*.
constexpr std::uint64_t k_abi1_rights = (1ULL << 13) - 1;
constexpr std::uint64_t k_refer = 1ULL << 13, k_truncate = 1ULL << 14;
// Rights that apply to a file (the others only to directories).
constexpr std::uint64_t k_file_rights = k_execute | k_write_file | k_read_file | k_truncate;

struct RulesetAttr {
  std::uint64_t handled_access_fs;
};
struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

std::uint64_t handled_rights(int abi) {
  if (abi <= 0) return 0;
  std::uint64_t r = k_abi1_rights;
  if (abi >= 2) r |= k_refer;
  if (abi >= 3) r |= k_truncate;
  return r;
}

SandboxSupport probe() {
  SandboxSupport s;
  long abi = ::syscall(k_sys_create_ruleset, nullptr, 0, k_create_ruleset_version);
  if (abi > 0) {
    s.landlock_abi = static_cast<int>(abi);
  } else {
    int e = errno;
    s.landlock_why = e == ENOSYS       ? "this kernel has no Landlock (before Linux 5.13)"
                     : e == EOPNOTSUPP ? "Landlock is built into this kernel but not enabled "
                                         "(add landlock to the lsm= boot parameter)"
                                       : std::string("Landlock refused: ") + std::strerror(e);
  }
#if defined(__x86_64__) || defined(__aarch64__)
  std::uint32_t action = SECCOMP_RET_ERRNO;
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0)
    s.seccomp = true;
  else
    s.seccomp_why = std::string("seccomp filters are not available: ") + std::strerror(errno);
#else
  s.seccomp_why = "kopt's seccomp filter is written for x86-64 and arm64 only";
#endif
  return s;
}

// The seccomp program: on this architecture, socket() of any family but AF_UNIX, and
// io_uring_setup (whose rings can open sockets without socket()), fail with EACCES; on x86-64
// the x32 system calls too (the same calls by other numbers). Everything else is allowed.
std::vector<sock_filter> network_filter() {
#if defined(__x86_64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_X86_64;
  constexpr std::uint32_t nr_socket = 41;
#elif defined(__aarch64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_AARCH64;
  constexpr std::uint32_t nr_socket = 198;
#else
  return {};
#endif
#if defined(__x86_64__) || defined(__aarch64__)
  constexpr std::uint32_t nr_io_uring_setup = 425;
  constexpr std::uint32_t deny = SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA);
  return {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),  // another ABI's calls: not ours to judge
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
#if defined(__x86_64__)
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 5, 0),  // x32
#else
        BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr_io_uring_setup, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr_socket, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0), BPF_STMT(BPF_RET | BPF_K, deny),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
#endif
}

}  // namespace

std::string SandboxSupport::summary() const {
  std::string files = landlock_abi > 0 ? "Landlock ABI " + std::to_string(landlock_abi) + " (files)"
                                       : "files not confined (" + landlock_why + ")";
  std::string net = seccomp ? "seccomp (network)" : "network not confined (" + seccomp_why + ")";
  return files + ", " + net;
}

const SandboxSupport& sandbox_support() {
  static const SandboxSupport s = probe();
  return s;
}

PreparedSandbox::PreparedSandbox(const SandboxPolicy& policy) {
  const SandboxSupport& support = sandbox_support();
  m_handled = handled_rights(support.landlock_abi);
  if (m_handled != 0) {
    for (const auto& p : policy.read)
      m_rules.push_back({p.string(), k_execute | k_read_file | k_read_dir});
    for (const auto& p : policy.read_write) m_rules.push_back({p.string(), m_handled});
  }
  if (policy.deny_network && support.seccomp) {
    static_assert(sizeof(sock_filter) == sizeof(std::uint64_t));
    for (const sock_filter& f : network_filter()) {
      std::uint64_t word;
      std::memcpy(&word, &f, sizeof word);
      m_filter.push_back(word);
    }
  }
}

int PreparedSandbox::apply() const noexcept {
  if (m_handled == 0 && m_filter.empty()) return 0;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (m_handled != 0) {
    RulesetAttr attr{m_handled};
    int ruleset = static_cast<int>(::syscall(k_sys_create_ruleset, &attr, sizeof attr, 0));
    if (ruleset < 0) return errno;
    for (const Rule& rule : m_rules) {
      int fd = ::open(rule.path.c_str(), O_PATH | O_CLOEXEC);
      if (fd < 0) continue;  // a path this machine does not have
      struct stat st {};
      std::uint64_t access = rule.access;
      if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= k_file_rights;
      PathBeneathAttr beneath{access & m_handled, fd};
      long added = ::syscall(k_sys_add_rule, ruleset, k_rule_path_beneath, &beneath, 0);
      int e = errno;
      ::close(fd);
      if (added != 0) {
        ::close(ruleset);
        return e;
      }
    }
    long restricted = ::syscall(k_sys_restrict_self, ruleset, 0);
    int e = errno;
    ::close(ruleset);
    if (restricted != 0) return e;
  }
  if (!m_filter.empty()) {
    sock_fprog prog{static_cast<unsigned short>(m_filter.size()),
                    reinterpret_cast<sock_filter*>(const_cast<std::uint64_t*>(m_filter.data()))};
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return errno;
  }
  return 0;
}

std::string PreparedSandbox::describe() const {
  const SandboxSupport& s = sandbox_support();
  std::string files =
      m_handled != 0
          ? "files confined by Landlock ABI " + std::to_string(s.landlock_abi)
          : "files NOT confined (" +
                (s.landlock_why.empty() ? std::string("not asked") : s.landlock_why) + ")";
  std::string net = !m_filter.empty()
                        ? "network refused by seccomp"
                        : "network NOT confined (" +
                              (s.seccomp_why.empty() ? std::string("not asked") : s.seccomp_why) +
                              ")";
  return files + ", " + net;
}

PythonLayout python_layout(const std::string& python) {
  static std::mutex mutex;
  static std::map<std::string, PythonLayout> known;
  std::lock_guard lock(mutex);
  if (auto k = known.find(python); k != known.end()) return k->second;
  const char* script =
      "import json, os, site, sys\n"
      "p = [x for x in sys.path if x] + [sys.prefix, sys.exec_prefix, sys.base_prefix,\n"
      "     os.path.dirname(os.path.realpath(sys.executable)), os.path.dirname(sys.executable)]\n"
      "try:\n    p += site.getsitepackages() + [site.getusersitepackages()]\n"
      "except Exception:\n    pass\n"
      "print(json.dumps({'executable': sys.executable,\n"
      "                  'read': sorted(set(os.path.realpath(x) for x in p))}))\n";
  SystemCommandRunner runner;
  CommandResult r = runner.run({python, "-c", script}, std::chrono::seconds(60));
  PythonLayout layout{python, {}};
  if (r.ok()) {
    try {
      auto j = nlohmann::json::parse(r.out);
      layout.executable = j.at("executable").get<std::string>();
      for (const auto& p : j.at("read")) layout.read.emplace_back(p.get<std::string>());
    } catch (const std::exception&) {
      layout = PythonLayout{python, {}};
    }
  }
  known[python] = layout;
  return layout;
}

void system_sandbox_paths(std::vector<fs::path>& read, std::vector<fs::path>& writable) {
  for (const char* p : {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc",
                        "/opt", "/proc", "/sys", "/run/nvidia-persistenced"})
    read.emplace_back(p);
  // /proc/self/task: the CUDA driver names its threads (writes .../task/TID/comm) and cuInit
  // fails with "OS call failed" (304) when it cannot; the process's own entries, opened in the
  // child, so they are the candidate's and nobody else's.
  for (const char* p :
       {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/proc/self/task"})
    writable.emplace_back(p);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("nvidia", 0) == 0 || name == "dxg") writable.push_back(e.path());
  }
}

}  // namespace kopt
