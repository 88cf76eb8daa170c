#pragma once
// A small reader for 64-bit little-endian ELF images: section sizes and the static and dynamic
// symbol tables. Enough to list the kernels of a CUBIN and to check that a host-launcher shared
// library exports kwb_launch, without loading (dlopen) untrusted code.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kwb {

struct ElfSection {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t size = 0;
};

struct ElfSymbol {
  std::string name;
  unsigned char type = 0;     // STT_FUNC, STT_OBJECT, ...
  unsigned char binding = 0;  // STB_GLOBAL, STB_WEAK, STB_LOCAL
  unsigned char other = 0;    // st_other (visibility; CUDA marks kernels with kCudaEntryFlag)
  bool defined = false;       // st_shndx != SHN_UNDEF
  std::uint64_t size = 0;
};

struct ElfContents {
  std::uint16_t machine = 0;  // EM_CUDA (190) for a CUBIN, EM_X86_64 (62) for a host library
  std::vector<ElfSection> sections;
  std::vector<ElfSymbol> symbols;         // .symtab
  std::vector<ElfSymbol> dynamicSymbols;  // .dynsym
};

// st_other bit ptxas sets on entry functions (__global__ kernels) in a CUBIN.
inline constexpr unsigned char kCudaEntryFlag = 0x10;

// Parses `image`. Returns nothing, with the reason in *error, when it is not a well-formed
// 64-bit little-endian ELF file (every offset is bounds-checked).
std::optional<ElfContents> readElf(std::string_view image, std::string *error = nullptr);

// The kernels (entry functions) a CUBIN defines, by symbol name, in table order.
std::vector<std::string> cubinKernelNames(const ElfContents &cubin);

// Whether the dynamic symbol table holds a defined, global or weak function called `name`.
bool exportsFunction(const ElfContents &library, std::string_view name);

// "_Z7softmaxPKfPfxx" -> "softmax(float const*, float*, long long, long long)"; empty when the
// symbol is not a C++ (Itanium ABI) mangled name.
std::string demangledName(const std::string &symbol);

// "ns::softmax(float*)" -> "softmax"
std::string unqualifiedName(const std::string &demangled);

// The size of the section called `name`, or nothing when there is none.
std::optional<std::uint64_t> sectionSize(const ElfContents &elf, std::string_view name);

}  // namespace kwb
