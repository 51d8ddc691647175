#pragma once
// The host copies an OutputVerifier compares with (output_verifier.cpp, _compare.cpp): a job
// tensor's bytes as a HostTensor, and the files it reads (the reference's outputs, the seeds'
// inputs), each read once per worker.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kopt/backend/run_job.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt::verifier_files {

HostTensor host_tensor(const JobTensor& t, std::vector<std::byte> data);

// The bytes of `file` as tensor t (the reference's output, or an input), of t's size; null when
// it is missing or of another size. Every candidate of a batch reads the same files: each is
// read once per worker (keyed by path, size and modification time; up to 1 GiB kept, the
// oldest dropped).
std::shared_ptr<const HostTensor> tensor_file(const JobTensor& t,
                                              const std::filesystem::path& file);
// What names a file's content: its path, size and modification time ("" where it is missing).
std::string file_identity(const std::filesystem::path& file);

}  // namespace kopt::verifier_files
