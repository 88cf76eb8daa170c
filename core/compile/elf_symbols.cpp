#include "core/compile/elf_symbols.h"

#include <cxxabi.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace kwb {

namespace {

// Whether [offset, offset + length) lies inside an image of imageSize bytes (no overflow).
bool inBounds(std::uint64_t offset, std::uint64_t length, std::uint64_t imageSize) {
  return offset <= imageSize && length <= imageSize - offset;
}

template <typename T>
bool readAt(std::string_view image, std::uint64_t offset, T &out) {
  if (!inBounds(offset, sizeof(T), image.size())) return false;
  std::memcpy(&out, image.data() + offset, sizeof(T));
  return true;
}

// A NUL-terminated name inside a string table that lies at [tableOffset, tableOffset + tableSize).
std::optional<std::string> nameAt(std::string_view image, std::uint64_t tableOffset, std::uint64_t tableSize,
                                  std::uint32_t index) {
  if (index >= tableSize || !inBounds(tableOffset, tableSize, image.size())) return std::nullopt;
  const std::uint64_t start = tableOffset + index;
  const std::uint64_t end = tableOffset + tableSize;
  const char *begin = image.data() + start;
  const void *nul = std::memchr(begin, '\0', end - start);
  if (!nul) return std::nullopt;
  return std::string(begin, static_cast<const char *>(nul));
}

bool fail(std::string *error, const std::string &why) {
  if (error) *error = why;
  return false;
}

bool readSymbolTable(std::string_view image, const std::vector<Elf64_Shdr> &headers, const Elf64_Shdr &table,
                     std::vector<ElfSymbol> &out, std::string *error) {
  if (table.sh_entsize != sizeof(Elf64_Sym)) return fail(error, "symbol table with an unexpected entry size");
  if (table.sh_link >= headers.size()) return fail(error, "symbol table linked to a missing string table");
  const Elf64_Shdr &strings = headers[table.sh_link];
  if (!inBounds(strings.sh_offset, strings.sh_size, image.size()))
    return fail(error, "string table beyond the end of the file");
  if (!inBounds(table.sh_offset, table.sh_size, image.size()))
    return fail(error, "symbol table beyond the end of the file");
  const std::uint64_t count = table.sh_size / sizeof(Elf64_Sym);
  out.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    Elf64_Sym sym;
    if (!readAt(image, table.sh_offset + i * sizeof(Elf64_Sym), sym)) return fail(error, "truncated symbol table");
    auto name = nameAt(image, strings.sh_offset, strings.sh_size, sym.st_name);
    if (!name) return fail(error, "symbol name outside its string table");
    out.push_back(ElfSymbol{.name = std::move(*name),
                            .type = static_cast<unsigned char>(ELF64_ST_TYPE(sym.st_info)),
                            .binding = static_cast<unsigned char>(ELF64_ST_BIND(sym.st_info)),
                            .other = sym.st_other,
                            .defined = sym.st_shndx != SHN_UNDEF,
                            .size = sym.st_size});
  }
  return true;
}

}  // namespace

std::optional<ElfContents> readElf(std::string_view image, std::string *error) {
  Elf64_Ehdr header;
  if (!readAt(image, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    fail(error, "not an ELF file");
    return std::nullopt;
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    fail(error, "not a 64-bit little-endian ELF file");
    return std::nullopt;
  }
  if (header.e_shnum == 0 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    fail(error, "ELF file without a usable section header table");
    return std::nullopt;
  }
  if (!inBounds(header.e_shoff, std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr), image.size())) {
    fail(error, "section header table beyond the end of the file");
    return std::nullopt;
  }
  std::vector<Elf64_Shdr> headers(header.e_shnum);
  for (std::size_t i = 0; i < headers.size(); ++i)
    if (!readAt(image, header.e_shoff + i * sizeof(Elf64_Shdr), headers[i])) {
      fail(error, "section header table beyond the end of the file");
      return std::nullopt;
    }
  if (header.e_shstrndx >= headers.size()) {
    fail(error, "section name table index out of range");
    return std::nullopt;
  }
  const Elf64_Shdr &names = headers[header.e_shstrndx];

  ElfContents contents;
  contents.machine = header.e_machine;
  for (const auto &h : headers) {
    auto name = nameAt(image, names.sh_offset, names.sh_size, h.sh_name);
    if (!name) {
      fail(error, "section name outside the section name table");
      return std::nullopt;
    }
    contents.sections.push_back(ElfSection{.name = std::move(*name), .type = h.sh_type, .size = h.sh_size});
  }
  for (const auto &h : headers) {
    if (h.sh_type == SHT_SYMTAB && !readSymbolTable(image, headers, h, contents.symbols, error)) return std::nullopt;
    if (h.sh_type == SHT_DYNSYM && !readSymbolTable(image, headers, h, contents.dynamicSymbols, error))
      return std::nullopt;
  }
  return contents;
}

std::vector<std::string> cubinKernelNames(const ElfContents &cubin) {
  std::vector<std::string> names;
  for (const auto &s : cubin.symbols)
    if (s.type == STT_FUNC && s.defined && (s.other & kCudaEntryFlag) != 0) names.push_back(s.name);
  return names;
}

bool exportsFunction(const ElfContents &library, std::string_view name) {
  for (const auto &s : library.dynamicSymbols)
    if (s.name == name && s.defined && s.type == STT_FUNC && (s.binding == STB_GLOBAL || s.binding == STB_WEAK))
      return true;
  return false;
}

std::string demangledName(const std::string &symbol) {
  if (symbol.rfind("_Z", 0) != 0) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> text(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status),
                                               std::free);
  return status == 0 && text ? std::string(text.get()) : std::string();
}

std::string unqualifiedName(const std::string &demangled) {
  std::string name = demangled.substr(0, demangled.find('('));
  if (const auto scope = name.rfind("::"); scope != std::string::npos) name = name.substr(scope + 2);
  return name;
}

std::optional<std::uint64_t> sectionSize(const ElfContents &elf, std::string_view name) {
  for (const auto &s : elf.sections)
    if (s.name == name) return s.size;
  return std::nullopt;
}

}  // namespace kwb
