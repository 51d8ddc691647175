// toml++'s implementation, compiled once (every other file includes it with
// TOML_HEADER_ONLY=0, which CMakeLists.txt sets for the whole tree).
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
