#pragma once
// The task model: what a task folder's manifest (task.toml) describes.
// Filled by parseManifest(); see README.md "Task format" for the file itself.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/task/expression.h"

namespace kwb {

enum class DType { F64, F32, F16, BF16, I64, I32, I8, U8, Bool };
enum class TensorRole { In, Out, InOut };

std::string_view dtypeName(DType);
std::optional<DType> dtypeFromName(std::string_view);
std::size_t dtypeSize(DType);
bool dtypeIsFloating(DType);
std::string_view roleName(TensorRole);
std::optional<TensorRole> roleFromName(std::string_view);
// Every name, in table order (for messages).
std::vector<std::string_view> dtypeNames();
std::vector<std::string_view> roleNames();

// How an input tensor is filled. Every generator is deterministic given (seed, seedOffset).
struct Generator {
  enum class Kind { Uniform, Normal, RandInt, Arange, Constant };
  Kind kind = Kind::Uniform;
  double a = 0.0;  // uniform: low; normal: mean; randint: low (inclusive); arange: start; constant: value
  double b = 1.0;  // uniform: high; normal: std; randint: high (exclusive); arange: step
  std::uint64_t seedOffset = 0;
};
std::string_view generatorKindName(Generator::Kind);
std::optional<Generator::Kind> generatorKindFromName(std::string_view);
std::vector<std::string_view> generatorKindNames();  // in table order
// The manifest keys of a generator's two numbers: Generator::a is `first`, Generator::b is
// `second` (nullptr where the generator has one parameter: constant).
struct GeneratorParams {
  const char *first;
  const char *second;
};
GeneratorParams generatorParameterNames(Generator::Kind);
// Whether the generator draws real numbers (uniform, normal), so suits floating-point tensors only.
bool generatorDrawsReals(Generator::Kind);

// rtol/atol, or exact equality (required for integer and bool outputs).
struct Tolerance {
  bool exact = false;
  double rtol = 0.0;
  double atol = 0.0;
};

struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  TensorRole role = TensorRole::In;
  std::vector<Expression> shape;      // over the task's named sizes
  std::optional<Generator> init;      // required for in/inout
  // `init = [A, B, ...]`: B, ... (init is A). The seeds cycle through them (generatorForSeed), so
  // a task can mix typical values with the extremes its operator must survive.
  std::vector<Generator> moreInits;
  std::optional<Tolerance> tolerance; // required for out/inout
  int line = 0;                       // manifest line, for messages
};

// One assignment of every named size.
struct SizeConfig {
  std::string name;
  std::map<std::string, std::int64_t> values;
};

// A kernel launch over sizes and tunables. Args name tensors (passed as device pointers) and
// sizes (passed as 64-bit integers), in the kernel's parameter order.
struct Launch {
  std::string kernel;
  std::vector<Expression> grid;   // 1 to 3 dimensions
  std::vector<Expression> block;  // 1 to 3 dimensions
  Expression sharedBytes;         // dynamic shared memory, defaults to 0
  std::vector<std::string> args;
};

struct Reference {
  std::filesystem::path source;  // relative to the task folder
  Launch launch;
};

struct Tunable {
  std::string name;
  std::vector<std::int64_t> values;
};

// A declared constraint on sizes and tunables, `constraints = ["N % 128 == 0", "dim <= 32768"]`:
// two expressions and a comparison (== != < <= > >=). Every configuration (with the tunables'
// first values) must meet them; a tunable point or a --set value that does not is refused before
// anything is compiled, with a message naming the constraint.
struct Constraint {
  enum class Op { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };
  std::string text;  // as written
  Expression lhs, rhs;
  Op op = Op::Equal;
  int line = 0;
  // Throws ExpressionError (an unknown name, division by zero, overflow).
  bool holds(const std::map<std::string, std::int64_t> &values) const;
  // Why `values` break it ("constraint 'N % 128 == 0' does not hold (N % 128 = 64, 0 = 0)"), or
  // cannot evaluate it; none when it holds.
  std::optional<std::string> brokenBy(const std::map<std::string, std::int64_t> &values) const;
};
// "A OP B" with one comparison outside parentheses; throws ExpressionError saying what is wrong.
Constraint parseConstraint(const std::string &text);

struct Task {
  std::filesystem::path folder;       // the task folder
  std::filesystem::path manifestPath;  // the manifest file read (normally folder / "task.toml")
  std::string name;
  std::string description;
  std::vector<std::string> sizeNames;
  std::vector<SizeConfig> configs;
  std::vector<std::uint64_t> seeds;
  std::vector<Tensor> tensors;        // in manifest order
  Reference reference;
  std::optional<Launch> launch;       // how a device-only candidate is launched
  std::optional<std::filesystem::path> starter; // source a user starts editing from (defaults to the reference)
  Expression flops;
  Expression bytes;
  std::vector<Tunable> tunables;
  std::vector<Constraint> constraints;
  // Vendor libraries a candidate may load (allow_libraries; names from kVendorLibraries).
  // Every other vendor library is forbidden: a candidate that loads one is rejected.
  std::vector<std::string> allowedLibraries;
  // [export] torch: the PyTorch operation the kernel replaces, as a Python expression over the
  // tensors (torch tensors) and sizes (ints) by name, e.g. "torch.softmax(x, dim=1)"; an exported
  // PyTorch extension's test checks and times the kernel beside it. Empty: none given.
  std::string torchEquivalent;

  const Tensor *tensor(std::string_view name) const;
  const SizeConfig *config(std::string_view name) const;
  // The source a user edits first: the starter if given, else the reference.
  std::filesystem::path starterSource() const;
};

// The generator `seed` fills `tensor` with: seed 1 the first, seed 2 the second, ... cycling
// through init and moreInits (seed 0 the first). Throws std::invalid_argument without init.
const Generator &generatorForSeed(const Tensor &tensor, std::uint64_t seed);

// The vendor libraries the evaluator watches for, by the file-name stem that identifies them
// (libcublas.so.13 → "cublas"; "cublasLt" is its own entry).
inline const std::vector<std::string> kVendorLibraries = {"cublas", "cublasLt", "cudnn",  "cufft",
                                                          "cusparse", "cusolver", "curand", "npp",
                                                          "nvjpeg", "cutensor", "torch", "c10"};
// `allowed` with the vendor libraries those load themselves: cuBLAS loads cuBLASLt; cuSOLVER
// cuBLAS, cuBLASLt and cuSPARSE; cuDNN cuBLAS and cuBLASLt; torch all of them.
std::vector<std::string> withLibraryDependencies(const std::vector<std::string> &allowed);
// The vendor-library name of a loaded file's path ("/usr/lib/libcublasLt.so.13" → "cublasLt"),
// empty when it is none of kVendorLibraries.
std::string vendorLibraryOf(const std::string &path);

// The first constraint that the sizes and tunables in `values` break, as a message: "constraint
// 'N % 128 == 0' does not hold (N % 128 = 64, 0)"; none when every one holds.
std::optional<std::string> brokenConstraint(const Task &task, const std::map<std::string, std::int64_t> &values);
// Throws std::invalid_argument naming the configuration and the constraint when one of `configs`
// with `tunables` breaks one.
void checkConstraints(const Task &task, const std::vector<const SizeConfig *> &configs,
                      const std::map<std::string, std::int64_t> &tunables);

// The value of every tunable: the given one, else its first listed value. Throws
// std::invalid_argument naming the task's tunables when `given` names one it lacks.
std::map<std::string, std::int64_t> effectiveTunables(const Task &task,
                                                      const std::map<std::string, std::int64_t> &given);

}  // namespace kwb
