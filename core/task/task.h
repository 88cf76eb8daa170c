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
  // Applied to every draw, in double (separate roundings): x = draw * scale + shift, before the
  // value is stored in the tensor's dtype (`torch.randint(0, 2, s).float() * 2 - 1`: randint 0..2,
  // scale 2, shift -1). Defaults leave the draw as it is.
  double scale = 1.0;
  double shift = 0.0;
  // A structure over the last two dimensions (rows r, columns c), applied after the draws:
  // Symmetric: element (r, c) with r > c is element (c, r) (rows == columns required);
  // Upper: elements with c - r < diagonal are 0 (torch.triu(A, diagonal)); Lower: elements with
  // c - r > diagonal are 0 (torch.tril(A, diagonal)).
  enum class Matrix { None, Symmetric, Upper, Lower };
  Matrix matrix = Matrix::None;
  std::int64_t diagonal = 0;
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
// Whether scale or shift change a draw (scale 1 and shift 0 leave every draw as it is, bit for bit).
bool generatorScalesOrShifts(const Generator &);
// A matrix structure's manifest name ("symmetric", "upper", "lower"; "none" for None).
std::string_view generatorMatrixName(Generator::Matrix);
std::optional<Generator::Matrix> generatorMatrixFromName(std::string_view);
// Scale, shift and matrix structure in words, for listings: "scale 2, shift -1, upper (diagonal 1)";
// empty for the defaults.
std::string generatorExtrasText(const Generator &);

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
  // A PyTorch reference's module state (role "in" only): the Model's parameter, buffer or tensor
  // attribute this tensor is (its state-dict key, e.g. "conv.weight"), loaded into the module
  // before forward instead of passed to forward. The worker and the candidate see it as any
  // other input. Empty: not module state.
  std::string state;
  // A random tensor forward draws itself (`draw = N`: forward's N-th call of torch.randn, torch.rand,
  // torch.randint, their _like forms or torch.normal; role "in" only): the PyTorch reference hands
  // this tensor to that call instead of drawing, so the reference and the candidate see the same
  // values. The worker and the candidate see it as any other input. 0: not a draw.
  int draw = 0;
  int line = 0;                       // manifest line, for messages
  // Given to the PyTorch module other than as an argument of forward (module state or a draw).
  bool givenToModule() const { return !state.empty() || draw > 0; }
};

// A kernel launch over sizes and tunables. Args name tensors (passed as device pointers), sizes
// (passed as 64-bit integers) and parameters (passed in their dtype), in the kernel's parameter
// order.
struct Launch {
  std::string kernel;
  std::vector<Expression> grid;   // 1 to 3 dimensions
  std::vector<Expression> block;  // 1 to 3 dimensions
  Expression sharedBytes;         // dynamic shared memory, defaults to 0
  std::vector<std::string> args;
};

// One assignment of every named size (and of every integer parameter: see Param), with the
// launches that configuration uses where they differ from the task's ([[configs]] launch = {...}
// and reference_launch = {...}: the fields given replace those of [launch] / [reference]).
struct SizeConfig {
  std::string name;
  std::map<std::string, std::int64_t> values;
  std::optional<Launch> launch;           // the candidate's launch for this configuration
  std::optional<Launch> referenceLaunch;  // the reference's
};

// A scalar parameter, `[params] eps = 1e-5` or `dim = { value = 1, dtype = "i32" }`: compiled into
// the candidate and the reference as -DPARAM_NAME=VALUE (prefixed: a kernel argument may carry the
// parameter's own name), passed as a kernel argument where a launch's
// args name it (in its dtype: i64 and f32 unless given), and given to a PyTorch reference's
// Model(...) where [reference] init names it. An integer parameter is also usable in expressions
// (shapes, launches, costs, constraints) like a size: the parser adds it to every configuration's
// values.
struct Param {
  std::string name;
  DType dtype = DType::I64;  // I64, I32, F32 or F64
  double real = 0.0;         // the value (floating dtypes)
  std::int64_t integer = 0;  // the value (integer dtypes)
  int line = 0;
  bool isInteger() const { return !dtypeIsFloating(dtype); }
  // As a C literal for -D and as Python for Model(...): "1", "1e-05".
  std::string literal() const;
  // The bytes a kernel argument slot holds (little-endian, low bytes first): the integer, or the
  // float's / double's bits.
  std::uint64_t argumentBits() const;
};

