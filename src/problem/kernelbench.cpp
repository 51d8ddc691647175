#include "kopt/problem/kernelbench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "kernelbench_text.hpp"
#include "kopt/problem/kernelbench_cost.hpp"
#include "kopt/problem/kernelbench_shape_namer.hpp"

namespace kopt {
using nlohmann::json;

namespace {

// Readable numbers for inits: four significant digits.
std::string number(double v) {
  std::string s = fmt::format("{:.4g}", v);
  if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";
  return s;
}

std::string stats_comment(const json& st) {
  if (st.empty()) return "";
  return fmt::format("min {}, max {}, mean {}, std {}", number(st.at("min")), number(st.at("max")),
                     number(st.at("mean")), number(st.at("std")));
}

std::string unique_name(std::string n, std::set<std::string>& taken) {
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) n = "t_" + n;
  std::string out = n;
  for (int i = 2; taken.count(out); ++i) out = n + "_" + std::to_string(i);
  taken.insert(out);
  return out;
}

}  // namespace

// An init like get_inputs()' own draws: integers as a randint over the seen range, constant
// tensors as constants, a flat spread (nn.init's uniform) as uniform, non-negative data as a
// uniform over its bulk, the rest as a normal with the seen mean and spread.
std::string init_from_stats(const json& st, const std::string& dtype) {
  if (st.empty()) return "";
  double lo = st.at("min"), hi = st.at("max"), mean = st.at("mean"), sd = st.at("std");
  if (dtype[0] == 'i' || dtype[0] == 'u')
    return fmt::format("{{ kind = \"randint\", low = {}, high = {} }}",
                       static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi) + 1);
  if (sd == 0) return fmt::format("{{ kind = \"constant\", value = {} }}", number(mean));
  if ((hi - lo) / sd < 4.0)
    return fmt::format("{{ kind = \"uniform\", low = {}, high = {} }}", number(lo), number(hi));
  if (lo >= 0) {
    double top = std::min(hi, mean + 4 * sd);
    return fmt::format("{{ kind = \"uniform\", low = {}, high = {} }}", number(lo),
                       number(top > lo ? top : hi));
  }
  return fmt::format("{{ kind = \"normal\", mean = {}, std = {} }}", number(mean), number(sd));
}

std::string kernelbench_import_stamp() {
  return fmt::format("# kopt import format {} (a batch imports again what an earlier kopt wrote)",
                     k_kernelbench_import_format);
}

bool kernelbench_import_current(const std::string& toml_text) {
  return toml_text.find("\n" + kernelbench_import_stamp() + "\n") != std::string::npos;
}

std::string model_new_kernel_toml(const std::string& name, const std::string& source) {
  return "[[kernels]]\nname = \"" + name + "\"\nsource = \"" + source +
         "\"\nentry = \"run_kernel\"\n";
}

