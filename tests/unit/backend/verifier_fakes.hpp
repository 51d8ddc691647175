#pragma once
// A fake device for the verification of timed launches (output_verifier.hpp): one byte vector
// per job tensor, read, written and hashed (measure/keyed_hash.hpp) as a backend's timer does.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "kopt/backend/output_verifier.hpp"
#include "kopt/core/fs.hpp"
#include "kopt/measure/compare.hpp"
#include "kopt/measure/keyed_hash.hpp"

namespace kopt::fakes {

inline RunJob job_with(std::vector<JobTensor> tensors) {
  RunJob job;
  job.label = "k";
  job.tensors = std::move(tensors);
  return job;
}

inline JobTensor tensor(const char* name, Role role, std::size_t numel, DType dtype = DType::f32) {
  JobTensor t;
  t.name = name;
  t.role = role;
  t.dtype = dtype;
  t.bytes = numel * dtype_size(dtype);
  t.shape = {static_cast<std::int64_t>(numel)};
  return t;
}

// Eight f32 elements of value v, as a tensor file holds them.
inline std::vector<std::byte> floats(float v) {
  std::vector<std::byte> b(8 * 4);
  for (std::size_t e = 0; e < 8; ++e) std::memcpy(b.data() + 4 * e, &v, 4);
  return b;
}

// A file of eight f32 elements of value v in `dir`, for a job tensor to name.
inline std::filesystem::path float_file(const TempDir& dir, const char* name, float v) {
  std::filesystem::path f = dir.path() / name;
  if (!write_file_atomic(f, floats(v))) ADD_FAILURE() << "cannot write " << f;
  return f;
}

// Device memory of a fake device: one byte vector per job tensor.
struct FakeDevice {
  const RunJob* job = nullptr;
  std::vector<std::vector<std::byte>> buffers;
  int reads = 0;
  explicit FakeDevice(const RunJob& j) : job(&j) {
    for (const auto& t : j.tensors) buffers.emplace_back(t.bytes);
  }
  void fill(std::size_t i, float v) {
    for (std::size_t e = 0; e < buffers[i].size() / 4; ++e)
      std::memcpy(buffers[i].data() + 4 * e, &v, 4);
  }
  void poison(std::size_t i) {
    for (std::size_t e = 0; e < buffers[i].size() / 4; ++e)
      std::memcpy(buffers[i].data() + 4 * e, "\x00\x00\xc0\x7f", 4);
  }
  WriteTensor writer() {
    return [this](std::size_t i, const std::vector<std::byte>& host) -> std::optional<RunResult> {
      buffers[i] = host;
      return std::nullopt;
    };
  }
  int hashes = 0;
  // The keyed hash where the tensor is, as the CUDA timer's kernel computes it.
  HashTensor hasher() {
    return
        [this](std::size_t i, std::uint64_t key, std::uint64_t& out) -> std::optional<RunResult> {
          ++hashes;
          out = keyed_hash(buffers[i], key);
          return std::nullopt;
        };
  }
  // The comparison where the tensors are (DeviceComparer), by the checker's rule (the device
  // kernel is held to it in output_compare_kernel_test.cpp): golden copies kept in `kept`, the
  // reference's outputs counted as they are copied in once; `room` false: no copy fits beside
  // the job's tensors, `room_for_expected` false: no reference output does.
  std::map<std::size_t, std::vector<std::byte>> kept;
  std::map<std::string, int> uploaded;                      // by the reference's file
  std::map<std::string, int> preloaded;                     // the same, before the samples
  std::map<std::string, std::vector<std::byte>> on_device;  // preloaded: what holds() finds
  int without_host = 0;  // compares given no host copy of the reference's outputs
  int compares = 0;
  bool room = true, room_for_expected = true;
  DeviceComparer comparer() {
    DeviceComparer d;
    d.keep = [this](std::size_t i, bool& ok) -> std::optional<RunResult> {
      ok = room;
      if (room) kept[i] = buffers[i];
      return std::nullopt;
    };
    d.compare = [this](std::size_t i, const ExpectedOutputs* expected, Tolerance tol,
                       std::optional<CompareResult>& out) -> std::optional<RunResult> {
      const JobTensor& t = job->tensors[i];
      HostTensor against{t.name, t.dtype, t.shape, {}};
      if (expected) {
        if (!room_for_expected) return std::nullopt;
        ++uploaded[expected->key];
        if (!expected->host) ++without_host;
        against.data = expected->host ? expected->host->data : on_device.at(expected->key);
      } else {
        against.data = kept.at(i);
      }
      ++compares;
      out = compare_tensors(HostTensor{t.name, t.dtype, t.shape, buffers[i]}, against, tol, 1);
      return std::nullopt;
    };
    d.preload = [this](const ExpectedOutputs& expected) -> std::optional<RunResult> {
      ++preloaded[expected.key];
      on_device[expected.key] = expected.host->data;
      return std::nullopt;
    };
    d.holds = [this](const std::string& key) { return on_device.count(key) > 0; };
    return d;
  }
  ReadTensor reader() {
    return [this](std::size_t i, std::vector<std::byte>& host) -> std::optional<RunResult> {
      ++reads;
      host = buffers[i];
      return std::nullopt;
    };
  }
};

}  // namespace kopt::fakes
