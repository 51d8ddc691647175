#pragma once
// Statuses are types: each is an `enum class` with one table of its text forms, used at the
// JSON and text edges only (a typo in a status is then a compile error, not a silent bug).
//
//   enum class Colour { red, green };
//   template <> struct EnumNames<Colour> {
//     static constexpr std::array<std::pair<Colour, std::string_view>, 2> table{
//         {{Colour::red, "red"}, {Colour::green, "green"}}};
//   };
//
// gives name_of(Colour::red) == "red", parse_enum<Colour>("green"), fmt::format("{}", c), and
// JSON both ways (an unknown text read from a file is an error that lists the known ones).
#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace kopt {

template <class E>
struct EnumNames;

template <class E>
concept NamedEnum = std::is_enum_v<E> && requires {
  EnumNames<E>::table;
};

template <NamedEnum E>
constexpr std::string_view name_of(E e) {
  for (const auto& [value, name] : EnumNames<E>::table)
    if (value == e) return name;
  return "?";
}

template <NamedEnum E>
constexpr std::optional<E> parse_enum(std::string_view text) {
  for (const auto& [value, name] : EnumNames<E>::table)
    if (name == text) return value;
  return std::nullopt;
}

// "ok, wrong, compile_failed": for messages that say what is known.
template <NamedEnum E>
std::string enum_names() {
  std::string out;
  for (const auto& [value, name] : EnumNames<E>::table)
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace kopt

namespace nlohmann {
template <kopt::NamedEnum E>
struct adl_serializer<E> {
  static void to_json(json& j, E e) { j = std::string(kopt::name_of(e)); }
  static void from_json(const json& j, E& e) {
    const auto& text = j.get_ref<const std::string&>();
    auto parsed = kopt::parse_enum<E>(text);
    if (!parsed)
      throw json::other_error::create(
          501, "unknown value '" + text + "' (known: " + kopt::enum_names<E>() + ")", &j);
    e = *parsed;
  }
};
}  // namespace nlohmann

template <kopt::NamedEnum E>
struct fmt::formatter<E, char> : fmt::formatter<std::string_view, char> {
  template <class Context>
  auto format(E e, Context& ctx) const {
    return fmt::formatter<std::string_view, char>::format(kopt::name_of(e), ctx);
  }
};
