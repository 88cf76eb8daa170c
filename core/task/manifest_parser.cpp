#include "core/task/manifest_parser.h"
#include "core/lineage/lineage.h"
#include "core/task/source_file.h"
#include "core/task/toml_shape.h"
#include "core/text/printable.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <toml++/toml.h>
#include <unistd.h>

namespace kwb {

namespace {

std::string formatError(const std::string &file, int line, const std::string &field,
                        const std::string &message) {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

}  // namespace

// Field and message may quote the manifest's own text (a key, a name): escaped and capped.
ManifestError::ManifestError(std::string file, int line, std::string field, std::string message)
    : std::runtime_error(formatError(file, line, printable(field, 256), printable(message))),
      file_(std::move(file)),
      line_(line),
      field_(printable(field, 256)),
      detail_(printable(message)) {}

namespace {

namespace fs = std::filesystem;
using Values = std::map<std::string, std::int64_t>;

constexpr std::size_t kMaxTunablePoints = 4096;
const char *const kToleranceExample = "\"exact\" or a table like { rtol = 1e-5, atol = 1e-7 }";
const char *const kInitExample = "a generator like { kind = \"uniform\", low = -1.0, high = 1.0 }";
// Doubles hold generator parameters; integers beyond 2^53 would silently lose precision.
constexpr std::int64_t kMaxExactInteger = std::int64_t{1} << 53;

template <typename String>
std::string join(const std::vector<String> &items, const char *separator = ", ") {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

// "a, b or c"
std::string joinOr(const std::vector<std::string_view> &items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string inQuotes(const std::string &s) { return "'" + s + "'"; }

// An expression in quotes, shortened when long (they may run to kMaxExpressionLength characters and beyond).
std::string quotedExpression(const std::string &text) {
  constexpr std::size_t kShown = 60;
  if (text.size() <= kShown) return inQuotes(text);
  return inQuotes(text.substr(0, kShown) + "...");
}

std::string number(double v) {
  // Whole numbers print in full ("-3100000000", not "-3.1e+09") as far as doubles hold them exactly.
  if (v == std::trunc(v) && std::fabs(v) <= 9007199254740992.0)
    return std::to_string(static_cast<std::int64_t>(v));
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

std::string typeName(const toml::node &n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

int lineOf(const toml::source_region &region) { return static_cast<int>(region.begin.line); }
int lineOf(const toml::node &n) { return std::max(1, lineOf(n.source())); }

bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool isPlainName(const std::string &s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

const char *const kIdentifierRule = "an identifier (letters, digits and '_', not starting with a digit)";
const char *const kStateExample =
    "the module's state-dict key, identifiers or numbers joined by '.', e.g. \"conv.weight\" or \"layers.0.bias\"";

// A state-dict key: "conv.weight", "layers.0.weight", "h0".
bool isStateKey(const std::string &s) {
  if (s.empty()) return false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = s.find('.', start);
    const std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool number = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (!number && !isIdentifier(part)) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}
const char *const kPlainNameRule = "letters, digits, '_' and '-' only";

// One key of a table, with where it was written.
struct Entry {
  std::string key;
  const toml::node *node;
  int line;
  int column;
};

// A table's entries in the order they appear in the file (toml++ keeps them sorted by key).
std::vector<Entry> entriesInOrder(const toml::table &t) {
  std::vector<Entry> out;
  for (auto &&[key, node] : t) {
    int line = lineOf(key.source());
    int column = static_cast<int>(key.source().begin.column);
    if (line <= 0) {
      line = lineOf(node.source());
      column = static_cast<int>(node.source().begin.column);
    }
    out.push_back({std::string(key.str()), &node, std::max(1, line), column});
  }
  std::stable_sort(out.begin(), out.end(), [](const Entry &a, const Entry &b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  return out;
}

std::string child(const std::string &prefix, const std::string &key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// A tensor's extent in one configuration: its element count and last two dimensions (rows and
// columns of a generator's matrix structure; 0 where the tensor has fewer dimensions).
struct ConfigExtent {
  std::string config;
  std::int64_t count = 1;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};
using ElementCounts = std::vector<ConfigExtent>;

// The values a dtype holds: integers exactly (i64 within +/-2^53, where doubles hold them
// exactly), real numbers within the finite range.
struct ValueRange {
  double lo;
  double hi;
};

ValueRange valueRange(DType t) {
  switch (t) {
    case DType::F64:
      return {-std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    case DType::F32:
      return {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
    case DType::F16:
      return {-65504.0, 65504.0};
    case DType::BF16:
      return {-0x1.fep127, 0x1.fep127};  // 3.3895313892515355e38
    case DType::I64:
      return {-static_cast<double>(kMaxExactInteger), static_cast<double>(kMaxExactInteger)};
    case DType::I32:
      return {-2147483648.0, 2147483647.0};
    case DType::I8:
      return {-128.0, 127.0};
    case DType::U8:
      return {0.0, 255.0};
    case DType::Bool:
      return {0.0, 1.0};
  }
  return {0.0, 0.0};
}

// Which names an expression may use.
enum class Scope { Sizes, SizesAndTunables };

// An expression with the line it was written on.
struct LocatedExpression {
  Expression expr;
  int line = 1;
};

struct LaunchSource {
  Launch launch;
  std::string prefix;
  int tableLine = 1;
  int blockLine = 1;
  std::vector<LocatedExpression> grid;
  std::vector<LocatedExpression> block;
  LocatedExpression shared;
};

class ManifestReader {
 public:
  ManifestReader(std::string displayPath, fs::path folder)
      : path_(std::move(displayPath)), folder_(std::move(folder)) {}

  Task read(const std::string &text);
  // lineage.toml, read against an already parsed task; folder_ is the lineage folder.
  Lineage readLineage(const std::string &text, const Task &task);

 private:
  [[noreturn]] void fail(int line, const std::string &field, const std::string &message) const {
    throw ManifestError(path_, std::max(0, line), field, message);
  }

  // ---- shape of the document ----

  void checkKeys(const toml::table &t, const std::string &prefix,
                 const std::vector<std::string> &allowed) const {
    for (const Entry &e : entriesInOrder(t)) {
      if (std::find(allowed.begin(), allowed.end(), e.key) != allowed.end()) continue;
      fail(e.line, child(prefix, e.key),
           std::string("unknown key; expected ") + (allowed.size() == 1 ? "" : "one of: ") + join(allowed));
    }
  }

  const toml::node &require(const toml::table &t, int tableLine, const std::string &prefix,
                            const std::string &key, const std::string &expected) const {
    const toml::node *n = t.get(key);
    if (!n) fail(tableLine, child(prefix, key), "missing; expected " + expected);
    return *n;
  }

  const toml::table &asTable(const toml::node &n, const std::string &field,
                             const std::string &expected) const {
    if (const auto *t = n.as_table()) return *t;
    fail(lineOf(n), field, "found " + typeName(n) + "; expected " + expected);
  }

  const toml::array &asArray(const toml::node &n, const std::string &field,
                             const std::string &expected) const {
    if (const auto *a = n.as_array()) return *a;
    fail(lineOf(n), field, "found " + typeName(n) + "; expected " + expected);
  }

  std::string asString(const toml::node &n, const std::string &field, const std::string &expected) const {
    if (const auto *s = n.as_string()) return s->get();
    fail(lineOf(n), field, "found " + typeName(n) + "; expected " + expected);
  }

  std::int64_t asInteger(const toml::node &n, const std::string &field, const std::string &expected) const {
    if (const auto *i = n.as_integer()) return i->get();
    fail(lineOf(n), field, "found " + typeName(n) + "; expected " + expected);
  }

  double asNumber(const toml::node &n, const std::string &field, const std::string &expected) const {
    double v = 0.0;
    if (const auto *i = n.as_integer())
      v = static_cast<double>(i->get());
    else if (const auto *f = n.as_floating_point())
      v = f->get();
    else
      fail(lineOf(n), field, "found " + typeName(n) + "; expected " + expected);
    if (!std::isfinite(v)) fail(lineOf(n), field, "found " + number(v) + "; expected a finite number");
    return v;
  }

  // A source file named relative to the task folder; checked to exist when the folder is known.
  fs::path sourceFile(const toml::node &n, const std::string &field, const std::string &what) const {
    const std::string s = asString(n, field, what + " (a path relative to the task folder)");
    if (s.empty()) fail(lineOf(n), field, "empty; expected " + what + " (a path relative to the task folder)");
    if (s.find('\0') != std::string::npos)
      fail(lineOf(n), field, "holds a NUL character; expected " + what + " (a path relative to the task folder)");
    const fs::path p(s);
    if (p.is_absolute() || p.has_root_path())
      fail(lineOf(n), field, inQuotes(s) + " is an absolute path; expected a path relative to the task folder");
    const fs::path normal = p.lexically_normal();
    if (!normal.empty() && *normal.begin() == "..")
      fail(lineOf(n), field,
           inQuotes(s) + " leaves the task folder; expected a path that stays inside the task folder");
    if (!normal.has_filename() || normal == ".")
      fail(lineOf(n), field, inQuotes(s) + " is not a file; expected " + what);
    if (!folder_.empty()) {
      std::error_code ec;
      const fs::path full = folder_ / p;
      if (!fs::exists(full, ec))
        fail(lineOf(n), field, inQuotes(s) + " does not exist in the task folder; expected " + what);
      if (!fs::is_regular_file(full, ec))
        fail(lineOf(n), field, inQuotes(s) + " is not a file; expected " + what);
      // With every symbolic link followed it must still be inside the folder (issue 17, 2: a
      // link to /proc/self/environ was compiled, and its secrets came back in the diagnostics).
      std::error_code realError, rootError;
      const fs::path real = fs::canonical(full, realError), root = fs::canonical(folder_, rootError);
      if (realError || rootError)
        fail(lineOf(n), field, inQuotes(s) + " cannot be resolved: " + (realError ? realError : rootError).message());
      if (!isInsideFolder(real, root))
        fail(lineOf(n), field,
             inQuotes(s) + " is a symbolic link (or passes through one) to " + real.string() +
                 ", outside the task folder; expected a file inside it (copy the file into the folder)");
      if (const auto bytes = fs::file_size(real, ec); !ec && bytes > kMaxSourceBytes)
        fail(lineOf(n), field,
             inQuotes(s) + " is " + std::to_string(bytes) + " bytes; a source may have at most " +
                 std::to_string(kMaxSourceBytes));
    }
    return p;
  }

  // ---- expressions ----

  LocatedExpression expression(const toml::node &n, const std::string &field, Scope scope) const {
    LocatedExpression out;
    out.line = lineOf(n);
    if (const auto *i = n.as_integer()) {
      out.expr = Expression::constant(i->get());
      return out;
    }
    const auto *s = n.as_string();
    if (!s)
      fail(out.line, field, "found " + typeName(n) + "; expected an integer or an expression string like \"2 * rows\"");
    try {
      out.expr = Expression::parse(s->get());
    } catch (const ExpressionError &e) {
      fail(out.line, field, "invalid expression " + quotedExpression(s->get()) + ": " + e.what());
    }
    for (const std::string &id : out.expr.identifiers()) {
      if (sizeSet_.count(id) || intParamSet_.count(id)) continue;
      if (paramSet_.count(id))
        fail(out.line, field, "parameter " + inQuotes(id) + " is not an integer; expected sizes" +
                                  std::string(scope == Scope::SizesAndTunables ? ", tunables" : "") +
                                  " and integer parameters only");
      const bool isTunable = tunableSet_.count(id) > 0;
      if (scope == Scope::SizesAndTunables) {
        if (isTunable) continue;
        std::string msg = "unknown name " + inQuotes(id) + "; known sizes: " + join(sizeNames_);
        if (!tunableNames_.empty()) msg += "; known tunables: " + join(tunableNames_);
        fail(out.line, field, msg);
      }
      if (isTunable)
        fail(out.line, field, "tunable " + inQuotes(id) + " cannot be used here; expected sizes only: " +
                                  join(sizeNames_));
      fail(out.line, field, "unknown size " + inQuotes(id) + "; known sizes: " + join(sizeNames_));
    }
    return out;
  }

  std::vector<LocatedExpression> expressionList(const toml::node &n, const std::string &field, Scope scope,
                                                std::size_t minCount, std::size_t maxCount,
                                                const std::string &expected) const {
    const toml::array &a = asArray(n, field, expected);
    if (a.size() < minCount || a.size() > maxCount)
      fail(lineOf(n), field,
           "found " + std::to_string(a.size()) + (a.size() == 1 ? " dimension" : " dimensions") +
               "; expected " + expected);
    std::vector<LocatedExpression> out;
    for (const toml::node &e : a) out.push_back(expression(e, field, scope));
    return out;
  }

  std::int64_t evaluate(const LocatedExpression &e, const std::string &field, const Values &values,
                        const std::string &context) const {
    try {
      return e.expr.evaluate(values);
    } catch (const ExpressionError &err) {
      fail(e.line, field, std::string(err.what()) + " in " + quotedExpression(e.expr.text()) + " " + context);
    }
  }

  void requireRange(std::int64_t v, const LocatedExpression &e, const std::string &field,
                    const std::string &context, std::int64_t low, std::int64_t high,
                    const std::string &what) const {
    if (v >= low && v <= high) return;
    // A plain number needs no configuration to explain it.
    std::string msg = e.expr.text() == std::to_string(v)
                          ? "found " + e.expr.text() + "; expected "
                          : quotedExpression(e.expr.text()) + " evaluates to " + std::to_string(v) + " " +
                                context + "; expected ";
    if (v < low)
      msg += what + " >= " + std::to_string(low);
    else
      msg += what + " <= " + std::to_string(high);
    fail(e.line, field, msg);
  }

  // ---- sections ----

  void readName(const toml::table &root, Task &task) const;
  void readSizes(const toml::table &root, Task &task);
  void readSeeds(const toml::table &root, Task &task) const;
  void readConfigs(const toml::table &root, Task &task) const;
  void readTunables(const toml::table &root, Task &task);
  void readTensors(const toml::table &root, Task &task) const;
  Tensor readTensor(const Entry &entry, const Task &task) const;
  Generator readInit(const toml::node &n, const std::string &field, const Tensor &tensor,
                     const ElementCounts &elements) const;
  Tolerance readTolerance(const toml::node &n, const std::string &field, const Tensor &tensor) const;
  // `base`: a configuration's launch, whose missing fields are the task's.
  LaunchSource readLaunch(const toml::table &t, int tableLine, const std::string &prefix, Scope scope,
                          const Task &task, bool withSource, fs::path *source,
                          const LaunchSource *base = nullptr) const;
  // Every configuration (or only `only`) with the tunables the launch uses.
  void checkLaunch(const LaunchSource &l, const Task &task, bool withTunables, const SizeConfig *only = nullptr) const;
  void readParams(const toml::table &root, Task &task);
  void readReference(const toml::table &root, Task &task, LaunchSource &reference) const;
  void readForward(const toml::node &n, Task &task) const;
  // Every tensor with `state` needs a PyTorch reference to load it into.
  void checkStateHasModule(const toml::table &root, const Task &task) const;
  void readConfigLaunches(const toml::table &root, Task &task, const LaunchSource *reference,
                          const LaunchSource *launch) const;
  void checkLaunchPoint(const LaunchSource &l, const Values &values, const std::string &context) const;
  void readCost(const toml::table &root, Task &task) const;
  void readEditor(const toml::table &root, Task &task) const;
  void readExport(const toml::table &root, Task &task) const;
  void readConstraints(const toml::table &root, Task &task) const;

  std::string path_;
  fs::path folder_;
  std::vector<std::string> sizeNames_;
  std::set<std::string> sizeSet_;
  std::vector<std::string> tunableNames_;
  std::set<std::string> tunableSet_;
  std::vector<std::string> paramNames_;  // every parameter
  std::set<std::string> paramSet_;
  std::set<std::string> intParamSet_;    // the integer ones: usable in expressions
};

Task ManifestReader::read(const std::string &text) {
  toml::table root;
  if (const auto shape = checkTomlShape(text)) fail(shape->line, "", shape->message);
  try {
    root = toml::parse(text, std::string_view(path_));
  } catch (const toml::parse_error &e) {
    fail(std::max(1, lineOf(e.source())), "", "TOML syntax error: " + std::string(e.description()));
  }

  Task task;
  task.folder = folder_;
  task.manifestPath = folder_.empty() ? fs::path(path_) : folder_ / kManifestFileName;

  checkKeys(root, "", {"name", "description", "sizes", "seeds", "configs", "tensors", "reference",
                       "launch", "tunables", "cost", "editor", "allow_libraries", "export", "constraints",
                       "params"});
  readName(root, task);
  readSizes(root, task);
  readSeeds(root, task);
  readConfigs(root, task);
  readTunables(root, task);
  readParams(root, task);
  readConstraints(root, task);
  readTensors(root, task);

  LaunchSource reference;
  readReference(root, task, reference);
  checkStateHasModule(root, task);
  std::optional<LaunchSource> launch;
  if (const toml::node *launchNode = root.get("launch")) {
    const toml::table &t = asTable(*launchNode, "launch", "a [launch] table");
    launch = readLaunch(t, lineOf(t), "launch", Scope::SizesAndTunables, task, false, nullptr);
    task.launch = launch->launch;
    checkLaunch(*launch, task, true);
  } else if (!task.reference.hasCuda()) {
    fail(0, "launch",
         "missing; expected a [launch] table saying how a candidate is launched (kernel, grid, block, args): "
         "the reference is a PyTorch module, which launches nothing");
  }
  readConfigLaunches(root, task, task.reference.hasCuda() ? &reference : nullptr, launch ? &*launch : nullptr);

  readCost(root, task);
  readEditor(root, task);
  if (!task.reference.hasCuda() && !task.starter)
    fail(0, "editor.starter",
         "missing; expected [editor] starter = \"FILE.cu\": the reference is a PyTorch module, so a user needs a CUDA "
         "source to start editing from");
  readExport(root, task);
  if (const toml::node *n = root.get("allow_libraries")) {
    const std::string what = "an array of vendor library names, e.g. [\"cublas\"]; known: " + join(kVendorLibraries);
    const toml::array &a = asArray(*n, "allow_libraries", what);
    for (const toml::node &e : a) {
      const std::string name = asString(e, "allow_libraries", "a vendor library name (a string)");
      if (std::find(kVendorLibraries.begin(), kVendorLibraries.end(), name) == kVendorLibraries.end())
        fail(lineOf(e), "allow_libraries", inQuotes(name) + " is not a known vendor library; expected one of: " +
                                               join(kVendorLibraries));
      task.allowedLibraries.push_back(name);
    }
  }
  return task;
}

void ManifestReader::readName(const toml::table &root, Task &task) const {
  const toml::node &n = require(root, 0, "", "name", "a task name, e.g. name = \"softmax\"");
  task.name = asString(n, "name", "a task name (a string)");
  if (task.name.empty()) fail(lineOf(n), "name", std::string("empty; expected ") + kPlainNameRule);
  if (!isPlainName(task.name))
    fail(lineOf(n), "name", inQuotes(task.name) + " is not a valid task name; expected " + kPlainNameRule);

  const toml::node &d =
      require(root, 0, "", "description", "a one-line description, e.g. description = \"Row-wise softmax\"");
  task.description = asString(d, "description", "a one-line description (a string)");
}

void ManifestReader::readSizes(const toml::table &root, Task &task) {
  const toml::node &n =
      require(root, 0, "", "sizes", "the names of the task's sizes, e.g. sizes = [\"rows\", \"cols\"]");
  const toml::array &a = asArray(n, "sizes", "an array of size names, e.g. [\"rows\", \"cols\"]");
  if (a.empty()) fail(lineOf(n), "sizes", "empty; expected at least one size name, e.g. [\"rows\", \"cols\"]");
  for (const toml::node &e : a) {
    const std::string s = asString(e, "sizes", "a size name (a string)");
    if (!isIdentifier(s)) fail(lineOf(e), "sizes", inQuotes(s) + " is not a valid size name; expected " + kIdentifierRule);
    if (s == "name" || s == "launch" || s == "reference_launch")
      fail(lineOf(e), "sizes",
           inQuotes(s) + " is reserved (a [[configs]] table uses it for the configuration's " +
               (s == "name" ? "name" : "own launch") + "); expected another size name");
    if (sizeSet_.count(s)) fail(lineOf(e), "sizes", "duplicate size " + inQuotes(s) + "; expected each name once");
    sizeSet_.insert(s);
    sizeNames_.push_back(s);
  }
  task.sizeNames = sizeNames_;
}

void ManifestReader::readSeeds(const toml::table &root, Task &task) const {
  const toml::node *n = root.get("seeds");
  if (!n) {
    task.seeds = {1, 2, 3};
    return;
  }
  const toml::array &a = asArray(*n, "seeds", "an array of non-negative integers, e.g. [1, 2, 3]");
  if (a.empty())
    fail(lineOf(*n), "seeds", "empty; expected at least one seed, or no seeds key for the default [1, 2, 3]");
  for (const toml::node &e : a) {
    const std::int64_t v = asInteger(e, "seeds", "a non-negative integer");
    if (v < 0) fail(lineOf(e), "seeds", "found " + std::to_string(v) + "; expected a non-negative integer");
    task.seeds.push_back(static_cast<std::uint64_t>(v));
  }
}

void ManifestReader::readConfigs(const toml::table &root, Task &task) const {
  const std::string expected = "at least one [[configs]] table setting " + join(sizeNames_);
  const toml::node &n = require(root, 0, "", "configs", expected);
  const toml::array *a = n.as_array();
  if (!a) fail(lineOf(n), "configs", "found " + typeName(n) + "; expected " + expected);
  if (a->empty()) fail(lineOf(n), "configs", "empty; expected " + expected);
  for (const toml::node &e : *a)
    if (!e.is_table()) fail(lineOf(e), "configs", "found " + typeName(e) + "; expected [[configs]] tables");

  std::vector<std::string> allowed{"name"};
  allowed.insert(allowed.end(), sizeNames_.begin(), sizeNames_.end());
  allowed.insert(allowed.end(), {"launch", "reference_launch"});
  std::set<std::string> seen;
  for (std::size_t i = 0; i < a->size(); ++i) {
    const toml::table &t = *(*a)[i].as_table();
    const std::string prefix = "configs[" + std::to_string(i) + "]";
    const int line = lineOf(t);
    checkKeys(t, prefix, allowed);
    SizeConfig config;
    const toml::node &nameNode = require(t, line, prefix, "name", "a configuration name, e.g. name = \"small\"");
    config.name = asString(nameNode, prefix + ".name", "a configuration name (a string)");
    if (!isPlainName(config.name))
      fail(lineOf(nameNode), prefix + ".name",
           inQuotes(config.name) + " is not a valid configuration name; expected " + kPlainNameRule);
    if (!seen.insert(config.name).second)
      fail(lineOf(nameNode), prefix + ".name",
           "duplicate configuration " + inQuotes(config.name) + "; expected unique names");
    for (const std::string &size : sizeNames_) {
      const std::string field = prefix + "." + size;
      const toml::node &v = require(t, line, prefix, size,
                                    "a positive integer (every configuration sets " + join(sizeNames_) + ")");
      const std::int64_t value = asInteger(v, field, "a positive integer");
      if (value < 1) fail(lineOf(v), field, "found " + std::to_string(value) + "; expected a positive integer");
      config.values[size] = value;
    }
    task.configs.push_back(std::move(config));
  }
}

void ManifestReader::readTunables(const toml::table &root, Task &task) {
  const toml::node *n = root.get("tunables");
  if (!n) return;
  const toml::table &t = asTable(*n, "tunables", "a [tunables] table of NAME = [values]");
  // Tensors are read after tunables (so their shapes can say a tunable is out of place); their
  // names are already known as the keys of the [tensors] table.
  std::vector<std::string> tensorNames;
  if (const toml::node *tensors = root.get("tensors"); tensors && tensors->is_table())
    for (const Entry &e : entriesInOrder(*tensors->as_table())) tensorNames.push_back(e.key);
  for (const Entry &e : entriesInOrder(t)) {
    const std::string field = "tunables." + e.key;
    if (!isIdentifier(e.key))
      fail(e.line, field, inQuotes(e.key) + " is not a valid tunable name; expected " + kIdentifierRule);
    if (sizeSet_.count(e.key))
      fail(e.line, field, "clashes with the size " + inQuotes(e.key) + "; expected a name that is not a size (" +
                              join(sizeNames_) + ")");
    if (std::find(tensorNames.begin(), tensorNames.end(), e.key) != tensorNames.end())
      fail(e.line, field,
           "clashes with the tensor " + inQuotes(e.key) + "; expected a name that is not a tensor (" +
               join(tensorNames) + ")");
    const toml::array &a = asArray(*e.node, field, "a non-empty array of integers, e.g. [128, 256]");
    if (a.empty()) fail(lineOf(*e.node), field, "empty; expected at least one value, e.g. [128, 256]");
    Tunable tunable;
    tunable.name = e.key;
    for (const toml::node &v : a) {
      const std::int64_t value = asInteger(v, field, "an integer");
      if (std::find(tunable.values.begin(), tunable.values.end(), value) != tunable.values.end())
        fail(lineOf(v), field, "duplicate value " + std::to_string(value) + "; expected each value once");
      tunable.values.push_back(value);
    }
    tunableNames_.push_back(e.key);
    tunableSet_.insert(e.key);
    task.tunables.push_back(std::move(tunable));
  }
}

void ManifestReader::readTensors(const toml::table &root, Task &task) const {
  const char *const expected = "at least one [tensors.<name>] table";
  const toml::node &n = require(root, 0, "", "tensors", expected);
  const toml::table &t = asTable(n, "tensors", expected);
  const std::vector<Entry> entries = entriesInOrder(t);
  if (entries.empty()) fail(lineOf(n), "tensors", std::string("empty; expected ") + expected);
  std::map<std::string, std::string> stateOwners;  // state-dict key -> tensor
  std::map<int, std::string> drawOwners;           // draw -> tensor
  for (const Entry &e : entries) {
    Tensor tensor = readTensor(e, task);
    if (tensor.draw > 0) {
      const auto [owner, fresh] = drawOwners.emplace(tensor.draw, tensor.name);
      if (!fresh)
        fail(lineOf(*e.node->as_table()->get("draw")), "tensors." + tensor.name + ".draw",
             std::to_string(tensor.draw) + " is also the draw of tensor " + inQuotes(owner->second) +
                 "; expected each of forward's random calls once");
    }
    if (!tensor.state.empty()) {
      const auto [owner, fresh] = stateOwners.emplace(tensor.state, tensor.name);
      if (!fresh)
        fail(lineOf(*e.node->as_table()->get("state")), "tensors." + tensor.name + ".state",
             inQuotes(tensor.state) + " is also the state of tensor " + inQuotes(owner->second) +
                 "; expected each state-dict key once");
    }
    task.tensors.push_back(std::move(tensor));
  }
  int expectedDraw = 1;  // draws are 1, 2, ... K: forward's random calls in order, none left out
  for (const auto &[draw, name] : drawOwners) {
    if (draw != expectedDraw)
      fail(lineOf(*t.get(name)->as_table()->get("draw")), "tensors." + name + ".draw",
           std::to_string(draw) + " leaves out draw " + std::to_string(expectedDraw) +
               "; expected forward's random calls numbered 1, 2, ... in order, each given by one tensor");
    ++expectedDraw;
  }
  const bool hasOutput = std::any_of(task.tensors.begin(), task.tensors.end(),
                                     [](const Tensor &x) { return x.role != TensorRole::In; });
  if (!hasOutput)
    fail(entries.front().line, "tensors", "no output tensor; expected at least one tensor with role 'out' or 'inout'");
}

Tensor ManifestReader::readTensor(const Entry &entry, const Task &task) const {
  const std::string prefix = "tensors." + entry.key;
  if (!isIdentifier(entry.key))
    fail(entry.line, prefix, inQuotes(entry.key) + " is not a valid tensor name; expected " + kIdentifierRule);
  if (sizeSet_.count(entry.key))
    fail(entry.line, prefix, "clashes with the size " + inQuotes(entry.key) + "; expected a name that is not a size (" +
                                 join(sizeNames_) + ")");
  const toml::table &t = asTable(*entry.node, prefix, "a table ([" + prefix + "])");
  const int line = lineOf(t);
  checkKeys(t, prefix, {"dtype", "shape", "role", "init", "tolerance", "state", "draw"});

  Tensor tensor;
  tensor.name = entry.key;
  tensor.line = line;

  static const std::string dtypes = join(dtypeNames());
  const toml::node &dtypeNode = require(t, line, prefix, "dtype", "one of: " + dtypes);
  const std::string dtype = asString(dtypeNode, prefix + ".dtype", "one of: " + dtypes);
  const auto parsedType = dtypeFromName(dtype);
  if (!parsedType) fail(lineOf(dtypeNode), prefix + ".dtype", "unknown dtype " + inQuotes(dtype) + "; expected one of: " + dtypes);
  tensor.dtype = *parsedType;

  const std::string shapeField = prefix + ".shape";
  const toml::node &shapeNode =
      require(t, line, prefix, "shape", "an array of dimensions over the sizes, e.g. [\"rows\", \"cols\"] ([] for a scalar)");
  const toml::array &shape = asArray(shapeNode, shapeField, "an array of dimensions, e.g. [\"rows\", \"cols\"] ([] for a scalar)");
  std::vector<LocatedExpression> dims;
  for (const toml::node &d : shape) dims.push_back(expression(d, shapeField, Scope::Sizes));
  ElementCounts elements;
  for (const SizeConfig &config : task.configs) {
    const std::string context = "for configuration " + inQuotes(config.name);
    std::int64_t bytes = static_cast<std::int64_t>(dtypeSize(tensor.dtype));
    ConfigExtent extent{config.name};  // count never overflows: bytes = count * dtype size does not
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const LocatedExpression &d = dims[i];
      const std::int64_t v = evaluate(d, shapeField, config.values, context);
      requireRange(v, d, shapeField, context, 0, std::numeric_limits<std::int64_t>::max(), "a dimension");
      if (__builtin_mul_overflow(bytes, v, &bytes))
        fail(lineOf(shapeNode), shapeField, "the tensor's size in bytes overflows 64 bits " + context +
                                                "; expected smaller dimensions");
      extent.count *= v;
      if (i + 2 == dims.size()) extent.rows = v;
      if (i + 1 == dims.size() && dims.size() >= 2) extent.cols = v;
    }
    elements.push_back(std::move(extent));
  }
  for (LocatedExpression &d : dims) tensor.shape.push_back(std::move(d.expr));

  static const std::string roles = join(roleNames());
  const toml::node &roleNode = require(t, line, prefix, "role", "one of: " + roles);
  const std::string role = asString(roleNode, prefix + ".role", "one of: " + roles);
  const auto parsedRole = roleFromName(role);
  if (!parsedRole)
    fail(lineOf(roleNode), prefix + ".role",
         "unknown role " + inQuotes(role) + "; expected one of: " + roles);
  tensor.role = *parsedRole;
  const std::string roleText = "role " + inQuotes(role);

  const toml::node *init = t.get("init");
  if (tensor.role == TensorRole::Out) {
    if (init)
      fail(lineOf(*init), prefix + ".init", "not allowed for " + roleText +
                                                " (outputs are written by the kernel); expected no init");
  } else {
    if (!init) fail(line, prefix + ".init", "missing for " + roleText + "; expected " + kInitExample);
    if (const toml::array *list = init->as_array()) {
      if (list->empty()) fail(lineOf(*init), prefix + ".init", "an empty list; expected one generator or more, e.g. " + std::string(kInitExample));
      for (std::size_t i = 0; i < list->size(); ++i) {
        const Generator g = readInit(*list->get(i), prefix + ".init[" + std::to_string(i) + "]", tensor, elements);
        if (i == 0) tensor.init = g;
        else tensor.moreInits.push_back(g);
      }
    } else {
      tensor.init = readInit(*init, prefix + ".init", tensor, elements);
    }
  }

  const toml::node *tolerance = t.get("tolerance");
  if (tensor.role == TensorRole::In) {
    if (tolerance)
      fail(lineOf(*tolerance), prefix + ".tolerance",
           "not allowed for " + roleText + " (inputs are not compared); expected no tolerance");
  } else {
    if (!tolerance) {
      if (!dtypeIsFloating(tensor.dtype))
        fail(line, prefix + ".tolerance", "missing for " + roleText + "; expected \"exact\" (" +
                                              std::string(dtypeName(tensor.dtype)) + " outputs are compared exactly)");
      fail(line, prefix + ".tolerance", "missing for " + roleText + "; expected " + kToleranceExample);
    }
    tensor.tolerance = readTolerance(*tolerance, prefix + ".tolerance", tensor);
  }

  if (const toml::node *state = t.get("state")) {
    const std::string field = prefix + ".state";
    if (tensor.role != TensorRole::In)
      fail(lineOf(*state), field, "not allowed for " + roleText +
                                      " (module state is an input the module reads: role 'in'); expected no state");
    tensor.state = asString(*state, field, kStateExample);
    if (!isStateKey(tensor.state))
      fail(lineOf(*state), field, inQuotes(tensor.state) + " is not a state-dict key; expected " + kStateExample);
  }
  if (const toml::node *draw = t.get("draw")) {
    const std::string field = prefix + ".draw";
    const char *const expected = "the number of forward's random call it stands for (1 for the first torch.randn, "
                                 "torch.rand, torch.randint, torch.normal or _like call forward makes)";
    if (tensor.role != TensorRole::In)
      fail(lineOf(*draw), field, "not allowed for " + roleText + " (a random draw is an input: role 'in'); expected no draw");
    if (!tensor.state.empty())
      fail(lineOf(*draw), field, "given with state; expected one of the two (module state is loaded, a draw is "
                                 "handed to forward's random call)");
    const std::int64_t value = asInteger(*draw, field, expected);
    if (value < 1 || value > 100000) fail(lineOf(*draw), field, std::to_string(value) + " is out of range; expected " + expected);
    tensor.draw = static_cast<int>(value);
  }
  return tensor;
}

Generator ManifestReader::readInit(const toml::node &n, const std::string &field, const Tensor &tensor,
                                   const ElementCounts &elements) const {
  const toml::table &t = asTable(n, field, kInitExample);
  const int line = lineOf(t);
  static const std::string kinds = join(generatorKindNames());
  const toml::node &kindNode = require(t, line, field, "kind", "one of: " + kinds);
  const std::string kind = asString(kindNode, field + ".kind", "one of: " + kinds);
  const auto parsedKind = generatorKindFromName(kind);
  if (!parsedKind)
    fail(lineOf(kindNode), field + ".kind",
         "unknown generator " + inQuotes(kind) + "; expected one of: " + kinds);
  Generator g;
  g.kind = *parsedKind;

  const GeneratorParams names = generatorParameterNames(g.kind);
  const std::string aKey = names.first;
  const std::string bKey = names.second ? names.second : "";
  std::vector<std::string> needs{aKey};
  if (!bKey.empty()) needs.push_back(bKey);
  std::vector<std::string> allowed{"kind"};
  allowed.insert(allowed.end(), needs.begin(), needs.end());
  for (const char *k : {"seed_offset", "scale", "shift", "matrix", "diagonal"}) allowed.push_back(k);
  checkKeys(t, field, allowed);

  const std::string dtype(dtypeName(tensor.dtype));
  const bool floating = dtypeIsFloating(tensor.dtype);
  if (!floating && generatorDrawsReals(g.kind)) {
    std::vector<std::string_view> integral;
    for (std::string_view k : generatorKindNames())
      if (!generatorDrawsReals(*generatorKindFromName(k))) integral.push_back(k);
    fail(lineOf(kindNode), field + ".kind",
         inQuotes(kind) + " draws real numbers but tensor " + inQuotes(tensor.name) + " is " + dtype +
             "; expected " + joinOr(integral));
  }

  // A number of the generator: integers only for randint's bounds and for every number of an
  // integer or bool tensor (constant's value may be a boolean there).
  const auto numberAt = [&](const toml::node &v, const std::string &f, bool integral, bool allowBool) -> double {
    if (!integral && floating) return asNumber(v, f, "a number");
    std::int64_t i = 0;
    if (const auto *b = v.as_boolean(); b && allowBool)
      i = b->get() ? 1 : 0;
    else
      i = asInteger(v, f, std::string("an integer") + (integral ? "" : " (tensor " + inQuotes(tensor.name) + " is " + dtype + ")"));
    if (i < -kMaxExactInteger || i > kMaxExactInteger)
      fail(lineOf(v), f, "found " + std::to_string(i) + "; expected an integer within +/-2^53");
    return static_cast<double>(i);
  };
  const std::string params = kind + " needs " + join(needs, " and ");
  auto param = [&](const std::string &key, bool integral) -> double {
    const toml::node &v = require(t, line, field, key, std::string(integral ? "an integer" : "a number") + " (" + params + ")");
    return numberAt(v, field + "." + key, integral, g.kind == Generator::Kind::Constant);
  };

  g.a = param(aKey, g.kind == Generator::Kind::RandInt);
  if (!bKey.empty()) g.b = param(bKey, g.kind == Generator::Kind::RandInt);

  switch (g.kind) {
    case Generator::Kind::Uniform:
    case Generator::Kind::RandInt:
      if (!(g.a < g.b))
        fail(lineOf(*t.get("high")), field + ".high",
             "found low = " + number(g.a) + ", high = " + number(g.b) + "; expected low < high");
      break;
    case Generator::Kind::Normal:
      if (!(g.b > 0.0))
        fail(lineOf(*t.get("std")), field + ".std", "found " + number(g.b) + "; expected a standard deviation > 0");
      break;
    default:
      break;
  }

  // x = draw * scale + shift (core/eval/input_generator.h).
  if (const toml::node *v = t.get("scale")) {
    g.scale = numberAt(*v, field + ".scale", false, false);
    if (g.scale == 0.0)
      fail(lineOf(*v), field + ".scale",
           "found 0; expected a nonzero number (every value would be the shift: use kind = \"constant\")");
  }
  if (const toml::node *v = t.get("shift")) g.shift = numberAt(*v, field + ".shift", false, false);
  const bool transforms = generatorScalesOrShifts(g);
  const auto mapped = [&](double v) { return transforms ? v * g.scale + g.shift : v; };
  const std::string afterText =
      transforms ? " after scale " + number(g.scale) + " and shift " + number(g.shift) : std::string();

  // The generated values must fit the dtype: integers exactly, real numbers within its finite range.
  const ValueRange range = valueRange(tensor.dtype);
  const std::string rangeText = "[" + number(range.lo) + ", " + number(range.hi) + "]";
  const auto fits = [&](double v) { return v >= range.lo && v <= range.hi; };
  // "300" or "300 (600 after scale 2 and shift 0)"
  const auto shown = [&](double v) {
    return transforms ? number(v) + " (" + number(mapped(v)) + afterText + ")" : number(v);
  };
  const auto requireFits = [&](const std::string &key, double v) {
    if (!fits(mapped(v)))
      fail(lineOf(*t.get(key)), field + "." + key,
           "found " + shown(v) + ", which does not fit " + dtype + "; expected a value in " + rangeText);
  };
  switch (g.kind) {
    case Generator::Kind::Uniform:
      requireFits(aKey, g.a);
      requireFits(bKey, g.b);
      break;
    case Generator::Kind::Normal:
      requireFits(aKey, g.a);
      if (g.b * std::fabs(g.scale) > range.hi)
        fail(lineOf(*t.get(bKey)), field + "." + bKey,
             "found " + number(g.b) + (transforms ? " (" + number(g.b * std::fabs(g.scale)) + afterText + ")" : "") +
                 ", which does not fit " + dtype + "; expected a standard deviation <= " + number(range.hi));
      break;
    case Generator::Kind::RandInt:
      if (!fits(mapped(g.a)) || !fits(mapped(g.b - 1)))
        fail(line, field,
             "randint draws from [" + number(g.a) + ", " + number(g.b - 1) + "]" +
                 (transforms ? " (from " + number(mapped(g.a)) + " to " + number(mapped(g.b - 1)) + afterText + ")" : "") +
                 ", which does not fit " + dtype + "; expected values in " + rangeText);
      break;
    case Generator::Kind::Constant:
      requireFits(aKey, g.a);
      break;
    case Generator::Kind::Arange:
      // start, start + step, ..., start + step * (n - 1) for the n elements of every configuration.
      requireFits(aKey, g.a);
      for (const ConfigExtent &e : elements) {
        if (e.count < 1) continue;
        double last = 0.0;
        bool ok = true;
        if (floating) {
          const long double l = static_cast<long double>(g.a) + static_cast<long double>(g.b) * (e.count - 1);
          last = static_cast<double>(l);
          ok = transforms ? fits(mapped(last)) : l >= range.lo && l <= range.hi;
        } else {
          // Exact in 64 bits; beyond them it fits no integer dtype.
          std::int64_t product = 0, l = 0;
          const bool overflows =
              __builtin_mul_overflow(static_cast<std::int64_t>(g.b), e.count - 1, &product) ||
              __builtin_add_overflow(static_cast<std::int64_t>(g.a), product, &l);
          last = overflows ? g.a + g.b * static_cast<double>(e.count - 1) : static_cast<double>(l);
          ok = !overflows && (transforms ? fits(mapped(last))
                                         : l >= static_cast<std::int64_t>(range.lo) &&
                                               l <= static_cast<std::int64_t>(range.hi));
        }
        if (!ok)
          fail(line, field,
               "arange runs from " + number(g.a) + " to " + number(last) + " over " + std::to_string(e.count) +
                   " elements for configuration " + inQuotes(e.config) +
                   (transforms ? " (from " + number(mapped(g.a)) + " to " + number(mapped(last)) + afterText + ")" : "") +
                   ", which does not fit " + dtype + "; expected values in " + rangeText);
      }
      break;
  }

  if (const toml::node *m = t.get("matrix")) {
    const std::string f = field + ".matrix";
    const std::string what = "\"symmetric\", \"upper\" or \"lower\" (a structure over the last two dimensions)";
    const std::string name = asString(*m, f, what);
    const auto parsed = generatorMatrixFromName(name);
    if (!parsed || *parsed == Generator::Matrix::None)
      fail(lineOf(*m), f, "unknown matrix structure " + inQuotes(name) + "; expected " + what);
    g.matrix = *parsed;
    if (tensor.shape.size() < 2)
      fail(lineOf(*m), f,
           "tensor " + inQuotes(tensor.name) + " has " + std::to_string(tensor.shape.size()) +
               (tensor.shape.size() == 1 ? " dimension" : " dimensions") +
               "; expected a tensor of at least 2 (the structure is over the last two: rows, columns)");
    if (g.matrix == Generator::Matrix::Symmetric)
      for (const ConfigExtent &e : elements)
        if (e.rows != e.cols)
          fail(lineOf(*m), f,
               "symmetric needs square matrices, but tensor " + inQuotes(tensor.name) + " is " +
                   std::to_string(e.rows) + " x " + std::to_string(e.cols) + " in its last two dimensions for configuration " +
                   inQuotes(e.config) + "; expected them equal in every configuration");
  }
  if (const toml::node *d = t.get("diagonal")) {
    if (g.matrix != Generator::Matrix::Upper && g.matrix != Generator::Matrix::Lower)
      fail(lineOf(*d), field + ".diagonal",
           "given without matrix = \"upper\" or \"lower\"; expected it only with a triangular structure");
    g.diagonal = asInteger(*d, field + ".diagonal", "an integer (0: the main diagonal, 1: the one above it, -1: below)");
  }

  if (const toml::node *s = t.get("seed_offset")) {
    const std::int64_t v = asInteger(*s, field + ".seed_offset", "a non-negative integer");
    if (v < 0) fail(lineOf(*s), field + ".seed_offset", "found " + std::to_string(v) + "; expected a non-negative integer");
    g.seedOffset = static_cast<std::uint64_t>(v);
  }
  return g;
}

Tolerance ManifestReader::readTolerance(const toml::node &n, const std::string &field, const Tensor &tensor) const {
  Tolerance tol;
  if (const auto *s = n.as_string()) {
    if (s->get() != "exact") fail(lineOf(n), field, "found " + inQuotes(s->get()) + "; expected " + kToleranceExample);
    tol.exact = true;
    return tol;
  }
  const auto *t = n.as_table();
  if (!t) fail(lineOf(n), field, "found " + typeName(n) + "; expected " + kToleranceExample);
  if (!dtypeIsFloating(tensor.dtype))
    fail(lineOf(n), field, std::string(dtypeName(tensor.dtype)) + " outputs are compared exactly; expected \"exact\"");
  checkKeys(*t, field, {"rtol", "atol"});
  if (t->empty()) fail(lineOf(n), field, "empty; expected rtol, atol or both, e.g. { rtol = 1e-5, atol = 1e-7 }");
  auto read = [&](const char *key, double &out) {
    if (const toml::node *v = t->get(key)) {
      const std::string f = field + "." + key;
      out = asNumber(*v, f, "a number >= 0");
      if (out < 0) fail(lineOf(*v), f, "found " + number(out) + "; expected a number >= 0");
    }
  };
  read("rtol", tol.rtol);
  read("atol", tol.atol);
  return tol;
}

LaunchSource ManifestReader::readLaunch(const toml::table &t, int tableLine, const std::string &prefix, Scope scope,
                                        const Task &task, bool withSource, fs::path *source,
                                        const LaunchSource *base) const {
  std::vector<std::string> allowed;
  if (withSource) allowed = {"source", "python", "init", "forward", "module_constants"};
  for (const char *k : {"kernel", "grid", "block", "shared_bytes", "args"}) allowed.push_back(k);
  checkKeys(t, prefix, allowed);

  LaunchSource out;
  if (base) out = *base;  // the fields this table does not give
  out.prefix = prefix;
  out.tableLine = tableLine;
  if (withSource) {
    const toml::node &s = require(t, tableLine, prefix, "source", "the reference source file, e.g. source = \"reference.cu\"");
    *source = sourceFile(s, prefix + ".source", "the reference source file");
  }

  if (const toml::node *k = t.get("kernel"); k || !base) {
    if (!k) k = &require(t, tableLine, prefix, "kernel", "the kernel function's name, e.g. kernel = \"softmax\"");
    out.launch.kernel = asString(*k, prefix + ".kernel", "the kernel function's name (a string)");
    if (!isIdentifier(out.launch.kernel))
      fail(lineOf(*k), prefix + ".kernel",
           inQuotes(out.launch.kernel) + " is not a valid kernel name; expected " + kIdentifierRule);
  }

  const std::string dims = "1 to 3 dimensions (x, y, z)";
  if (const toml::node *g = t.get("grid"); g || !base) {
    if (!g) g = &require(t, tableLine, prefix, "grid", dims + ", e.g. grid = [\"ceil_div(rows, 256)\"]");
    out.grid = expressionList(*g, prefix + ".grid", scope, 1, 3, dims);
  }
  if (const toml::node *b = t.get("block"); b || !base) {
    if (!b) b = &require(t, tableLine, prefix, "block", dims + ", e.g. block = [256]");
    out.block = expressionList(*b, prefix + ".block", scope, 1, 3, dims);
    out.blockLine = lineOf(*b);
  }
  if (const toml::node *s = t.get("shared_bytes"))
    out.shared = expression(*s, prefix + ".shared_bytes", scope);
  else if (!base)
    out.shared = {Expression::constant(0), tableLine};
  out.launch.grid.clear();
  out.launch.block.clear();
  for (const auto &e : out.grid) out.launch.grid.push_back(e.expr);
  for (const auto &e : out.block) out.launch.block.push_back(e.expr);
  out.launch.sharedBytes = out.shared.expr;

  // Args: tensors (each exactly once), sizes and parameters, in the kernel's parameter order.
  const toml::node *a = t.get("args");
  if (!a && base) return out;
  std::vector<std::string> tensorNames;
  for (const Tensor &x : task.tensors) tensorNames.push_back(x.name);
  const std::string field = prefix + ".args";
  std::string known = "a tensor (" + join(tensorNames) + ") or a size (" + join(sizeNames_) + ")";
  if (!paramNames_.empty()) known += " or a parameter (" + join(paramNames_) + ")";
  if (!a) a = &require(t, tableLine, prefix, "args", "the kernel's arguments in order, e.g. args = [\"x\", \"y\", \"rows\"]");
  const toml::array &args = asArray(*a, field, "an array of tensor, size and parameter names");
  std::set<std::string> seen;
  out.launch.args.clear();
  for (const toml::node &e : args) {
    const std::string name = asString(e, field, "a tensor, size or parameter name (a string)");
    if (task.tensor(name)) {
      if (!seen.insert(name).second)
        fail(lineOf(e), field, "tensor " + inQuotes(name) + " appears twice; expected each tensor exactly once");
    } else if (!sizeSet_.count(name) && !paramSet_.count(name)) {
      if (tunableSet_.count(name))
        fail(lineOf(e), field, inQuotes(name) + " is a tunable (compiled in as -D" + name + "=...); expected " + known);
      fail(lineOf(e), field, "unknown name " + inQuotes(name) + "; expected " + known);
    }
    out.launch.args.push_back(name);
  }
  for (const std::string &name : tensorNames)
    if (!seen.count(name))
      fail(lineOf(*a), field, "tensor " + inQuotes(name) + " is missing; expected every tensor exactly once (" +
                                  join(tensorNames) + ")");
  return out;
}

void ManifestReader::checkLaunchPoint(const LaunchSource &l, const Values &values, const std::string &context) const {
  static constexpr std::array<std::int64_t, 3> gridMax{2147483647, 65535, 65535};
  static constexpr std::array<std::int64_t, 3> blockMax{1024, 1024, 64};
  static const char *const axis[3] = {"x", "y", "z"};
  for (std::size_t i = 0; i < l.grid.size(); ++i) {
    const std::int64_t v = evaluate(l.grid[i], l.prefix + ".grid", values, context);
    requireRange(v, l.grid[i], l.prefix + ".grid", context, 1, gridMax[i], std::string("grid ") + axis[i]);
  }
  std::int64_t threads = 1;
  std::string product;
  for (std::size_t i = 0; i < l.block.size(); ++i) {
    const std::int64_t v = evaluate(l.block[i], l.prefix + ".block", values, context);
    requireRange(v, l.block[i], l.prefix + ".block", context, 1, blockMax[i], std::string("block ") + axis[i]);
    threads *= v;  // at most 1024 * 1024 * 64: no overflow
    product += (i ? " x " : "") + std::to_string(v);
  }
  if (threads > 1024)
    fail(l.blockLine, l.prefix + ".block",
         product + " = " + std::to_string(threads) + " threads per block " + context + "; expected at most 1024");
  const std::int64_t shared = evaluate(l.shared, l.prefix + ".shared_bytes", values, context);
  // The launch API takes an unsigned int (issue 17, 6: 2^63 - 1 validated and printed negative).
  requireRange(shared, l.shared, l.prefix + ".shared_bytes", context, 0, std::numeric_limits<std::uint32_t>::max(),
               "a byte count");
}

void ManifestReader::checkLaunch(const LaunchSource &l, const Task &task, bool withTunables,
                                 const SizeConfig *only) const {
  // The tunables the launch actually uses, in declaration order.
  std::vector<const Tunable *> used;
  if (withTunables) {
    std::set<std::string> ids;
    auto add = [&](const LocatedExpression &e) {
      for (const auto &id : e.expr.identifiers()) ids.insert(id);
    };
    for (const auto &e : l.grid) add(e);
    for (const auto &e : l.block) add(e);
    add(l.shared);
    for (const Tunable &t : task.tunables)
      if (ids.count(t.name)) used.push_back(&t);
  }
  // The whole space of the used tunables is checked when it is small; otherwise only its first point.
  std::size_t space = 1;
  for (const Tunable *t : used) {
    space = space > kMaxTunablePoints ? space : space * t->values.size();
  }
  const bool everyPoint = space <= kMaxTunablePoints;

  for (const SizeConfig &config : task.configs) {
    if (only && only != &config) continue;
    std::vector<std::size_t> index(used.size(), 0);
    for (;;) {
      Values values = config.values;
      std::string context = "for configuration " + inQuotes(config.name);
      for (std::size_t i = 0; i < used.size(); ++i) {
        const std::int64_t v = used[i]->values[index[i]];
        values[used[i]->name] = v;
        context += (i ? ", " : " with ") + used[i]->name + "=" + std::to_string(v);
      }
      checkLaunchPoint(l, values, context);
      if (!everyPoint) break;
      std::size_t i = 0;
      for (; i < used.size(); ++i) {
        if (++index[i] < used[i]->values.size()) break;
        index[i] = 0;
      }
      if (i == used.size()) break;
    }
  }
}

void ManifestReader::readParams(const toml::table &root, Task &task) {
  const toml::node *n = root.get("params");
  if (!n) return;
  const toml::table &t = asTable(*n, "params", "a [params] table of NAME = value, e.g. eps = 1e-5");
  std::vector<std::string> tensorNames;
  if (const toml::node *tensors = root.get("tensors"); tensors && tensors->is_table())
    for (const Entry &e : entriesInOrder(*tensors->as_table())) tensorNames.push_back(e.key);
  const std::string expected =
      "a number (an integer: i64; a real: f32), a boolean, or { value = ..., dtype = \"i64\"|\"i32\"|\"f32\"|\"f64\" }";
  for (const Entry &e : entriesInOrder(t)) {
    const std::string field = "params." + e.key;
    if (!isIdentifier(e.key))
      fail(e.line, field, inQuotes(e.key) + " is not a valid parameter name; expected " + kIdentifierRule);
    if (sizeSet_.count(e.key) || tunableSet_.count(e.key) ||
        std::find(tensorNames.begin(), tensorNames.end(), e.key) != tensorNames.end())
      fail(e.line, field,
           "clashes with the " + std::string(sizeSet_.count(e.key) ? "size" : tunableSet_.count(e.key) ? "tunable" : "tensor") +
               " " + inQuotes(e.key) + "; expected a name of its own");
    Param p;
    p.name = e.key;
    p.line = e.line;
    const toml::node *v = e.node;
    std::optional<DType> dtype;
    if (const auto *tbl = v->as_table()) {
      checkKeys(*tbl, field, {"value", "dtype"});
      v = &require(*tbl, e.line, field, "value", expected);
      if (const toml::node *d = tbl->get("dtype")) {
        const std::string name = asString(*d, field + ".dtype", "\"i64\", \"i32\", \"f32\" or \"f64\"");
        dtype = dtypeFromName(name);
        if (!dtype || (*dtype != DType::I64 && *dtype != DType::I32 && *dtype != DType::F32 && *dtype != DType::F64))
          fail(lineOf(*d), field + ".dtype", "found " + inQuotes(name) + "; expected \"i64\", \"i32\", \"f32\" or \"f64\"");
      }
    }
    if (const auto *i = v->as_integer()) {
      p.dtype = dtype.value_or(DType::I64);
      p.integer = i->get();
      p.real = static_cast<double>(p.integer);
    } else if (const auto *b = v->as_boolean()) {
      p.dtype = dtype.value_or(DType::I64);
      p.integer = b->get() ? 1 : 0;
      p.real = static_cast<double>(p.integer);
    } else if (const auto *f = v->as_floating_point()) {
      p.dtype = dtype.value_or(DType::F32);
      p.real = f->get();
      if (p.isInteger())
        fail(lineOf(*v), field, "found " + number(p.real) + " for an integer dtype; expected an integer");
      if (!std::isfinite(p.real)) fail(lineOf(*v), field, "found " + number(p.real) + "; expected a finite number");
    } else {
      fail(lineOf(*v), field, "found " + typeName(*v) + "; expected " + expected);
    }
    if (p.dtype == DType::I32 && (p.integer < std::numeric_limits<std::int32_t>::min() ||
                                  p.integer > std::numeric_limits<std::int32_t>::max()))
      fail(lineOf(*v), field, "found " + std::to_string(p.integer) + "; expected a value an i32 holds");
    paramNames_.push_back(p.name);
    paramSet_.insert(p.name);
    if (p.isInteger()) {
      intParamSet_.insert(p.name);
      for (SizeConfig &config : task.configs) config.values[p.name] = p.integer;
    }
    task.params.push_back(p);
  }
}

void ManifestReader::readReference(const toml::table &root, Task &task, LaunchSource &reference) const {
  const toml::node &refNode = require(root, 0, "", "reference",
                                      "a [reference] table with source, kernel, grid, block and args (a CUDA "
                                      "reference), or python (a PyTorch module)");
  const toml::table &ref = asTable(refNode, "reference", "a [reference] table");
  if (const toml::node *py = ref.get("python"))
    task.reference.python = sourceFile(*py, "reference.python", "the PyTorch module's file, e.g. python = \"reference.py\"");
  if (const toml::node *init = ref.get("init")) {
    if (task.reference.python.empty())
      fail(lineOf(*init), "reference.init", "given without reference.python; expected it only with a PyTorch module");
    const toml::array &a = asArray(*init, "reference.init", "an array of parameter and size names, e.g. [\"dim\"]");
    std::vector<std::string> names;
    for (const toml::node &e : a) {
      const std::string name = asString(e, "reference.init", "a parameter or size name (a string)");
      if (!paramSet_.count(name) && !sizeSet_.count(name))
        fail(lineOf(e), "reference.init",
             "unknown name " + inQuotes(name) + "; expected a parameter ([params]" +
                 (paramNames_.empty() ? std::string(": there are none") : ": " + join(paramNames_)) + ") or a size (" +
                 join(sizeNames_) + ")");
      names.push_back(name);
    }
    task.reference.init = names;
  }
  if (const toml::node *forward = ref.get("forward")) readForward(*forward, task);
  if (const toml::node *constants = ref.get("module_constants")) {
    const std::string field = "reference.module_constants";
    if (task.reference.python.empty())
      fail(lineOf(*constants), field, "given without reference.python; expected it only with a PyTorch module");
    const toml::array &a = asArray(*constants, field, "an array of size names, e.g. [\"batch_size\"]");
    std::set<std::string> seen;
    for (const toml::node &e : a) {
      const std::string name = asString(e, field, "a size or integer parameter name (a string)");
      const bool integerParam = paramSet_.count(name) && task.param(name) && task.param(name)->isInteger();
      if (!sizeSet_.count(name) && !integerParam)
        fail(lineOf(e), field,
             "unknown name " + inQuotes(name) + "; expected a size (" + join(sizeNames_) + ") or an integer parameter");
      if (!isIdentifier(name) || !seen.insert(name).second)
        fail(lineOf(e), field, inQuotes(name) + " appears twice; expected each name once");
      task.reference.moduleConstants.push_back(name);
    }
  }
  if (ref.get("source") || task.reference.python.empty()) {
    reference = readLaunch(ref, lineOf(ref), "reference", Scope::Sizes, task, true, &task.reference.source);
    task.reference.launch = reference.launch;
    checkLaunch(reference, task, false);
    return;
  }
  for (const char *k : {"kernel", "grid", "block", "shared_bytes", "args"})
    if (const toml::node *n = ref.get(k))
      fail(lineOf(*n), std::string("reference.") + k,
           "given without reference.source; expected the CUDA source its kernel is in, or none of kernel, grid, "
           "block, shared_bytes and args for a PyTorch-only reference");
  checkKeys(ref, "reference", {"python", "init", "forward", "module_constants", "source"});
}

void ManifestReader::readForward(const toml::node &n, Task &task) const {
  const std::string field = "reference.forward";
  if (task.reference.python.empty())
    fail(lineOf(n), field, "given without reference.python; expected it only with a PyTorch module");
  // What forward may take: in and inout tensors without state or draw (each exactly once), and parameters.
  std::vector<std::string> tensors;
  for (const Tensor &t : task.tensors)
    if (t.role != TensorRole::Out && !t.givenToModule()) tensors.push_back(t.name);
  std::string allowedText = "an in or inout tensor without state or draw (" +
                            (tensors.empty() ? std::string("there are none") : join(tensors)) + ")";
  if (!paramNames_.empty()) allowedText += " or a parameter (" + join(paramNames_) + ")";
  const toml::array &a =
      asArray(n, field, "an array of forward's arguments in order, tensor and parameter names, e.g. [\"x\", \"alpha\"]");
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const toml::node &e : a) {
    const std::string name = asString(e, field, "a tensor or parameter name (a string)");
    const Tensor *t = task.tensor(name);
    if (t && !t->state.empty())
      fail(lineOf(e), field,
           "tensor " + inQuotes(name) + " is module state (state = \"" + t->state +
               "\"), loaded into the module, not passed to forward; expected " + allowedText);
    if (t && t->draw > 0)
      fail(lineOf(e), field,
           "tensor " + inQuotes(name) + " is forward's random draw " + std::to_string(t->draw) +
               ", handed to that random call, not passed to forward; expected " + allowedText);
    if (t && t->role == TensorRole::Out)
      fail(lineOf(e), field, "tensor " + inQuotes(name) + " is an output (forward returns it); expected " + allowedText);
    if (!t && !paramSet_.count(name)) fail(lineOf(e), field, "unknown name " + inQuotes(name) + "; expected " + allowedText);
    if (!seen.insert(name).second)
      fail(lineOf(e), field, inQuotes(name) + " appears twice; expected each name once");
    names.push_back(name);
  }
  for (const std::string &name : tensors)
    if (!seen.count(name))
      fail(lineOf(n), field,
           "tensor " + inQuotes(name) + " is missing; expected every in and inout tensor without state or draw exactly once (" +
               join(tensors) + ")");
  task.reference.forward = names;
}

void ManifestReader::checkStateHasModule(const toml::table &root, const Task &task) const {
  if (!task.reference.python.empty()) return;
  for (const Tensor &t : task.tensors) {
    if (!t.givenToModule()) continue;
    const char *const key = t.state.empty() ? "draw" : "state";
    const toml::node *node = root.get("tensors")->as_table()->get(t.name)->as_table()->get(key);
    if (t.state.empty())
      fail(lineOf(*node), "tensors." + t.name + ".draw",
           "a random draw is handed to a PyTorch module's forward, and the task has none; expected [reference] "
           "python = \"MODULE.py\" (whose forward draws random tensors), or no draw");
    fail(lineOf(*node), "tensors." + t.name + ".state",
         "module state needs a PyTorch reference to load it into, and the task has none; expected [reference] "
         "python = \"MODULE.py\" (whose Model has the state-dict key " + inQuotes(t.state) + "), or no state");
  }
}

void ManifestReader::readConfigLaunches(const toml::table &root, Task &task, const LaunchSource *reference,
                                        const LaunchSource *launch) const {
  const toml::array &a = *root.get("configs")->as_array();  // readConfigs checked it
  for (std::size_t i = 0; i < a.size(); ++i) {
    const toml::table &t = *a[i].as_table();
    for (const bool candidate : {true, false}) {
      const std::string key = candidate ? "launch" : "reference_launch";
      const toml::node *n = t.get(key);
      if (!n) continue;
      const std::string prefix = "configs[" + std::to_string(i) + "]." + key;
      const toml::table &lt = asTable(*n, prefix,
                                      "an inline table of the launch fields that differ for this configuration, e.g. "
                                      "{ kernel = \"split\", grid = [\"rows * 64\"] }");
      const LaunchSource *base = candidate && launch ? launch : reference;
      if (!base)
        fail(lineOf(*n), prefix,
             "the reference is a PyTorch module, which launches nothing; expected no reference_launch");
      const LaunchSource l = readLaunch(lt, lineOf(*n), prefix, candidate ? Scope::SizesAndTunables : Scope::Sizes,
                                        task, false, nullptr, base);
      SizeConfig &config = task.configs[i];
      checkLaunch(l, task, candidate, &config);
      (candidate ? config.launch : config.referenceLaunch) = l.launch;
    }
  }
}

void ManifestReader::readCost(const toml::table &root, Task &task) const {
  const toml::node &n = require(root, 0, "", "cost", "a [cost] table with flops and bytes");
  const toml::table &t = asTable(n, "cost", "a [cost] table with flops and bytes");
  const int line = lineOf(t);
  checkKeys(t, "cost", {"flops", "bytes"});
  const toml::node &f = require(t, line, "cost", "flops", "the FLOP count over the sizes, e.g. flops = \"2 * M * N * K\"");
  const LocatedExpression flops = expression(f, "cost.flops", Scope::Sizes);
  const toml::node &b = require(t, line, "cost", "bytes", "the bytes moved over the sizes, e.g. bytes = \"4 * (M * K + K * N + M * N)\"");
  const LocatedExpression bytes = expression(b, "cost.bytes", Scope::Sizes);
  for (const SizeConfig &config : task.configs) {
    const std::string context = "for configuration " + inQuotes(config.name);
    const auto max = std::numeric_limits<std::int64_t>::max();
    requireRange(evaluate(flops, "cost.flops", config.values, context), flops, "cost.flops", context, 0, max, "a count");
    requireRange(evaluate(bytes, "cost.bytes", config.values, context), bytes, "cost.bytes", context, 0, max, "a count");
  }
  task.flops = flops.expr;
  task.bytes = bytes.expr;
}

void ManifestReader::readEditor(const toml::table &root, Task &task) const {
  const toml::node *n = root.get("editor");
  if (!n) return;
  const toml::table &t = asTable(*n, "editor", "an [editor] table");
  checkKeys(t, "editor", {"starter"});
  if (const toml::node *s = t.get("starter"))
    task.starter = sourceFile(*s, "editor.starter", "the source a user starts editing from");
}

void ManifestReader::readConstraints(const toml::table &root, Task &task) const {
  const toml::node *n = root.get("constraints");
  if (!n) return;
  const std::string what = "an array of comparisons over sizes and tunables, e.g. [\"N % 128 == 0\", \"dim <= 32768\"]";
  const toml::array &a = asArray(*n, "constraints", what);
  std::map<std::string, std::int64_t> first;
  for (const Tunable &t : task.tunables) first[t.name] = t.values.front();
  for (const toml::node &e : a) {
    const std::string text = asString(e, "constraints", "a comparison (a string), e.g. \"N % 128 == 0\"");
    Constraint c;
    try {
      c = parseConstraint(text);
    } catch (const ExpressionError &err) {
      fail(lineOf(e), "constraints", "invalid constraint " + quotedExpression(text) + ": " + err.what());
    }
    c.line = lineOf(e);
    for (const Expression *side : {&c.lhs, &c.rhs})
      for (const std::string &id : side->identifiers())
        if (!sizeSet_.count(id) && !tunableSet_.count(id) && !intParamSet_.count(id)) {
          std::string msg = "unknown name " + inQuotes(id) + " in " + quotedExpression(text) + "; known sizes: " + join(sizeNames_);
          if (!tunableNames_.empty()) msg += "; known tunables: " + join(tunableNames_);
          fail(c.line, "constraints", msg);
        }
    task.constraints.push_back(c);
  }
  // Every configuration meets them (with the tunables' first values, what runs by default).
  for (const SizeConfig &config : task.configs) {
    auto values = config.values;
    values.insert(first.begin(), first.end());
    for (const Constraint &c : task.constraints) {
      if (const auto broken = c.brokenBy(values))
        fail(c.line, "constraints",
             "configuration " + inQuotes(config.name) + " breaks it: " + *broken +
                 "; expected every configuration (with the tunables' first values) to meet every constraint");
    }
  }
}

void ManifestReader::readExport(const toml::table &root, Task &task) const {
  const toml::node *n = root.get("export");
  if (!n) return;
  const toml::table &t = asTable(*n, "export", "an [export] table");
  checkKeys(t, "export", {"torch"});
  if (const toml::node *e = t.get("torch")) {
    const std::string what = "the PyTorch operation the kernel replaces, a Python expression over the tensors and sizes, "
                             "e.g. \"torch.softmax(x, dim=1)\"";
    task.torchEquivalent = asString(*e, "export.torch", what);
    if (task.torchEquivalent.empty() || task.torchEquivalent.size() > 1000 ||
        task.torchEquivalent.find('\n') != std::string::npos)
      fail(lineOf(*e), "export.torch", "expected " + what + " on one line, at most 1000 characters");
  }
}


Lineage ManifestReader::readLineage(const std::string &text, const Task &task) {
  toml::table root;
  if (const auto shape = checkTomlShape(text)) fail(shape->line, "", shape->message);
  try {
    root = toml::parse(text, std::string_view(path_));
  } catch (const toml::parse_error &e) {
    fail(std::max(1, lineOf(e.source())), "", "TOML syntax error: " + std::string(e.description()));
  }
  sizeNames_ = task.sizeNames;
  sizeSet_ = {task.sizeNames.begin(), task.sizeNames.end()};
  for (const Tunable &t : task.tunables) {
    tunableNames_.push_back(t.name);
    tunableSet_.insert(t.name);
  }
  checkKeys(root, "", {"step"});
  const toml::node &stepsNode = require(root, 0, "", "step", "one or more [[step]] tables, naive first");
  const toml::array &steps = asArray(stepsNode, "step", "[[step]] tables (an array of tables)");
  if (steps.empty()) fail(lineOf(stepsNode), "step", "empty; expected at least one [[step]]");

  Lineage lineage;
  lineage.folder = folder_;
  lineage.manifestPath = folder_ / kLineageFileName;
  std::set<std::string> files;
  for (const toml::node &n : steps) {
    LineageStep step;
    step.index = static_cast<int>(lineage.steps.size()) + 1;
    const std::string prefix = "step[" + std::to_string(step.index) + "]";
    const toml::table &t = asTable(n, prefix, "a [[step]] table with file and title");
    step.line = lineOf(t);
    checkKeys(t, prefix, {"file", "title", "launch", "tunables", "risks"});
    const toml::node &f = require(t, step.line, prefix, "file", "the step's source, e.g. file = \"01-naive.cu\"");
    const fs::path rel = sourceFile(f, prefix + ".file", "the step's source file");
    if (!files.insert(rel.lexically_normal().string()).second)
      fail(lineOf(f), prefix + ".file", inQuotes(rel.string()) + " is listed twice; expected each file once");
    step.file = folder_ / rel;
    const toml::node &title = require(t, step.line, prefix, "title", "the optimization the step adds, e.g. title = \"shared-memory tiling\"");
    step.title = asString(title, prefix + ".title", "a few words (a string)");
    if (step.title.empty()) fail(lineOf(title), prefix + ".title", "empty; expected the optimization the step adds");

    if (const toml::node *rn = t.get("risks")) {
      const toml::array &a = asArray(*rn, prefix + ".risks", "an array of sentences, e.g. [\"taking X out broke it\"]");
      for (const toml::node &e : a) step.risks.push_back(asString(e, prefix + ".risks", "a sentence (a string)"));
    }
    if (const toml::node *tn = t.get("tunables")) {
      const toml::table &tt = asTable(*tn, prefix + ".tunables", "a table of NAME = value");
      for (const Entry &e : entriesInOrder(tt)) {
        const std::string field = prefix + ".tunables." + e.key;
        if (!tunableSet_.count(e.key))
          fail(e.line, field, "the task declares no tunable " + inQuotes(e.key) + "; expected one of: " +
                                  (tunableNames_.empty() ? std::string("(none)") : join(tunableNames_)));
        const std::int64_t value = asInteger(*e.node, field, "an integer");
        const Tunable *declared = nullptr;
        for (const Tunable &tu : task.tunables)
          if (tu.name == e.key) declared = &tu;
        if (std::find(declared->values.begin(), declared->values.end(), value) == declared->values.end()) {
          std::string listed;
          for (auto v : declared->values) listed += (listed.empty() ? "" : ", ") + std::to_string(v);
          fail(lineOf(*e.node), field, std::to_string(value) + " is not one of the task's values; expected one of: " + listed);
        }
        step.tunables[e.key] = value;
      }
    }
    if (const toml::node *ln = t.get("launch")) {
      const toml::table &lt = asTable(*ln, prefix + ".launch", "a launch table like the task's [launch]");
      LaunchSource l = readLaunch(lt, lineOf(lt), prefix + ".launch", Scope::SizesAndTunables, task, false, nullptr);
      for (const SizeConfig &config : task.configs) {
        Values values = config.values;
        for (const Tunable &tu : task.tunables) values[tu.name] = tu.values.front();
        for (const auto &[name, v] : step.tunables) values[name] = v;
        checkLaunchPoint(l, values, "for configuration " + inQuotes(config.name));
      }
      step.launch = l.launch;
    }
    lineage.steps.push_back(std::move(step));
  }
  return lineage;
}

}  // namespace

Task parseManifest(const std::string &text, const std::string &displayPath, const std::filesystem::path &folder) {
  return ManifestReader(displayPath, folder).read(text);
}

Task loadTask(const std::filesystem::path &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string shown = path.string();
  // exists() is false for a path it may not look into too: say which (issue 17, 6).
  const auto cannotLook = [&](const fs::path &p) {
    return ManifestError(p.string(), 0, "", "cannot be read: " + ec.message());
  };
  if (!fs::exists(path, ec)) {
    if (ec && ec != std::errc::no_such_file_or_directory) throw cannotLook(path);
    throw ManifestError(shown, 0, "", "no such file or folder");
  }
  fs::path folder;
  fs::path manifest;
  if (fs::is_directory(path, ec)) {
    folder = path;
    manifest = path / kManifestFileName;
    if (!fs::exists(manifest, ec)) {
      if (ec && ec != std::errc::no_such_file_or_directory) throw cannotLook(manifest);
      if (::access(path.c_str(), R_OK | X_OK) != 0)
        throw ManifestError(shown, 0, "", std::string("cannot be read: ") + std::strerror(errno));
      throw ManifestError(shown, 0, "", std::string("no ") + kManifestFileName + " in this folder");
    }
  } else {
    manifest = path;
    folder = path.parent_path();
    if (folder.empty()) folder = ".";
  }
  const std::string display = manifest.string();
  if (!fs::is_regular_file(manifest, ec)) throw ManifestError(display, 0, "", "not a regular file; expected a task manifest");
  std::string text;
  try {
    text = readManifestText(manifest);  // regular, at most TomlShapeLimits::maxBytes
  } catch (const SourceFileError &e) {
    throw ManifestError(display, 0, "", e.what());
  }

  fs::path absolute = fs::absolute(folder, ec);
  if (ec) absolute = folder;
  absolute = absolute.lexically_normal();
  if (!absolute.has_filename() && absolute.has_parent_path() && absolute != absolute.root_path())
    absolute = absolute.parent_path();

  Task task = parseManifest(text, display, absolute);
  task.manifestPath = absolute / manifest.filename();  // the file read, whatever its name
  return task;
}

}  // namespace kwb

namespace kwb {
Lineage parseLineageManifest(const std::string &text, const std::string &displayPath,
                            const std::filesystem::path &folder, const Task &task) {
  return ManifestReader(displayPath, folder).readLineage(text, task);
}
}  // namespace kwb