Expected<ImportedProblem> problem_from_kernelbench(const json& facts,
                                                   const std::string& file_name) {
  if (facts.contains("error"))
    return Unexpected(bad_input(facts.at("error").get<std::string>(), file_name));
  ImportedProblem out;
  std::string stem = std::filesystem::path(file_name).stem().string();
  out.name = stem;
  try {
    std::set<std::string> taken;
    kernelbench_text::ImportedTensors it;
    auto& forward = it.forward;
    auto& tensors = it.tensors;
    auto& parameters = it.parameters;
    auto& bools = it.bools;
    auto& outputs = it.outputs;
    for (const auto& in : facts.at("inputs"))
      if (in.at("tensor")) taken.insert(in.at("name").get<std::string>());
    ShapeNamer namer(facts.at("globals"), taken);
    taken.clear();
    // `weight`: one of the model's parameters or buffers (loaded into it before each call).
    auto add = [&](const std::string& wanted, const json& t, const std::string& role,
                   const std::string& origin, bool weight = false) -> Expected<std::string> {
      std::string dtype = t.at("dtype");
      // A bool argument of forward (a mask) is a u8 tensor of 0s and 1s to kopt, handed to
      // forward as bool (BOOL_INPUTS); a bool result or weight has no such reading.
      bool as_bool = dtype == "bool" && role == "input" && !weight;
      if (dtype == "bool" && !as_bool)
        return Unexpected(bad_input("the " + origin + " '" + wanted +
                                        "' is a bool tensor, which kopt has no dtype for (only "
                                        "forward's arguments may be bool: kopt draws them as u8)",
                                    file_name, 0, wanted));
      if (as_bool) dtype = "u8";
      static const std::set<std::string> known = {"f64", "f32", "f16", "bf16", "i64",
                                                  "i32", "i16", "i8",  "u8"};
      if (!known.count(dtype))
        return Unexpected(bad_input(
            "the " + origin + " '" + wanted + "' has dtype " + dtype + ", which kopt has not",
            file_name, 0, wanted));
      kernelbench_text::TensorOut o;
      o.name = unique_name(wanted, taken);
      o.dtype = dtype;
      o.role = role;
      std::set<std::string> in_tensor;
      Extents s = t.at("shape").get<Extents>();
      if (s.empty()) s.push_back(1);  // a 0-d result (a loss) is one element
      for (std::size_t i = 0; i < s.size(); ++i)
        o.shape.push_back(namer.axis(o.name, i, s[i], in_tensor));
      namer.remember(s, o.shape);
      const json stats = t.value("stats", json::object());
      if (weight && !stats.empty() && stats.at("std") == 0 && dtype[0] != 'i' && dtype[0] != 'u') {
        // nn's constant inits (a norm's weight 1, bias 0): kopt draws around that value, so
        // that a kernel that ignores the tensor fails its check.
        o.init =
            fmt::format("{{ kind = \"normal\", mean = {}, std = 0.1 }}", number(stats.at("mean")));
        o.comment = origin + "; the model sets it to " + number(stats.at("mean")) +
                    ", kopt draws around that so that a kernel must use it";
      } else if (as_bool) {
        o.init = "{ kind = \"randint\", low = 0, high = 2 }";
        o.comment = origin + "; a bool tensor, drawn as bytes 0 and 1 and given to forward as bool";
        bools.push_back(o.name);
      } else if (role == "input") {
        o.init = init_from_stats(stats, dtype);
        std::string st = stats_comment(stats);
        o.comment = origin + (st.empty() ? "" : "; it drew " + st);
      } else {
        o.comment = origin;
      }
      tensors.push_back(o);
      return o.name;
    };
    for (const auto& in : facts.at("inputs")) {
      if (!in.at("tensor")) {
        forward.emplace_back("constant", in.at("value").get<std::string>());
        out.notes.push_back("forward's argument " + in.at("name").get<std::string>() +
                            " is the constant " + in.at("value").get<std::string>() +
                            " from get_inputs(); ref.py passes it as it is");
        continue;
      }
      auto n = add(in.at("name"), in, "input",
                   "get_inputs(): forward's argument " + in.at("name").get<std::string>());
      if (!n) return Unexpected(n.error());
      forward.emplace_back("tensor", *n);
    }
    for (const auto& p : facts.at("parameters")) {
      std::string model_name = p.at("name");
      auto n = add(model_name, p, "input",
                   "the model's " + p.at("kind").get<std::string>() + " " + model_name, true);
      if (!n) return Unexpected(n.error());
      parameters.emplace_back(model_name, *n);
    }
    const json& outs = facts.at("outputs");
    for (std::size_t i = 0; i < outs.size(); ++i) {
      auto n = add(outs.size() == 1 ? "out" : "out" + std::to_string(i), outs[i], "output",
                   outs.size() == 1 ? "forward's result" : fmt::format("forward's result {}", i));
      if (!n) return Unexpected(n.error());
      outputs.push_back(*n);
    }
    if (outputs.empty())
      return Unexpected(bad_input("Model.forward returned no tensor", file_name));

    auto derived = kernelbench_cost(facts.at("ops"), namer);
    if (!derived) return Unexpected(derived.error());
    const KernelbenchCost& cost = *derived;
    if (!cost.unknown_ops.empty()) {
      std::string ops;
      for (const auto& o : cost.unknown_ops) ops += (ops.empty() ? "" : ", ") + o;
      out.notes.push_back("flops not derived: kopt has no formula for " + ops +
                          "; write [cost] flops by hand");
    }
    out.notes.insert(out.notes.end(), namer.notes.begin(), namer.notes.end());

    namespace text = kernelbench_text;
    out.kopt_toml = text::kopt_toml(file_name, facts, it, cost, namer, out.notes);
    out.ref_py = text::ref_py(file_name, it);
    out.model_new_adapter = text::model_new_adapter(file_name, facts, it);
  } catch (const json::exception& e) {
    return Unexpected(internal_error(
        std::string("the KernelBench import script's facts are malformed: ") + e.what()));
  }
  return out;
}

}  // namespace kopt
