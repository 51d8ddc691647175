#pragma once
// The one place kopt chooses a Python interpreter: for the Python worker (torch), for Ray, for
// finding a package of headers (CUTLASS), and what `kopt env` reports.
#include <filesystem>
#include <string>

namespace kopt {

// $KOPT_PYTHON when set; else the first of python3 on PATH, /usr/bin/python3 and python that
// can import `module` (with `extra_path` first on its sys.path), named by its full path so every
// message says which Python it was; else "python3", whose errors then say what is missing.
// Chosen once per (module, extra_path) in a process.
std::string choose_python(const std::string& module, const std::filesystem::path& extra_path = {});

}  // namespace kopt
