#pragma once
// A file compiled into kopt (CMake's kopt_embed_files): its name and its content. A table of
// them ends with {nullptr, nullptr}.

namespace kopt {

struct EmbeddedFile {
  const char* name;
  const char* text;
};

}  // namespace kopt
