#include "core/task/task.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <map>
#include <utility>

namespace kwb {

namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t size;
  bool floating;
};

constexpr std::array<DTypeInfo, 9> kDTypes = {{
    {DType::F64, "f64", 8, true},
    {DType::F32, "f32", 4, true},
    {DType::F16, "f16", 2, true},
    {DType::BF16, "bf16", 2, true},
    {DType::I64, "i64", 8, false},
    {DType::I32, "i32", 4, false},
    {DType::I8, "i8", 1, false},
    {DType::U8, "u8", 1, false},
    {DType::Bool, "bool", 1, false},
}};

const DTypeInfo &info(DType t) {
  for (const auto &i : kDTypes)
    if (i.type == t) return i;
  return kDTypes[1];
}

struct RoleInfo {
  TensorRole role;
  std::string_view name;
};

constexpr std::array<RoleInfo, 3> kRoles = {{
    {TensorRole::In, "in"},
    {TensorRole::Out, "out"},
    {TensorRole::InOut, "inout"},
}};

struct GeneratorInfo {
  Generator::Kind kind;
  std::string_view name;
  GeneratorParams params;
  bool drawsReals;
};

constexpr std::array<GeneratorInfo, 5> kGenerators = {{
    {Generator::Kind::Uniform, "uniform", {"low", "high"}, true},
    {Generator::Kind::Normal, "normal", {"mean", "std"}, true},
    {Generator::Kind::RandInt, "randint", {"low", "high"}, false},
    {Generator::Kind::Arange, "arange", {"start", "step"}, false},
    {Generator::Kind::Constant, "constant", {"value", nullptr}, false},
}};

const GeneratorInfo &info(Generator::Kind k) {
  for (const auto &g : kGenerators)
    if (g.kind == k) return g;
  return kGenerators[0];
}

}  // namespace

std::string_view dtypeName(DType t) { return info(t).name; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto &i : kDTypes)
    if (i.name == name) return i.type;
  return std::nullopt;
}

std::size_t dtypeSize(DType t) { return info(t).size; }

bool dtypeIsFloating(DType t) { return info(t).floating; }

std::vector<std::string_view> dtypeNames() {
  std::vector<std::string_view> out;
  for (const auto &i : kDTypes) out.push_back(i.name);
  return out;
}

std::string_view roleName(TensorRole role) {
  for (const auto &r : kRoles)
    if (r.role == role) return r.name;
  return kRoles[0].name;
}

std::optional<TensorRole> roleFromName(std::string_view name) {
  for (const auto &r : kRoles)
    if (r.name == name) return r.role;
  return std::nullopt;
}

std::vector<std::string_view> roleNames() {
  std::vector<std::string_view> out;
  for (const auto &r : kRoles) out.push_back(r.name);
  return out;
}

std::string_view generatorKindName(Generator::Kind kind) {
  return info(kind).name;
}

std::optional<Generator::Kind> generatorKindFromName(std::string_view name) {
  for (const auto &g : kGenerators)
    if (g.name == name) return g.kind;
  return std::nullopt;
}

std::vector<std::string_view> generatorKindNames() {
  std::vector<std::string_view> out;
  for (const auto &g : kGenerators) out.push_back(g.name);
  return out;
}

GeneratorParams generatorParameterNames(Generator::Kind kind) {
  return info(kind).params;
}

bool generatorDrawsReals(Generator::Kind kind) {
  return info(kind).drawsReals;
}

bool generatorScalesOrShifts(const Generator &g) { return g.scale != 1.0 || g.shift != 0.0; }

namespace {
constexpr std::array<std::pair<Generator::Matrix, std::string_view>, 4> kMatrices = {{
    {Generator::Matrix::None, "none"},
    {Generator::Matrix::Symmetric, "symmetric"},
    {Generator::Matrix::Upper, "upper"},
    {Generator::Matrix::Lower, "lower"},
}};
}  // namespace

std::string_view generatorMatrixName(Generator::Matrix matrix) {
  for (const auto &[m, name] : kMatrices)
    if (m == matrix) return name;
  return "none";
}

std::optional<Generator::Matrix> generatorMatrixFromName(std::string_view name) {
  for (const auto &[m, n] : kMatrices)
    if (n == name) return m;
  return std::nullopt;
}

std::string generatorExtrasText(const Generator &g) {
  const auto number = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    // The shortest text that reads back as v.
    for (int digits = 1; digits < 17; ++digits) {
      char shorter[32];
      std::snprintf(shorter, sizeof shorter, "%.*g", digits, v);
      if (std::strtod(shorter, nullptr) == v) return std::string(shorter);
    }
    return std::string(buf);
  };
  std::string out;
  const auto add = [&out](const std::string &part) { out += (out.empty() ? "" : ", ") + part; };
  if (g.scale != 1.0) add("scale " + number(g.scale));
  if (g.shift != 0.0) add("shift " + number(g.shift));
  if (g.matrix != Generator::Matrix::None) {
    std::string m(generatorMatrixName(g.matrix));
    if (g.matrix != Generator::Matrix::Symmetric) m += " (diagonal " + std::to_string(g.diagonal) + ")";
    add(m);
  }
  return out;
}