struct Reference {
  std::filesystem::path source;  // relative to the task folder; empty for a PyTorch-only reference
  Launch launch;
  // A PyTorch module in KernelBench's format (class Model, forward over the in and inout tensors
  // in manifest order, returning the out tensors), `python = "reference.py"`, run by the
  // PyTorch reference process (core/eval/torch_reference.h); empty when there is none. With a CUDA
  // source beside it, the CUDA reference checks candidates by default and the module is timed
  // for the speedup over PyTorch; without one it is the reference.
  std::filesystem::path python;
  // Model(...)'s arguments, parameter names in order ([reference] init = ["dim"]); absent:
  // the module's get_init_inputs(), or none.
  // Names of [params] or sizes (a size's value is the configuration's). Model is built once per
  // configuration when a size is named.
  std::optional<std::vector<std::string>> init;
  // forward's arguments in order ([reference] forward = ["x", "alpha"]): in/inout tensors
  // without `state` or `draw`, and [params] (passed as Python numbers). Absent: every in/inout
  // tensor without `state` or `draw`, in manifest order.
  std::optional<std::vector<std::string>> forward;
  // Sizes (or integer [params]) that are also top-level constants of the module, by the same
  // name ([reference] module_constants = ["batch_size", "in_features"]): before Model is built
  // for a configuration, the module is executed again with each set to that configuration's
  // value (resources/python/kwb_problem_module.py), so what it derives from them (a bias_shape
  // tuple, a tensor made in __init__, get_init_inputs()' arguments) follows the sizes.
  std::vector<std::string> moduleConstants;
  bool hasCuda() const { return !source.empty(); }
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
  std::vector<Param> params;          // [params], in manifest order
  // Vendor libraries a candidate may load (allow_libraries; names from kVendorLibraries).
  // Every other vendor library is forbidden: a candidate that loads one is rejected.
  std::vector<std::string> allowedLibraries;
  // [export] torch: the PyTorch operation the kernel replaces, as a Python expression over the
  // tensors (torch tensors) and sizes (ints) by name, e.g. "torch.softmax(x, dim=1)"; an exported
  // PyTorch extension's test checks and times the kernel beside it. Empty: none given.
  std::string torchEquivalent;

  const Tensor *tensor(std::string_view name) const;
  const SizeConfig *config(std::string_view name) const;
  const Param *param(std::string_view name) const;
  // The launches of a configuration: its own where it has one, else the task's ([launch], and
  // the reference's launch for a task without one).
  const Launch &candidateLaunch(const SizeConfig &config) const;
  const Launch &referenceLaunch(const SizeConfig &config) const;
  // Every kernel a device-only candidate must define: [launch]'s and the configurations' own.
  std::vector<std::string> candidateKernels() const;
  // The source a user edits first: the starter if given, else the reference.
  std::filesystem::path starterSource() const;
};

// A PyTorch reference's forward arguments in order: [reference] forward, else every in/inout tensor
// without `state` or `draw`, in manifest order (tensor and parameter names).
std::vector<std::string> forwardArguments(const Task &task);

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

// `task` with the reference's launches as the candidate's (every configuration's too): for
// running the reference itself as a candidate.
void useReferenceLaunches(Task &task);

// The kernel argument slots of a configuration: every size and integer parameter by value, every
// floating parameter by its bits (Param::argumentBits).
std::map<std::string, std::int64_t> scalarArguments(const Task &task, const SizeConfig &config);
// The parameters as compile definitions (-DPARAM_NAME=VALUE), in manifest order.
std::vector<std::pair<std::string, std::string>> paramDefines(const Task &task);

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
