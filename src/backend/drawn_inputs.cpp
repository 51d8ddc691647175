#include "kopt/backend/drawn_inputs.hpp"

#include <stdexcept>

#include "kopt/core/fs.hpp"
#include "kopt/core/hash.hpp"
#include "kopt/problem/tensor_data.hpp"

namespace kopt {
namespace fs = std::filesystem;
using nlohmann::json;

json draw_json(const std::optional<DrawRecipe>& r) {
  if (!r) return nullptr;
  return {{"kind", init_kind_name(r->kind)}, {"a", r->a}, {"b", r->b}, {"key", r->key}};
}

std::optional<DrawRecipe> draw_from(const json& j, DType dtype) {
  if (j.is_null()) return std::nullopt;
  DrawRecipe r;
  r.dtype = dtype;
  std::string kind = j.at("kind").get<std::string>();
  std::optional<InitKind> known = parse_init_kind(kind);
  if (!known) throw std::invalid_argument("unknown init kind " + kind);
  r.kind = *known;
  r.a = j.at("a").get<double>();
  r.b = j.at("b").get<double>();
  r.key = j.at("key").get<std::uint64_t>();
  return r;
}

Expected<std::string> materialize_input(const JobTensor& t) {
  if (!t.draw || t.input_path.empty()) return std::string();
  fs::path sum = t.input_path;
  sum += ".sum";
  std::error_code ec;
  if (fs::is_regular_file(t.input_path, ec) && fs::file_size(t.input_path, ec) == t.bytes) {
    if (auto known = read_text_file(sum); known && !known->empty()) return *known;
    if (t.checksum != draw_token(*t.draw)) return t.checksum;  // written with its checksum
  }
  HostTensor h =
      draw_tensor(*t.draw, t.shape.empty() ? std::vector<std::int64_t>{static_cast<std::int64_t>(
                                                 t.bytes / dtype_size(t.dtype))}
                                           : t.shape);
  if (h.bytes() != t.bytes)
    return Unexpected(internal_error("the recipe of " + t.name + " makes " +
                                     std::to_string(h.bytes()) + " bytes, not " +
                                     std::to_string(t.bytes)));
  std::string checksum = hex64(checksum64(h.data));
  for (auto w : {write_file_atomic(t.input_path, h.data), write_text_atomic(sum, checksum)})
    if (!w)
      return Unexpected(environment_error("cannot write the drawn input " + t.name + " (" +
                                          t.input_path.string() + "): " + w.error().message));
  return checksum;
}

Expected<void> DrawnFiles::prepare(RunJob& job) {
  for (auto& t : job.tensors) {
    if (!t.draw || t.role == Role::output) continue;
    auto real = materialize_input(t);
    if (!real) return Unexpected(real.error());
    if (t.checksum == draw_token(*t.draw)) {
      m_real_token[t.name] = {*real, t.checksum};
      t.checksum = *real;
    }
    if (t.secret_draw && !t.secret_input_path.empty()) {  // a timer's secret-seed samples
      JobTensor secret = t;
      secret.draw = t.secret_draw;
      secret.input_path = t.secret_input_path;
      secret.checksum.clear();
      if (auto m = materialize_input(secret); !m) return Unexpected(m.error());
    }
  }
  return {};
}

void DrawnFiles::restore(RunResult& r) const {
  for (const auto& [name, swap] : m_real_token)
    if (auto c = r.input_checksums.find(name);
        c != r.input_checksums.end() && c->second == swap.first)
      c->second = swap.second;
}

}  // namespace kopt