std::vector<std::string> forwardArguments(const Task &task) {
  if (task.reference.forward) return *task.reference.forward;
  std::vector<std::string> out;
  for (const Tensor &t : task.tensors)
    if (t.role != TensorRole::Out && !t.givenToModule()) out.push_back(t.name);
  return out;
}

const Tensor *Task::tensor(std::string_view wanted) const {
  for (const auto &t : tensors)
    if (t.name == wanted) return &t;
  return nullptr;
}

const SizeConfig *Task::config(std::string_view wanted) const {
  for (const auto &c : configs)
    if (c.name == wanted) return &c;
  return nullptr;
}

const Param *Task::param(std::string_view wanted) const {
  for (const auto &p : params)
    if (p.name == wanted) return &p;
  return nullptr;
}

const Launch &Task::candidateLaunch(const SizeConfig &c) const {
  if (c.launch) return *c.launch;
  return launch ? *launch : reference.launch;
}

const Launch &Task::referenceLaunch(const SizeConfig &c) const {
  return c.referenceLaunch ? *c.referenceLaunch : reference.launch;
}

std::vector<std::string> Task::candidateKernels() const {
  std::vector<std::string> out{launch ? launch->kernel : reference.launch.kernel};
  for (const auto &c : configs)
    if (c.launch && std::find(out.begin(), out.end(), c.launch->kernel) == out.end()) out.push_back(c.launch->kernel);
  return out;
}

std::string Param::literal() const {
  if (isInteger()) return std::to_string(integer);
  // The shortest form that reads back as the same double.
  char buf[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, real);
    if (std::strtod(buf, nullptr) == real) break;
  }
  std::string s = buf;
  // A whole number stays a floating literal in C and in Python.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::uint64_t Param::argumentBits() const {
  std::uint64_t bits = 0;
  if (dtype == DType::F32) {
    const float f = static_cast<float>(real);
    std::memcpy(&bits, &f, sizeof f);
  } else if (dtype == DType::F64) {
    std::memcpy(&bits, &real, sizeof real);
  } else if (dtype == DType::I32) {
    const auto v = static_cast<std::uint32_t>(static_cast<std::int32_t>(integer));
    bits = v;
  } else {
    bits = static_cast<std::uint64_t>(integer);
  }
  return bits;
}

void useReferenceLaunches(Task &task) {
  task.launch = task.reference.launch;
  for (auto &c : task.configs) c.launch = c.referenceLaunch;
}

std::map<std::string, std::int64_t> scalarArguments(const Task &task, const SizeConfig &config) {
  auto out = config.values;
  for (const auto &p : task.params) out[p.name] = static_cast<std::int64_t>(p.argumentBits());
  return out;
}

std::vector<std::pair<std::string, std::string>> paramDefines(const Task &task) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &p : task.params) out.emplace_back("PARAM_" + p.name, p.literal());
  return out;
}

std::filesystem::path Task::starterSource() const {
  if (starter && !starter->empty()) return *starter;
  return reference.source;
}

std::map<std::string, std::int64_t> effectiveTunables(const Task &task,
                                                      const std::map<std::string, std::int64_t> &given) {
  for (const auto &[name, value] : given) {
    bool known = false;
    for (const auto &t : task.tunables) known = known || t.name == name;
    if (!known) {
      std::string names;
      for (const auto &t : task.tunables) names += (names.empty() ? "" : ", ") + t.name;
      throw std::invalid_argument("task '" + task.name + "' has no tunable '" + name + "'" +
                                  (names.empty() ? " (it has none)" : " (its tunables: " + names + ")"));
    }
  }
  std::map<std::string, std::int64_t> out;
  for (const auto &t : task.tunables) {
    if (auto it = given.find(t.name); it != given.end()) out[t.name] = it->second;
    else if (!t.values.empty()) out[t.name] = t.values.front();
  }
  return out;
}

