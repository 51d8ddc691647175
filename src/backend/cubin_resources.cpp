#include "kopt/backend/cubin_resources.hpp"

#include <cstring>
#include <optional>

namespace kopt {
namespace {

constexpr std::uint8_t k_eifmt_sval = 0x04;
constexpr std::uint8_t k_eiattr_frame_size = 0x11;
constexpr std::uint8_t k_eiattr_regcount = 0x2f;
constexpr std::uint32_t k_sht_symtab = 2;
constexpr std::uint32_t k_sht_nobits = 8;

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint64_t entsize = 0;
};

class Elf {
 public:
  explicit Elf(std::span<const std::byte> data) : m_data(data) {}

  template <class T>
  std::optional<T> read(std::uint64_t at) const {
    if (at + sizeof(T) > m_data.size()) return std::nullopt;
    T v;
    std::memcpy(&v, m_data.data() + at, sizeof(T));
    return v;
  }

  std::string string_at(std::uint64_t at) const {
    std::string s;
    while (at < m_data.size() && m_data[at] != std::byte{0}) s += static_cast<char>(m_data[at++]);
    return s;
  }

  Expected<std::vector<Section>> sections() const {
    static const unsigned char magic[4] = {0x7f, 'E', 'L', 'F'};
    if (m_data.size() < 64 || std::memcmp(m_data.data(), magic, 4) != 0 ||
        *read<std::uint8_t>(4) != 2)
      return Unexpected(internal_error("not a 64-bit ELF cubin"));
    std::uint64_t shoff = *read<std::uint64_t>(0x28);
    std::uint16_t shentsize = *read<std::uint16_t>(0x3a);
    std::uint16_t shnum = *read<std::uint16_t>(0x3c);
    std::uint16_t shstrndx = *read<std::uint16_t>(0x3e);
    std::vector<Section> out(shnum);
    std::vector<std::uint32_t> names(shnum);
    for (std::uint16_t i = 0; i < shnum; ++i) {
      std::uint64_t h = shoff + std::uint64_t{i} * shentsize;
      auto name = read<std::uint32_t>(h);
      auto type = read<std::uint32_t>(h + 4);
      auto offset = read<std::uint64_t>(h + 0x18);
      auto size = read<std::uint64_t>(h + 0x20);
      auto link = read<std::uint32_t>(h + 0x28);
      auto entsize = read<std::uint64_t>(h + 0x38);
      if (!name || !type || !offset || !size || !link || !entsize)
        return Unexpected(internal_error("truncated ELF section header"));
      names[i] = *name;
      out[i] = Section{{}, *type, *offset, *size, *link, *entsize};
      if (*type != k_sht_nobits && *offset + *size > m_data.size())
        return Unexpected(internal_error("ELF section out of bounds"));
    }
    if (shstrndx >= shnum) return Unexpected(internal_error("bad ELF section name table"));
    for (std::uint16_t i = 0; i < shnum; ++i)
      out[i].name = string_at(out[shstrndx].offset + names[i]);
    return out;
  }

 private:
  std::span<const std::byte> m_data;
};

}  // namespace

Expected<ResourceUsage> cubin_resources(std::span<const std::byte> elf_bytes,
                                        const std::string& function) {
  Elf elf(elf_bytes);
  auto sections = elf.sections();
  if (!sections) return Unexpected(sections.error());
  std::optional<std::uint32_t> symbol;
  for (const Section& s : *sections) {
    if (s.type != k_sht_symtab || s.entsize < 24 || s.link >= sections->size()) continue;
    const Section& strtab = (*sections)[s.link];
    for (std::uint64_t i = 0; i < s.size / s.entsize; ++i) {
      auto name = elf.read<std::uint32_t>(s.offset + i * s.entsize);
      if (name && elf.string_at(strtab.offset + *name) == function)
        symbol = static_cast<std::uint32_t>(i);
    }
  }
  if (!symbol) return Unexpected(internal_error("function '" + function + "' is not in the cubin"));

  ResourceUsage r;
  r.source = "cubin";
  r.local_bytes = 0;
  for (const Section& s : *sections) {
    if (s.name == ".nv.constant0." + function) r.const_bytes = static_cast<std::int64_t>(s.size);
    if (s.name != ".nv.info") continue;
    // Entries: format byte, attribute byte, 16-bit size; format 4 (SVAL) carries `size`
    // bytes; a per-function value is (symbol index u32, value u32).
    std::uint64_t at = s.offset, end = s.offset + s.size;
    while (at + 4 <= end) {
      std::uint8_t format = *elf.read<std::uint8_t>(at);
      std::uint8_t attribute = *elf.read<std::uint8_t>(at + 1);
      std::uint16_t size = *elf.read<std::uint16_t>(at + 2);
      at += 4;
      if (format != k_eifmt_sval) continue;
      if (size >= 8 && at + 8 <= end && *elf.read<std::uint32_t>(at) == *symbol) {
        std::uint32_t value = *elf.read<std::uint32_t>(at + 4);
        if (attribute == k_eiattr_regcount) r.registers = static_cast<int>(value);
        if (attribute == k_eiattr_frame_size) r.local_bytes = value;
      }
      at += size;
    }
  }
  if (r.registers < 0)
    return Unexpected(internal_error("no EIATTR_REGCOUNT for '" + function + "' in the cubin"));
  return r;
}

}  // namespace kopt
