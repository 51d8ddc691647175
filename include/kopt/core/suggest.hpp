#pragma once
// "Did you mean": the known name closest to a mistyped one, for the messages that refuse a
// command, a flag, a field of kopt.toml, a dim or a kernel.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kopt {

// Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The known name nearest `word`, when it is near enough to be a typo of it (at most a third of
// its letters changed, at least one), or one that starts with it; nullopt otherwise.
std::optional<std::string> closest_name(std::string_view word,
                                        const std::vector<std::string>& known);

// " (did you mean 'shape'?)", or "" when nothing is near.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& known);

}  // namespace kopt