Constraint parseConstraint(const std::string &text) {
  // The comparison: the first of ==, !=, <=, >=, <, > outside parentheses.
  int depth = 0;
  std::size_t at = std::string::npos, width = 0;
  Constraint::Op op = Constraint::Op::Equal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth != 0) continue;
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    std::size_t w = 0;
    Constraint::Op o = Constraint::Op::Equal;
    if (c == '=' && next == '=') w = 2, o = Constraint::Op::Equal;
    else if (c == '!' && next == '=') w = 2, o = Constraint::Op::NotEqual;
    else if (c == '<' && next == '=') w = 2, o = Constraint::Op::LessEqual;
    else if (c == '>' && next == '=') w = 2, o = Constraint::Op::GreaterEqual;
    else if (c == '<') w = 1, o = Constraint::Op::Less;
    else if (c == '>') w = 1, o = Constraint::Op::Greater;
    if (!w) continue;
    if (at != std::string::npos)
      throw ExpressionError("a second comparison at character " + std::to_string(i + 1) +
                                "; expected one comparison, e.g. \"N % 128 == 0\" (write two constraints for two)",
                            i);
    at = i;
    width = w;
    op = o;
    i += w - 1;
  }
  if (at == std::string::npos)
    throw ExpressionError("no comparison; expected two expressions compared with ==, !=, <, <=, > or >=, e.g. "
                          "\"N % 128 == 0\"",
                          0);
  auto trimmed = [](std::string t) {
    const auto first = t.find_first_not_of(" \t");
    if (first == std::string::npos) return std::string();
    return t.substr(first, t.find_last_not_of(" \t") - first + 1);
  };
  Constraint c;
  c.text = text;
  c.op = op;
  try {
    c.lhs = Expression::parse(trimmed(text.substr(0, at)));
  } catch (const ExpressionError &e) {
    throw ExpressionError(std::string("left of the comparison: ") + e.what(), e.column());
  }
  try {
    c.rhs = Expression::parse(trimmed(text.substr(at + width)));
  } catch (const ExpressionError &e) {
    throw ExpressionError(std::string("right of the comparison: ") + e.what(), at + width + e.column());
  }
  return c;
}

bool Constraint::holds(const std::map<std::string, std::int64_t> &values) const {
  const std::int64_t a = lhs.evaluate(values), b = rhs.evaluate(values);
  switch (op) {
    case Op::Equal: return a == b;
    case Op::NotEqual: return a != b;
    case Op::Less: return a < b;
    case Op::LessEqual: return a <= b;
    case Op::Greater: return a > b;
    case Op::GreaterEqual: return a >= b;
  }
  return false;
}

std::optional<std::string> Constraint::brokenBy(const std::map<std::string, std::int64_t> &values) const {
  try {
    if (holds(values)) return std::nullopt;
    return "constraint '" + text + "' does not hold (" + lhs.text() + " = " + std::to_string(lhs.evaluate(values)) + ", " +
           rhs.text() + " = " + std::to_string(rhs.evaluate(values)) + ")";
  } catch (const ExpressionError &e) {
    return "constraint '" + text + "' cannot be evaluated: " + e.what();
  }
}

std::optional<std::string> brokenConstraint(const Task &task, const std::map<std::string, std::int64_t> &values) {
  for (const auto &c : task.constraints)
    if (auto broken = c.brokenBy(values)) return broken;
  return std::nullopt;
}

void checkConstraints(const Task &task, const std::vector<const SizeConfig *> &configs,
                      const std::map<std::string, std::int64_t> &tunables) {
  for (const SizeConfig *config : configs) {
    auto values = config->values;
    values.insert(tunables.begin(), tunables.end());
    if (const auto broken = brokenConstraint(task, values)) {
      std::string given;
      for (const auto &[k, v] : tunables) given += (given.empty() ? "" : " ") + k + "=" + std::to_string(v);
      throw std::invalid_argument("configuration '" + config->name + "'" + (given.empty() ? "" : " with " + given) + ": " +
                                  *broken + "; task '" + task.name + "' declares it (constraints in task.toml)");
    }
  }
}

const Generator &generatorForSeed(const Tensor &tensor, std::uint64_t seed) {
  if (!tensor.init)
    throw std::invalid_argument("tensor '" + tensor.name + "' has no generator (init); only in and inout tensors are generated");
  if (tensor.moreInits.empty() || seed == 0) return *tensor.init;
  const std::uint64_t i = (seed - 1) % (tensor.moreInits.size() + 1);
  return i == 0 ? *tensor.init : tensor.moreInits[i - 1];
}

std::vector<std::string> withLibraryDependencies(const std::vector<std::string> &allowed) {
  static const std::map<std::string, std::vector<std::string>> kLoads = {
      {"cublas", {"cublasLt"}},
      {"cusolver", {"cublas", "cublasLt", "cusparse"}},
      {"cudnn", {"cublas", "cublasLt"}},
      {"torch", kVendorLibraries}};
  std::vector<std::string> out = allowed;
  for (std::size_t i = 0; i < out.size(); ++i)  // out grows while it is walked
    if (auto it = kLoads.find(out[i]); it != kLoads.end())
      for (const auto &more : it->second)
        if (std::find(out.begin(), out.end(), more) == out.end()) out.push_back(more);
  return out;
}

std::string vendorLibraryOf(const std::string &path) {
  const auto slash = path.rfind('/');
  const std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  if (file.rfind("lib", 0) != 0) return {};
  std::string best;
  for (const auto &name : kVendorLibraries) {
    // "libcublasLt.so..." must not count as "cublas": the name is followed by '.', '_' or '-'.
    // (A longer name wins, so libcublasLt is "cublasLt".)
    const std::string stem = "lib" + name;
    if (file.size() > stem.size() && file.compare(0, stem.size(), stem) == 0) {
      const char next = file[stem.size()];
      // NPP comes as libnppc, libnppial, ...: any continuation.
      if ((next == '.' || next == '_' || next == '-' || name == "npp") && name.size() > best.size()) best = name;
    }
  }
  return best;
}

}  // namespace kwb
