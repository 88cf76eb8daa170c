// kernelbench_import.cpp: a KernelBench problem (read by kwb_kernelbench.py) as a workbench task:
// the task.toml text, the CUDA starter, and the folder they are written to. See the header for
// what is produced and what is refused; README.md "Importing KernelBench problems".
//
// The manifest is written as text here (the project has no TOML writer); every value goes through
// tomlString() / tomlFloat(), and importKernelBench() loads what it wrote (loadTask) as a check.
#include "core/import/kernelbench_import.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <unistd.h>

#include "core/paths/safe_write.h"
#include "core/process/child_process.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"
#include "core/task/task.h"
#include "core/text/printable.h"

namespace kwb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;  // the large configuration's least total
constexpr std::int64_t kMaxScale = 1024;              // the most it multiplies the batch by
constexpr int kBlock = 256;                           // the starter's threads per block
constexpr const char *kReaderScript = "kwb_kernelbench.py";
constexpr const char *kStarterScript = "kwb_starter.py";
constexpr std::chrono::seconds kReaderTimeLimit{300};

// Why a problem cannot be imported; what() is the whole message.
struct Refusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One dimension of a shape: a named size, or (size empty) a literal.
struct Dim {
  std::string size;
  std::int64_t literal = 0;
};

// A named size: its value at each evaluation (Draft::evals), the problem's own first.
struct SizeSpec {
  std::string name;
  std::vector<std::int64_t> values;   // per evaluation, the problem's own first
  std::string constant;               // the module constant it is, or empty (a literal or derived)
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  bool output = false;
  std::vector<Dim> shape;
  json generator;     // inputs only: the reader's GEN object
  std::string state;  // module state: its state-dict key (or attribute path)
  int draw = 0;       // forward's random draw it stands for (1, 2, ...), or 0
  std::string how;    // module state: where its recipe comes from; a draw: the call and its line
  double tolerance = 0;     // an f32 output's rtol = atol where the problem needs a looser one than 1e-4
  std::string toleranceWhy; // its comment in the manifest
};

struct ParamSpec {
  std::string name;
  std::string type;  // "int", "float" or "bool"
  json value;
  std::string argument;                 // Model.__init__'s parameter it fills, when known
  std::vector<std::string> candidates;  // the names it may take, best first
  bool forward = false;                 // a scalar argument of forward (else of Model(...))
};

// The shapes of every tensor at one assignment of the module's size constants (the reader's
// "configs" entry): the problem's own first; a probe (the batch, or "probe NAME" another size, doubled) tells which size a
// dimension follows and is not written.
struct Evaluation {
  std::string name, comment;
  bool probe = false;
  std::vector<std::vector<std::int64_t>> inputs;  // per reader input (empty for a scalar)
  std::map<std::string, std::vector<std::int64_t>> state;
  std::vector<std::vector<std::int64_t>> draws;  // per random draw of forward, in order
  std::vector<std::vector<std::int64_t>> outputs;
  json init = json::array();
};

struct ConfigSpec {
  std::string name;
  std::map<std::string, std::int64_t> values;
  std::string comment;
};

// Everything the task's files are written from.
struct Draft {
  std::string file;  // the problem's file name, for messages
  std::string name, description, forwardSource;
  std::vector<SizeSpec> sizes;
  std::vector<TensorSpec> tensors;  // inputs, then outputs
  std::vector<ParamSpec> params;
  bool initDefined = false;
  std::vector<ConfigSpec> configs;
  std::vector<std::string> warnings;
  // The outputs the reader found with the batch size doubled (null: not read): each output
  // dimension is then the size whose values give both shapes.
  const json *doubled = nullptr;
  bool outputsChecked = false;
  // Every evaluation of the shapes (see Evaluation): from the reader's "configs" (--configs),
  // else the problem's own and, with `doubled`, a probe. `fromReader`: the configurations are the
  // reader's (written as they are), else chosen here (chooseConfigs).
  std::vector<Evaluation> evals;
  bool fromReader = false;
  std::vector<std::string> forward;  // forward's arguments in order, when a scalar is one of them
  std::optional<std::vector<std::string>> init;  // [reference] init, when it can be written
  std::vector<std::string> moduleConstants;     // sizes set as the module's constants
};

[[noreturn]] void refuse(const Draft &d, int line, const std::string &part, const std::string &why,
                         const std::string &fix) {
  throw Refusal(d.file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + part + ": " + why + "; " +
                fix);
}

int lineOf(const json &j) {
  const auto it = j.find("line");
  return it != j.end() && it->is_number_integer() ? it->get<int>() : 0;
}

std::string join(const std::vector<std::string> &parts, const std::string &separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? separator : std::string()) + parts[i];
  return out;
}

// ------------------------------------------------------------------ text

bool asciiAlnum(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// `s` as an identifier: other characters as '_', a leading digit after '_'.
std::string identifier(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += asciiAlnum(c) || c == '_' ? static_cast<char>(c) : '_';
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(0, "_");
  return out;
}

// A TOML basic string.
std::string tomlString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// A TOML float: the shortest text that reads back as `v`, with a '.' or an exponent.
std::string tomlFloat(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// One line for a comment (TOML's or C++'s): no control characters, no line splice, at most 240
// bytes (cut at a character boundary).
std::string oneLine(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const bool blank = c < 0x20 || c == 0x7f || c == ' ' || (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n');
    if (!blank) out += static_cast<char>(c);
    else if (!out.empty() && out.back() != ' ') out += ' ';
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\\')) out.pop_back();
  if (out.size() <= 240) return out;
  std::size_t end = 240;
  while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;
  return out.substr(0, end) + "...";
}

std::string humanBytes(double bytes) {
  char buf[32];
  if (bytes >= static_cast<double>(kGiB)) std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / static_cast<double>(kGiB));
  else if (bytes >= 1 << 20) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024);
  return buf;
}

std::string numberText(const json &v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return tomlFloat(v.get<double>());
  return v.dump();
}

// ----------------------------------------------------------------- names

// Sizes, tensors and parameters share one namespace; a taken name gets '_' appended.
class NameSpace {
 public:
  bool taken(const std::string &name) const { return used_.count(name) > 0; }
  std::string claim(std::string name) {
    while (taken(name)) name += '_';
    used_.insert(name);
    return name;
  }
  // A size: also not a key a [[configs]] table holds itself.
  std::string claimSize(const std::string &wanted) {
    std::string name = identifier(wanted);
    if (name == "name" || name == "launch" || name == "reference_launch") name += '_';
    return claim(name);
  }

 private:
  std::set<std::string> used_;
};

// ---------------------------------------------------------------- reading

std::vector<std::int64_t> intList(const json &j) {
  std::vector<std::int64_t> out;
  if (j.is_array())
    for (const json &v : j) out.push_back(v.get<std::int64_t>());
  return out;
}

// The evaluations of the shapes: the reader's "configs" (--configs), else the problem's own
// sizes and, when the outputs were read with the batch doubled, a probe.
void readEvaluations(const json &reader, Draft &d) {
  const json configs = reader.value("configs", json());
  if (configs.is_array() && !configs.empty()) {
    d.fromReader = true;
    for (const json &c : configs) {
      Evaluation e;
      e.name = c.at("name").get<std::string>();
      e.probe = e.name == "probe" || e.name.rfind("probe ", 0) == 0;
      if (c.value("comment", json()).is_string()) e.comment = c["comment"].get<std::string>();
      for (const json &in : c.at("inputs")) e.inputs.push_back(intList(in));
      const json state = c.value("state", json::object());
      for (auto it = state.begin(); it != state.end(); ++it) e.state[it.key()] = intList(it.value());
      for (const json &draw : c.value("draws", json::array())) e.draws.push_back(intList(draw));
      for (const json &out : c.at("outputs")) e.outputs.push_back(intList(out));
      e.init = c.value("init", json::array());
      d.evals.push_back(std::move(e));
    }
    if (d.evals.front().name != "kernelbench")
      refuse(d, 0, "reader", "the reader's first configuration is not the problem's own", "a bug, please report it");
    return;
  }
  Evaluation own;
  own.name = "kernelbench";
  for (const json &in : reader.at("inputs")) own.inputs.push_back(intList(in.value("shape", json())));
  if (reader.at("outputs").is_array())
    for (const json &out : reader.at("outputs")) own.outputs.push_back(intList(out.at("shape")));
  d.evals.push_back(own);
  if (!d.doubled || !d.doubled->is_array() || d.doubled->size() != own.outputs.size()) return;
  // The probe: the inputs' dimensions named as the batch doubled, the outputs as read.
  const json &inputs = reader.at("inputs");
  const json first = inputs.empty() ? json() : inputs.front().value("shape_names", json::array());
  if (first.empty() || !first.front().is_string()) return;
  const std::string batch = first.front().get<std::string>();
  Evaluation probe = own;
  probe.name = "probe";
  probe.probe = true;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const json names = inputs[i].value("shape_names", json::array());
    for (std::size_t k = 0; k < probe.inputs[i].size() && k < names.size(); ++k)
      if (names[k].is_string() && names[k].get<std::string>() == batch) probe.inputs[i][k] *= 2;
  }
  probe.outputs.clear();
  for (const json &out : *d.doubled) probe.outputs.push_back(intList(out.at("shape")));
  d.evals.push_back(probe);
}

void checkGenerator(const json &generator, const std::string &input, int line, const Draft &d,
                    const std::string &part = "get_inputs") {
  static const std::set<std::string> kinds = {"normal", "uniform", "randint", "constant"};
  const std::string kind = generator.value("kind", std::string());
  if (!kinds.count(kind))
    refuse(d, line, part, "'" + input + "' has the generator '" + kind + "', which the importer does not know",
           "write the tensor's init by hand");
  for (const auto &[key, value] : generator.items()) {
    if (key == "kind") continue;
    if (key == "matrix") {
      if (!value.is_string() || (value != "symmetric" && value != "upper" && value != "lower"))
        refuse(d, line, part, "'" + input + "': the generator's matrix is " + value.dump(), "write the tensor's init by hand");
      continue;
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      refuse(d, line, part, "'" + input + "': the generator's " + key + " is " + value.dump() +
                                ", not a finite number", "write the tensor's init by hand");
  }
}

// The value of a dimension at every evaluation; refused when the reader left one out.
std::vector<std::int64_t> dimValues(const Draft &d, const std::string &what,
                                    const std::function<const std::vector<std::int64_t> *(const Evaluation &)> &shapeOf,
                                    std::size_t k) {
  std::vector<std::int64_t> values;
  for (const Evaluation &e : d.evals) {
    const auto *shape = shapeOf(e);
    if (!shape || k >= shape->size())
      refuse(d, 0, "reader", what + " has no dimension " + std::to_string(k) + " in the configuration '" + e.name + "'",
             "its number of dimensions changes with the sizes; write the task by hand");
    if ((*shape)[k] < 1)
      refuse(d, 0, "reader", "dimension " + std::to_string(k) + " of " + what + " is " + std::to_string((*shape)[k]) +
                                 " in the configuration '" + e.name + "'; a task's sizes are at least 1",
             "write the task by hand");
    values.push_back((*shape)[k]);
  }
  return values;
}

// The input tensors, their dimensions as sizes: shape_names[i] where set, else INPUT_d<i>; a
// scalar input becomes a [params] entry passed to forward.
void readInputs(const json &reader, Draft &d, NameSpace &names) {
  const json &inputs = reader.at("inputs");
  std::map<std::string, std::size_t> sizeOf;  // the reader's name for a size → d.sizes index
  std::vector<std::string> wanted;            // the inputs' own names, claimed after the sizes
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const json &in = inputs[i];
    const std::string inputName = in.at("name").get<std::string>();
    const int line = lineOf(in);
    if (in.value("kind", std::string()) != "tensor") {
      const std::string type = in.value("type", std::string("float"));
      ParamSpec p;
      p.type = type;
      p.value = in.at("value");
      p.forward = true;
      p.argument = "forward's " + inputName;
      p.candidates = {identifier(inputName), identifier(inputName) + "_value"};
      d.forward.push_back("\x1fparam" + std::to_string(d.params.size()));
      d.params.push_back(std::move(p));
      continue;
    }
    TensorSpec t;
    const auto dtype = dtypeFromName(in.at("dtype").get<std::string>());
    if (!dtype)
      refuse(d, line, "get_inputs", "input '" + inputName + "' has the dtype " + in.at("dtype").dump() +
                                        ", which the workbench lacks", "write the task by hand");
    t.dtype = *dtype;
    t.generator = in.at("generator");
    checkGenerator(t.generator, inputName, line, d);
    const auto shape = in.at("shape").get<std::vector<std::int64_t>>();
    const json shapeNames = in.value("shape_names", json::array());
    for (std::size_t k = 0; k < shape.size(); ++k) {
      const bool named = k < shapeNames.size() && shapeNames[k].is_string();
      const std::string key = named ? shapeNames[k].get<std::string>() : inputName + "_d" + std::to_string(k);
      if (shape[k] < 1)
        refuse(d, line, "get_inputs", "dimension " + std::to_string(k) + " of input '" + inputName + "' is " +
                                          std::to_string(shape[k]) + "; a task's sizes are at least 1",
               "write the task by hand");
      const auto values = dimValues(
          d, "input '" + inputName + "'",
          [i](const Evaluation &e) { return i < e.inputs.size() ? &e.inputs[i] : nullptr; }, k);
      auto found = sizeOf.find(key);
      if (found == sizeOf.end()) {
        found = sizeOf.emplace(key, d.sizes.size()).first;
        d.sizes.push_back({names.claimSize(key), values, named ? key : std::string()});
      } else if (d.sizes[found->second].values != values) {
        refuse(d, line, "get_inputs", "the size '" + key + "' is " + std::to_string(d.sizes[found->second].values.front()) +
                                          " in one input and " + std::to_string(shape[k]) + " in '" + inputName + "'",
               "write the task by hand");
      }
      t.shape.push_back({d.sizes[found->second].name, 0});
    }
    wanted.push_back(inputName);
    d.forward.push_back("\x1ftensor" + std::to_string(d.tensors.size()));
    d.tensors.push_back(std::move(t));
  }
  if (d.sizes.empty())
    refuse(d, 0, "get_inputs", "no input tensor has a dimension; a task's sizes come from its inputs' dimensions",
           "write the task by hand");
  for (std::size_t i = 0; i < wanted.size(); ++i) d.tensors[i].name = names.claim(identifier(wanted[i]));
}

// A dimension over the sizes, from its value at every evaluation (or at the first ones only,
// where a probe is not comparable): `preferred` when that size has those values, else the first
// size that has them, else the literal when they are all one, else (with the reader's
// configurations) a size of its own, `derived`; without them refused: the problem's sizes and the
// probe disagree on a size. `onEvidence`: only a size whose value changes somewhere (a
// configuration or a probe) is matched, so a weight's 3 x 3 kernel is not named after 3 input
// channels the module cannot change.
Dim matchDim(Draft &d, NameSpace &names, const std::vector<std::int64_t> &values, const std::string &preferred,
             const std::string &derived, const std::string &what, bool onEvidence = false) {
  auto has = [&](const SizeSpec &s) {
    if (onEvidence && std::all_of(s.values.begin(), s.values.end(), [&](std::int64_t v) { return v == s.values.front(); }))
      return false;
    return std::equal(values.begin(), values.end(), s.values.begin());
  };
  for (const auto &s : d.sizes)
    if (s.name == preferred && has(s)) return {s.name, 0};
  for (const auto &s : d.sizes)
    if (has(s)) return {s.name, 0};
  if (std::all_of(values.begin(), values.end(), [&](std::int64_t v) { return v == values.front(); }))
    return {std::string(), values.front()};
  if (d.fromReader) {
    SizeSpec s{names.claimSize(derived), values, std::string()};
    d.sizes.push_back(s);
    return {s.name, 0};
  }
  const auto &first = d.tensors.front().shape;
  const std::string batch = first.empty() ? std::string() : first.front().size;
  refuse(d, 0, "outputs",
         what + " is " + std::to_string(values.front()) + " at the problem's sizes and " + std::to_string(values.back()) +
             " with " + batch + " doubled: it follows no single size",
         "write the task by hand with its shape as an expression");
}

std::string outputDtypeFix() {
  std::string known;
  for (const auto n : dtypeNames()) known += (known.empty() ? "" : ", ") + std::string(n);
  return "the workbench's dtypes are " + known + "; write the task by hand";
}

// A tensor the module is given other than through forward's arguments (module state or a draw):
// its dtype, recipe and shape, each dimension matched over the evaluations (`shapeOf`).
TensorSpec givenTensor(const json &entry, const std::string &what, const std::string &wanted, Draft &d, NameSpace &names,
                       const std::function<const std::vector<std::int64_t> *(const Evaluation &)> &shapeOf) {
  TensorSpec t;
  const auto dtype = dtypeFromName(entry.at("dtype").get<std::string>());
  if (!dtype)
    refuse(d, 0, "Model", what + " is a " + entry.at("dtype").get<std::string>() + " tensor, a dtype the workbench lacks",
           outputDtypeFix());
  t.dtype = *dtype;
  t.generator = entry.at("recipe");
  checkGenerator(t.generator, what, 0, d, "Model");
  const std::size_t rank = entry.at("shape").size();
  for (std::size_t k = 0; k < rank; ++k)
    t.shape.push_back(matchDim(d, names, dimValues(d, what, shapeOf, k), std::string(),
                               identifier(wanted) + "_d" + std::to_string(k), "dimension " + std::to_string(k) + " of " + what,
                               true));
  t.name = names.claim(identifier(wanted));
  return t;
}

// The module's parameters, buffers and tensor attributes that become inputs (the reader's "state"
// with "input": true), after the forward inputs; the others are left inside the reference.
void readState(const json &reader, Draft &d, NameSpace &names) {
  for (const json &entry : reader.value("state", json::array())) {
    const std::string key = entry.at("key").get<std::string>();
    if (!entry.value("input", true)) {
      d.warnings.push_back("the module's " + entry.value("kind", std::string("buffer")) + " " + key + " (" +
                           entry.value("how", std::string()) + ") stays inside the reference: no generator reproduces "
                           "its values, so the kernel is not given it; a kernel that needs it computes it");
      continue;
    }
    std::string wanted = key;
    std::replace(wanted.begin(), wanted.end(), '.', '_');
    TensorSpec t = givenTensor(entry, "the module's " + key, wanted, d, names, [&key](const Evaluation &e) {
      const auto it = e.state.find(key);
      return it == e.state.end() ? nullptr : &it->second;
    });
    t.state = key;
    t.how = entry.value("how", std::string());
    d.tensors.push_back(std::move(t));
  }
}

// The random tensors forward draws (the reader's "draws", in call order): inputs after the state,
// handed to those calls by the reference (draw = N), so the reference and the kernel see the same values.
void readDraws(const json &reader, Draft &d, NameSpace &names) {
  const json draws = reader.value("draws", json::array());
  for (std::size_t i = 0; i < draws.size(); ++i) {
    const json &entry = draws[i];
    const std::string call = entry.value("call", std::string("a random call"));
    const int line = entry.value("line", 0);
    const std::string what = "forward's random draw " + std::to_string(i + 1) + " (" + call + ")";
    TensorSpec t = givenTensor(entry, what, entry.value("name", "draw" + std::to_string(i + 1)), d, names,
                               [i](const Evaluation &e) { return i < e.draws.size() ? &e.draws[i] : nullptr; });
    t.draw = static_cast<int>(i + 1);
    t.how = call + (line > 0 ? " at line " + std::to_string(line) : std::string());
    d.tensors.push_back(std::move(t));
  }
}

void readOutputs(const json &reader, Draft &d, NameSpace &names) {
  const json &outputs = reader.at("outputs");
  if (!outputs.is_array()) {
    const json problem = reader.value("outputs_problem", json());
    refuse(d, 0, "outputs",
           "the output's shape and dtype need PyTorch: " + (problem.is_string() ? problem.get<std::string>() : "not read"),
           "import with a Python that has PyTorch (--python PATH or $KWB_PYTHON; pip install torch)");
  }
  if (outputs.empty())
    refuse(d, 0, "outputs", "forward returns no tensor", "a task needs at least one output; write it by hand");
  const auto &first = d.tensors.front().shape;
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const std::string dtypeText = outputs[j].at("dtype").get<std::string>();
    const auto dtype = dtypeFromName(dtypeText);
    const std::string which = outputs.size() == 1 ? "forward's result" : "forward's result " + std::to_string(j);
    if (!dtype) refuse(d, 0, "outputs", which + " is a " + dtypeText + " tensor, a dtype the workbench lacks", outputDtypeFix());
    TensorSpec t;
    t.dtype = *dtype;
    t.output = true;
    const auto shape = outputs[j].at("shape").get<std::vector<std::int64_t>>();
    if (std::any_of(shape.begin(), shape.end(), [](std::int64_t n) { return n < 1; }))
      refuse(d, 0, "outputs", which + " has no elements (a dimension of 0)", "a task's outputs are not empty; write it by hand");
    t.name = names.claim(outputs.size() == 1 ? "out" : "out" + std::to_string(j));
    for (std::size_t k = 0; k < shape.size(); ++k) {
      std::vector<std::int64_t> values;
      for (const Evaluation &e : d.evals) {
        if (j >= e.outputs.size() || e.outputs[j].size() != shape.size()) {
          if (!d.fromReader && e.probe) continue;  // not comparable: by value alone
          refuse(d, 0, "outputs", which + " has " + std::to_string(shape.size()) + " dimensions at the problem's sizes "
                                  "and another number in the configuration '" + e.name + "'",
                 "write the task by hand");
        }
        values.push_back(e.outputs[j][k]);
      }
      d.outputsChecked = d.outputsChecked || values.size() > 1;
      t.shape.push_back(matchDim(d, names, values, k < first.size() ? first[k].size : std::string(),
                                 t.name + "_d" + std::to_string(k), "dimension " + std::to_string(k) + " of " + which));
    }
    d.tensors.push_back(std::move(t));
  }
}

// What an init entry is called in messages: " (normalized_shape)", or nothing.
std::string initLabel(const json &entry, const json &initParams, std::size_t i) {
  if (entry.value("name", json()).is_string()) return " (" + entry["name"].get<std::string>() + ")";
  if (i < initParams.size() && initParams[i].value("name", json()).is_string())
    return " (" + initParams[i]["name"].get<std::string>() + ")";
  return "";
}

// The [params] entries: get_init_inputs()' scalars (named by nameParams()). With the reader's
// configurations, an argument that changes with them is the size it follows ([reference] init
// names it), and a tuple, string or None argument is left to the module's own get_init_inputs()
// (run with the configuration's sizes: [reference] module_constants).
void readParams(const json &reader, Draft &d) {
  d.initDefined = reader.value("init_defined", false);
  const json &init = reader.at("init");
  const json initParams = reader.value("init_params", json::array());
  static const std::map<std::string, std::string> kUnsupported = {
      {"tuple", "a tuple"}, {"str", "a string"}, {"none", "None"}};
  bool allScalars = true;
  std::vector<std::string> initNames;
  for (std::size_t i = 0; i < init.size(); ++i) {
    const json &entry = init[i];
    const std::string type = entry.at("type").get<std::string>();
    const std::string argument = "init argument " + std::to_string(i + 1) + initLabel(entry, initParams, i);
    if (type != "int" && type != "float" && type != "bool") {
      if (d.fromReader) {
        allScalars = false;
        continue;
      }
      const auto u = kUnsupported.find(type);
      refuse(d, lineOf(entry), "get_init_inputs",
             argument + " is " + (u != kUnsupported.end() ? u->second : "a " + type) + "; [params] holds scalars only",
             "write the task by hand");
    }
    const json &value = entry.at("value");
    if (value.is_number_float() && !std::isfinite(value.get<double>()))
      refuse(d, lineOf(entry), "get_init_inputs", argument + " is not a finite number", "write the task by hand");
    // Its value at every configuration: a size when it changes with them.
    std::vector<std::int64_t> values;
    bool changes = false;
    for (const Evaluation &e : d.evals) {
      const json v = i < e.init.size() ? e.init[i] : value;
      changes = changes || v != value;
      values.push_back(v.is_number_integer() ? v.get<std::int64_t>() : 0);
    }
    // An argument written as a size's constant (`in_features`) is that size, changing or not.
    const std::string wanted = entry.value("name", json()).is_string() ? entry["name"].get<std::string>() : "";
    const auto named = std::find_if(d.sizes.begin(), d.sizes.end(), [&](const SizeSpec &s) {
      return !wanted.empty() && s.constant == wanted && s.values == values;
    });
    if (d.fromReader && type == "int" && named != d.sizes.end()) {
      initNames.push_back(named->name);
      continue;
    }
    if (changes) {
      const SizeSpec *size = nullptr;
      for (const auto &s : d.sizes)
        if (s.values == values && (!size || s.constant == wanted)) size = &s;
      if (type != "int" || !size)
        refuse(d, lineOf(entry), "get_init_inputs",
               argument + " changes with the sizes (" + value.dump() + " at the problem's) but follows none of them",
               "write the task by hand");
      initNames.push_back(size->name);
      continue;
    }
    std::vector<std::string> candidates;
    if (entry.value("name", json()).is_string()) candidates.push_back(identifier(entry["name"].get<std::string>()));
    std::string parameter;
    if (i < initParams.size() && initParams[i].value("name", json()).is_string()) {
      parameter = initParams[i]["name"].get<std::string>();
      candidates.push_back(identifier(parameter));
    }
    candidates.push_back("init" + std::to_string(i));
    initNames.push_back("\x1fparam" + std::to_string(d.params.size()));
    d.params.push_back({std::string(), type, value, parameter, candidates});
  }
  if (d.initDefined && allScalars) d.init = initNames;
}

// Each parameter named after the bare name it was written as in get_init_inputs(), else
// Model.__init__'s parameter, else init<i>: the first of those not taken by a size or tensor
// (rmsnorm's `features` is a size, so its parameter is `num_features`). Then forward's and
// init's lists, which name parameters and tensors by index until now, get their names.
void nameParams(Draft &d, NameSpace &names) {
  for (auto &p : d.params) {
    std::string name = p.candidates.front();
    for (const auto &c : p.candidates)
      if (!names.taken(c)) {
        name = c;
        break;
      }
    p.name = names.claim(name);
  }
  auto resolve = [&](std::string &item) {
    if (item.rfind("\x1fparam", 0) == 0) item = d.params[std::stoul(item.substr(6))].name;
    else if (item.rfind("\x1ftensor", 0) == 0) item = d.tensors[std::stoul(item.substr(7))].name;
  };
  for (auto &item : d.forward) resolve(item);
  if (std::none_of(d.params.begin(), d.params.end(), [](const ParamSpec &p) { return p.forward; })) d.forward.clear();
  if (d.init) for (auto &item : *d.init) resolve(item);
  if (!d.fromReader) return;
  bool varies = false;
  for (const auto &e : d.evals)
    varies = varies || (!e.probe && &e != &d.evals.front());
  if (varies)
    for (const auto &s : d.sizes)
      if (!s.constant.empty() && s.constant == s.name) d.moduleConstants.push_back(s.name);
}

// -------------------------------------------------------- configurations

double tensorBytes(const TensorSpec &t, const std::map<std::string, std::int64_t> &values) {
  double n = static_cast<double>(dtypeSize(t.dtype));
  for (const Dim &dim : t.shape)
    n *= static_cast<double>(dim.size.empty() ? dim.literal : values.at(dim.size));
  return n;
}

double totalBytes(const Draft &d, const std::map<std::string, std::int64_t> &values) {
  double total = 0;
  for (const auto &t : d.tensors) total += tensorBytes(t, values);
  return total;
}

std::string shapeText(const std::vector<Dim> &shape) {
  std::vector<std::string> dims;
  for (const Dim &dim : shape) dims.push_back(dim.size.empty() ? std::to_string(dim.literal) : dim.size);
  return "[" + join(dims, ", ") + "]";
}

// The reader's configurations (all but the probe), each with every size's value there.
void readerConfigs(Draft &d) {
  for (std::size_t e = 0; e < d.evals.size(); ++e) {
    const Evaluation &ev = d.evals[e];
    if (ev.probe) continue;
    std::map<std::string, std::int64_t> values;
    for (const auto &s : d.sizes) values[s.name] = s.values[e];
    const double bytes = totalBytes(d, values);
    d.configs.push_back({ev.name, values, (ev.comment.empty() ? std::string() : ev.comment + ": ") +
                                              humanBytes(bytes) + " in all"});
  }
  std::vector<std::string> derived;
  for (const auto &s : d.sizes)
    if (s.constant.empty() &&
        std::any_of(s.values.begin(), s.values.end(), [&](std::int64_t v) { return v != s.values.front(); }))
      derived.push_back(s.name);
  if (!derived.empty())
    d.warnings.push_back("the sizes " + join(derived, ", ") + " are dimensions of a tensor that follow no size of the "
                         "problem's inputs alone (e.g. a convolution's output); each configuration gives their values, "
                         "read by running the module at its sizes");
  if (d.configs.size() == 1 || d.configs[1].name != "small")
    for (const auto &c : d.configs)
      if (c.name == "kernelbench" && totalBytes(d, c.values) > 64.0 * (1 << 20))
        d.warnings.push_back("no configuration smaller than the problem's own: no size could be divided down (the "
                             "module did not build or run at smaller sizes, or its tensors do not depend on them)");
}

// kernelbench: the problem's sizes; large: the batch (the first input's first size) times the
// smallest power of two k >= 2 (k <= 1024) that brings every tensor together to >= 1 GiB.
void chooseConfigs(Draft &d) {
  if (d.fromReader) {
    readerConfigs(d);
    return;
  }
  std::map<std::string, std::int64_t> values;
  for (const auto &s : d.sizes) values[s.name] = s.values.front();
  const double total = totalBytes(d, values);
  d.configs.push_back({"kernelbench", values, "the problem's own sizes: " + humanBytes(total) + " in all"});
  const auto &first = d.tensors.front().shape;
  if (first.empty()) {
    d.warnings.push_back("no large configuration: the first input has no dimension to scale; add a configuration "
                         "that fills the GPU by hand");
    return;
  }
  if (total >= static_cast<double>(kGiB)) {
    d.warnings.push_back("no large configuration: the problem's own sizes already hold " + humanBytes(total) +
                         ", beyond the GPU's L2");
    return;
  }
  const std::string batch = first.front().size;
  auto scaled = values;
  std::int64_t k = 2;
  for (;; k *= 2) {
    scaled[batch] = values[batch] * k;
    if (totalBytes(d, scaled) >= static_cast<double>(kGiB) || k == kMaxScale) break;
  }
  const double large = totalBytes(d, scaled);
  const bool filled = large >= static_cast<double>(kGiB);
  d.configs.push_back({"large", scaled,
                       "the batch (" + batch + ") x" + std::to_string(k) + ": " + humanBytes(large) + " in all" +
                           (filled ? ", beyond the L2" : "")});
  if (!filled)
    d.warnings.push_back("the large configuration scales " + batch + " by " + std::to_string(kMaxScale) +
                         ", the most it does, and holds only " + humanBytes(large) + "; add a larger one by hand");
  std::vector<std::string> shapes;
  for (const auto &t : d.tensors)
    if (t.output) shapes.push_back(t.name + " " + shapeText(t.shape));
  if (d.outputsChecked)
    d.warnings.push_back("the large configuration scales the batch size (" + batch + ") only; the output shapes (" +
                         join(shapes, ", ") + ") were read again with " + batch + " doubled to see which size each "
                         "dimension follows");
  else
    d.warnings.push_back("the large configuration scales the batch size (" + batch +
                         ") only, and its output shapes assume the output dimensions follow the sizes they were matched "
                         "to (" + join(shapes, ", ") + "); the PyTorch reference checks shapes strictly, so a wrong guess "
                         "shows at `kwb eval`");
}

// ------------------------------------------------------------ expressions

// coefficient * the shape's dimensions, literals folded into the coefficient: "4 * rows * cols".
std::string product(std::int64_t coefficient, const std::vector<Dim> &shape) {
  std::vector<std::string> parts;
  for (const Dim &dim : shape) {
    if (dim.size.empty()) coefficient *= dim.literal;
    else parts.push_back(dim.size);
  }
  if (coefficient == 0) return "0";
  if (coefficient != 1 || parts.empty()) parts.insert(parts.begin(), std::to_string(coefficient));
  return join(parts, " * ");
}

bool allLiteral(const std::vector<Dim> &shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Dim &dim) { return dim.size.empty(); });
}

const TensorSpec &firstOutput(const Draft &d) {
  for (const auto &t : d.tensors)
    if (t.output) return t;
  return d.tensors.back();
}

// One thread per element of the first output: "ceil_div(rows * cols, 256)", or the block count
// itself when the output's shape is all literals.
std::string gridExpression(const Draft &d) {
  const auto &out = firstOutput(d);
  if (!allLiteral(out.shape)) return "ceil_div(" + product(1, out.shape) + ", " + std::to_string(kBlock) + ")";
  const std::int64_t n = std::stoll(product(1, out.shape));
  return std::to_string(std::max<std::int64_t>(1, (n + kBlock - 1) / kBlock));
}

std::string gridText(const Draft &d) {
  const std::string e = gridExpression(d);
  return "[" + (e.find('(') == std::string::npos ? e : tomlString(e)) + "]";
}

// Every tensor's bytes, the terms over the same sizes added up (a model's hundreds of weights
// over a few sizes stay a short expression): "4 * batch * dim + 1180672".
std::string bytesText(const Draft &d) {
  struct Term {
    std::vector<std::string> key;  // the sizes multiplied, sorted
    std::vector<Dim> sizes;        // as the first tensor with them has them
    std::int64_t coefficient;
  };
  std::vector<Term> terms;
  for (const auto &t : d.tensors) {
    Term term{{}, {}, static_cast<std::int64_t>(dtypeSize(t.dtype))};
    for (const Dim &dim : t.shape) {
      if (dim.size.empty()) term.coefficient *= dim.literal;
      else term.sizes.push_back(dim), term.key.push_back(dim.size);
    }
    std::sort(term.key.begin(), term.key.end());
    const auto same = std::find_if(terms.begin(), terms.end(), [&](const Term &other) { return other.key == term.key; });
    if (same == terms.end()) terms.push_back(std::move(term));
    else same->coefficient += term.coefficient;
  }
  std::vector<std::string> out;
  for (const Term &term : terms) out.push_back(product(term.coefficient, term.sizes));
  return join(out, " + ");
}

std::vector<std::string> launchArgs(const Draft &d) {
  std::vector<std::string> args;
  for (const auto &t : d.tensors) args.push_back(t.name);  // inputs, then outputs
  for (const auto &s : d.sizes) args.push_back(s.name);
  for (const auto &p : d.params) args.push_back(p.name);
  return args;
}

std::string quotedList(const std::vector<std::string> &items) {
  std::vector<std::string> q;
  for (const auto &i : items) q.push_back(tomlString(i));
  return "[" + join(q, ", ") + "]";
}

// ---------------------------------------------------------------- writing

std::string generatorText(const TensorSpec &t) {
  const json &g = t.generator;
  const std::string kind = g.at("kind").get<std::string>();
  auto real = [&](const char *key) { return tomlFloat(g.at(key).get<double>()); };
  auto integer = [&](const char *key) { return std::to_string(std::llround(g.at(key).get<double>())); };
  std::string fields;
  if (kind == "normal") fields = "mean = " + real("mean") + ", std = " + real("std");
  else if (kind == "uniform") fields = "low = " + real("low") + ", high = " + real("high");
  else if (kind == "randint") fields = "low = " + integer("low") + ", high = " + integer("high");
  else fields = "value = " + (dtypeIsFloating(t.dtype) ? real("value") : integer("value"));
  if (g.contains("scale")) fields += ", scale = " + real("scale");
  if (g.contains("shift")) fields += ", shift = " + real("shift");
  if (g.contains("matrix")) fields += ", matrix = " + tomlString(g.at("matrix").get<std::string>());
  if (g.contains("diagonal") && g.at("matrix") != "symmetric") fields += ", diagonal = " + integer("diagonal");
  return "{ kind = " + tomlString(kind) + ", " + fields + " }";
}

std::string toleranceText(DType dtype) {
  switch (dtype) {
    case DType::F64: return "{ rtol = 1e-7, atol = 1e-7 }";
    case DType::F32: return "{ rtol = 1e-4, atol = 1e-4 }";
    case DType::F16:
    case DType::BF16: return "{ rtol = 1e-2, atol = 1e-2 }   # KernelBench's bound: tighten it after kwb eval";
    default: return "\"exact\"";
  }
}

std::string shapeToml(const std::vector<Dim> &shape) {
  std::vector<std::string> dims;
  for (const Dim &dim : shape) dims.push_back(dim.size.empty() ? std::to_string(dim.literal) : tomlString(dim.size));
  return "[" + join(dims, ", ") + "]";
}

std::string kernelName(const std::string &task) {
  std::string k = identifier(task);
  if (k.front() == '_' && !task.empty() && task.front() != '_') k = "kb" + k;  // "1_matmul" → "kb_1_matmul"
  return k + "_kernel";
}

void writeHeader(std::ostream &o, const Draft &d, const std::string &starterFile) {
  o << "# Imported from the KernelBench problem " << oneLine(d.file) << " by `kwb import kernelbench`.\n";
  if (!d.forwardSource.empty()) o << "# forward returns: " << oneLine(d.forwardSource) << "\n";
  o << "# The reference is the problem itself (reference.py, run by PyTorch); the kernel starts in "
    << starterFile << ".\n";
  o << "name = " << tomlString(d.name) << "\n";
  o << "description = " << tomlString(d.description) << "\n";
  std::vector<std::string> sizes;
  for (const auto &s : d.sizes) sizes.push_back(s.name);
  o << "sizes = " << quotedList(sizes) << "\n";
  o << "seeds = [1, 2, 3]\n";
  for (const auto &c : d.configs) {
    o << "\n[[configs]]\nname = " << tomlString(c.name) << "   # " << c.comment << "\n";
    for (const auto &s : d.sizes) o << s.name << " = " << c.values.at(s.name) << "\n";
  }
  if (d.params.empty()) return;
  o << "\n# Model(...)'s arguments (get_init_inputs()), passed by [reference] init and to the kernel.\n[params]\n";
  for (const auto &p : d.params)
    o << p.name << " = " << numberText(p.value)
      << (p.argument.empty() ? std::string() : "   # Model's " + oneLine(p.argument)) << "\n";
}

void writeTensors(std::ostream &o, const Draft &d) {
  bool stateSeen = false, drawSeen = false;
  for (const auto &t : d.tensors) {
    if (!t.state.empty() && !stateSeen) {
      stateSeen = true;
      o << "\n# The module's parameters and buffers: inputs of the kernel, loaded into Model before forward\n"
           "# (state = its state-dict key), so the reference and the kernel see the same values.\n";
    }
    if (t.draw > 0 && !drawSeen) {
      drawSeen = true;
      o << "\n# The random tensors forward draws itself: inputs of the kernel, handed by the reference to\n"
           "# forward's random calls in order (draw = N: its N-th call) instead of drawing, so the reference\n"
           "# and the kernel see the same values.\n";
    }
    o << "\n[tensors." << t.name << "]\n";
    if (!t.state.empty())
      o << "state = " << tomlString(t.state) << (t.how.empty() ? std::string() : "   # " + oneLine(t.how)) << "\n";
    if (t.draw > 0) o << "draw = " << t.draw << (t.how.empty() ? std::string() : "   # " + oneLine(t.how)) << "\n";
    o << "dtype = " << tomlString(dtypeName(t.dtype)) << "\n";
    o << "shape = " << shapeToml(t.shape) << "\n";
    if (t.output && t.tolerance > 0)
      o << "role = \"out\"\ntolerance = { rtol = " << numberText(json(t.tolerance)) << ", atol = " << numberText(json(t.tolerance))
        << " }   # " << oneLine(t.toleranceWhy) << "\n";
    else if (t.output) o << "role = \"out\"\ntolerance = " << toleranceText(t.dtype) << "\n";
    else o << "role = \"in\"\ninit = " << generatorText(t) << "\n";
  }
}

std::string manifestText(const Draft &d, const std::string &starterFile) {
  std::ostringstream o;
  writeHeader(o, d, starterFile);
  writeTensors(o, d);
  o << "\n[reference]\npython = \"reference.py\"\n";
  if (d.init) o << "init = " << quotedList(*d.init) << "\n";
  else if (d.initDefined)
    o << "# init: not given, so Model(*get_init_inputs()) (its arguments are not all numbers)\n";
  if (!d.forward.empty()) o << "forward = " << quotedList(d.forward) << "\n";
  if (!d.moduleConstants.empty())
    o << "module_constants = " << quotedList(d.moduleConstants)
      << "   # set in reference.py to each configuration's value before Model is built\n";
  o << "\n[launch]\nkernel = " << tomlString(kernelName(d.name)) << "\n";
  o << "grid = " << gridText(d) << "\n";
  o << "block = [" << kBlock << "]\n";
  o << "args = " << quotedList(launchArgs(d)) << "\n";
  o << "\n[cost]\n";
  o << "flops = " << tomlString(product(1, firstOutput(d).shape)) << "   # a placeholder: one operation per output element\n";
  o << "bytes = " << tomlString(bytesText(d)) << "   # every tensor read or written once\n";
  o << "\n[editor]\nstarter = " << tomlString(starterFile) << "\n";
  return o.str();
}

std::string cType(DType dtype) {
  switch (dtype) {
    case DType::F64: return "double";
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::I64: return "long long";
    case DType::I32: return "int";
    case DType::I8: return "signed char";
    case DType::U8: return "unsigned char";
    case DType::Bool: return "bool";
  }
  return "float";
}

// A parameter name the C++ compiler accepts: keywords and CUDA's built-in variables get '_'.
std::string cName(const std::string &name) {
  static const std::set<std::string> reserved = {
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr",
      "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "nullptr", "operator", "private", "protected", "public", "register", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typeid",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "threadIdx", "blockIdx",
      "blockDim", "gridDim", "warpSize", "and", "or", "not", "xor", "concept", "requires", "char8_t"};
  return reserved.count(name) ? name + "_" : name;
}

std::vector<std::string> kernelParameters(const Draft &d) {
  std::vector<std::string> out;
  for (const auto &t : d.tensors)
    out.push_back((t.output ? "" : "const ") + cType(t.dtype) + " *__restrict__ " + cName(t.name));
  for (const auto &s : d.sizes) out.push_back("long long " + cName(s.name));
  for (const auto &p : d.params) out.push_back(std::string(p.type == "float" ? "float " : "long long ") + cName(p.name));
  return out;
}

void writeStarterNotes(std::ostream &o, const Draft &d) {
  o << "// Tensors (contiguous, row-major):\n";
  for (const auto &t : d.tensors)
    o << "//   " << t.name << ": " << (t.output ? "out" : "in") << ", " << dtypeName(t.dtype) << " "
      << shapeText(t.shape) << (t.state.empty() ? std::string() : " (Model's " + oneLine(t.state) + ")")
      << (t.draw > 0 ? " (forward's random draw " + std::to_string(t.draw) + ")" : std::string()) << "\n";
  o << "// Sizes (long long), per configuration:\n";
  for (const auto &c : d.configs) {
    std::vector<std::string> values;
    for (const auto &s : d.sizes) values.push_back(s.name + " = " + std::to_string(c.values.at(s.name)));
    o << "//   " << c.name << ": " << join(values, ", ") << "\n";
  }
  if (!d.params.empty()) {
    std::vector<std::string> params;
    for (const auto &p : d.params)
      params.push_back(p.name + " = " + numberText(p.value) + (p.type == "float" ? " (float)" : " (long long)"));
    o << "// Parameters (Model's constructor arguments; also compiled in as PARAM_<name>): " << join(params, ", ")
      << "\n";
  }
  o << "// Arguments, in order: " << join(launchArgs(d), ", ") << "\n";
  o << "// Launch (task.toml [launch]): grid " << gridExpression(d) << ", block " << kBlock
    << " (one thread per element of " << firstOutput(d).name << ")\n";
}

std::string starterHeader(const Draft &d, const std::string &starterFile) {
  std::ostringstream o;
  o << "// " << starterFile << ": the kernel for the KernelBench problem " << oneLine(d.file)
    << " (written by `kwb import kernelbench`).\n";
  o << "// The reference is the problem itself (reference.py, run by PyTorch): `kwb eval` checks this kernel's\n"
    << "// outputs against what Model.forward returns.\n//\n";
  if (!d.forwardSource.empty()) o << "// forward returns: " << oneLine(d.forwardSource) << "\n//\n";
  writeStarterNotes(o, d);
  return o.str();
}

std::string starterText(const Draft &d, const std::string &starterFile) {
  std::ostringstream o;
  o << starterHeader(d, starterFile);
  const bool half = std::any_of(d.tensors.begin(), d.tensors.end(), [](const auto &t) { return t.dtype == DType::F16; });
  const bool bf16 = std::any_of(d.tensors.begin(), d.tensors.end(), [](const auto &t) { return t.dtype == DType::BF16; });
  if (half) o << "#include <cuda_fp16.h>\n";
  if (bf16) o << "#include <cuda_bf16.h>\n";
  o << "\nextern \"C\" __global__ void " << kernelName(d.name) << "(\n    " << join(kernelParameters(d), ",\n    ")
    << ") {\n  // TODO: compute forward's result (see above)\n}\n";
  return o.str();
}

// kwb_starter.py's spec (its header): the module, Model's arguments at each configuration,
// forward's arguments and results by name, and the kernel's arguments in [launch] order.
json starterSpec(const json &reader, const Draft &d) {
  json args = json::array();
  std::vector<std::string> forward = d.forward, outputs;
  for (const auto &t : d.tensors) {
    json shape = json::array();
    for (const Dim &dim : t.shape) shape.push_back(dim.size.empty() ? json(dim.literal) : json(dim.size));
    json a = {{"name", t.name}, {"kind", "tensor"}, {"dtype", dtypeName(t.dtype)}, {"shape", shape},
              {"role", t.output ? "out" : "in"}};
    if (!t.state.empty()) a["state"] = t.state;
    if (t.draw > 0) a["draw"] = t.draw;
    args.push_back(a);
    if (t.output) outputs.push_back(t.name);
    else if (d.forward.empty() && t.state.empty() && t.draw == 0) forward.push_back(t.name);
  }
  json sizes = json::object();
  for (const auto &s : d.sizes) {
    args.push_back({{"name", s.name}, {"kind", "size"}});
    sizes[s.name] = s.values.front();
  }
  for (const auto &p : d.params) args.push_back({{"name", p.name}, {"kind", "param"}, {"dtype", p.type == "float" ? "f32" : "i64"}});
  json configs = json::array();
  for (std::size_t e = 1; e < d.evals.size(); ++e) {
    if (d.evals[e].probe) continue;
    json values = json::object();
    for (const auto &s : d.sizes) values[s.name] = s.values[e];
    configs.push_back({{"name", d.evals[e].name}, {"values", values}, {"init", d.evals[e].init}});
  }
  json init = d.evals.front().init;
  if (!d.fromReader) {
    init = json::array();
    for (const json &entry : reader.at("init")) init.push_back(entry.at("value"));
  }
  return {{"module", reader.value("file", std::string())}, {"init", init}, {"forward", forward}, {"outputs", outputs},
          {"kernel_args", args}, {"sizes", sizes}, {"configs", configs}};
}

// ----------------------------------------------------------------- warnings

// The reader's "conditioning": where PyTorch's own f32 forward is further from the same forward in
// f64 than rtol = atol = 1e-4 allows, the output's tolerance is the smallest power of ten that
// covers it twice over (1e-1 at most), with a warning: an exact f32 kernel would otherwise fail.
void readConditioning(const json &reader, Draft &d) {
  const json c = reader.value("conditioning", json());
  if (!c.is_object()) return;
  const json outputs = c.value("outputs", json::array());
  std::size_t j = 0;
  for (auto &t : d.tensors) {
    if (!t.output) continue;
    if (j >= outputs.size()) break;
    const json &o = outputs[j++];
    if (t.dtype != DType::F32 || !o.is_object()) continue;
    const json needed = o.value("needed", json());
    if (needed.is_number() && needed.get<double>() <= 1e-4) continue;
    const std::string where = "at the " + c.value("config", std::string("small")) + " configuration";
    char largest[32];
    std::snprintf(largest, sizeof largest, "%.3g", o.value("max_abs", 0.0));
    const std::string measured = "PyTorch's own f32 " + t.name + " is up to " + largest +
                                 " from the same forward in f64 " + where + " (" +
                                 std::to_string(o.value("beyond", 0)) + " of " + std::to_string(o.value("elements", 0)) +
                                 " elements beyond rtol = atol = 1e-4)";
    t.tolerance = needed.is_number() ? needed.get<double>() : 1e-1;
    t.toleranceWhy = measured + ": the problem is ill-conditioned there";
    d.warnings.push_back(measured + ": the problem is ill-conditioned there (BatchNorm over a few values, a deep "
                         "network at small sizes), so an exact f32 kernel would fail rtol = atol = 1e-4; " + t.name +
                         "'s tolerance is " + numberText(json(t.tolerance)) +
                         (needed.is_number() ? std::string() : ", and even that does not cover every element") +
                         ": check at the kernelbench configuration too, and tighten it where the kernel allows");
  }
}

void addWarnings(const json &reader, Draft &d) {
  for (const auto &t : d.tensors)
    if (t.output && (t.dtype == DType::F16 || t.dtype == DType::BF16))
      d.warnings.push_back(t.name + " is " + std::string(dtypeName(t.dtype)) +
                           ": its tolerance is KernelBench's rtol = atol = 1e-2, an upper bound; atol 1e-2 is vacuous "
                           "for outputs whose magnitude is below about 1e-2, so tighten it after looking at `kwb eval`'s "
                           "max abs error");
  for (const auto &p : d.params)
    if (p.type == "bool")
      d.warnings.push_back("[params] " + p.name + " = " + numberText(p.value) +
                           " is an integer parameter (1 or 0): Model(...) is given 1 or 0, not True or False");
  d.warnings.push_back("[cost] flops is a placeholder, one operation per output element (" +
                       product(1, firstOutput(d).shape) + "); edit it so the roofline means something");
  for (const auto &note : reader.value("notes", json::array()))
    if (note.is_string()) d.warnings.push_back(note.get<std::string>());
}

// The task's name from the problem file's stem: other characters than letters, digits, '_'
// and '-' as '-'.
std::string taskNameOf(std::string stem) {
  for (auto &c : stem)
    if (!asciiAlnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '-';
  return stem.empty() ? "problem" : stem;
}

Draft draftFrom(const json &reader, const json *doubled) {
  Draft d;
  if (doubled && doubled->is_object() && doubled->value("ok", false) && doubled->contains("outputs"))
    d.doubled = &doubled->at("outputs");
  d.file = fs::path(reader.value("file", std::string("problem.py"))).filename().string();
  if (!reader.value("ok", false)) throw Refusal(reader.value("message", d.file + ": the KernelBench reader failed"));
  d.name = taskNameOf(reader.value("name", std::string()));
  const json description = reader.value("description", json());
  d.description = description.is_string() ? description.get<std::string>() : "KernelBench problem " + d.name;
  const json source = reader.value("forward_source", json());
  d.forwardSource = source.is_string() ? source.get<std::string>() : std::string();
  NameSpace names;
  readEvaluations(reader, d);
  readInputs(reader, d, names);
  readState(reader, d, names);
  readDraws(reader, d, names);
  readParams(reader, d);
  readOutputs(reader, d, names);
  readConditioning(reader, d);
  nameParams(d, names);
  chooseConfigs(d);
  addWarnings(reader, d);
  return d;
}

// ------------------------------------------------------------- the folder

// The reader's JSON for `problem`, run in the interpreter the settings name.
using Progress = std::function<void(const std::string &)>;
constexpr std::string_view kProgressPrefix = "kwb-progress: ";

// One run of a bundled helper script (the reader, the starter writer) in the interpreter the
// settings name: its result line (the one that starts {"ok"), its progress lines forwarded.
struct HelperRun {
  std::string missing;  // what it lacked to run, "python" or "script" (empty: it ran)
  std::string why;      // and why
  std::string python;
  ChildProcessResult run;
  json result;  // the result line, parsed (discarded when there was none)
};

HelperRun runHelper(const char *scriptName, const std::vector<std::string> &args, const TorchSettings &settings,
                    const Progress &onProgress = {}) {
  HelperRun h;
  const auto python = findPython(settings, h.why);
  if (!python) {
    h.missing = "python";
    return h;
  }
  const auto script = bundledPythonScript(scriptName, h.why);
  if (!script) {
    h.missing = "script";
    return h;
  }
  h.python = python->string();
  ChildProcessRequest child;
  child.argv = {h.python, script->string()};
  child.argv.insert(child.argv.end(), args.begin(), args.end());
  child.timeout = kReaderTimeLimit;
  std::string resultLine;
  child.onLine = [&](const std::string &line) {
    if (line.rfind("{\"ok\"", 0) == 0) resultLine = line;
    else if (onProgress && line.rfind(kProgressPrefix, 0) == 0) onProgress(printable(line.substr(kProgressPrefix.size()), 300));
  };
  h.run = runChildProcess(child);
  h.result = json::parse(resultLine, nullptr, false);
  return h;
}

json runReader(const fs::path &problem, const TorchSettings &settings, const std::vector<std::string> &extra = {},
               const Progress &onProgress = {}) {
  const std::string shown = problem.string();
  std::vector<std::string> args = extra;
  args.insert(args.end(), {"--", shown});  // a problem named --no-torch.py is a file
  const HelperRun h = runHelper(kReaderScript, args, settings, onProgress);
  if (!h.missing.empty()) throw Refusal(shown + (h.missing == "python" ? ": python: " : ": reader: ") + h.why);
  const auto &run = h.run;
  if (!run.started) throw Refusal(shown + ": reader: " + h.python + " did not start: " + run.startError);
  if (run.timedOut)
    throw Refusal(shown + ": reader: the KernelBench reader ran past " + std::to_string(kReaderTimeLimit.count()) +
                  " s (it imports the problem and runs forward on PyTorch's meta device); check the problem runs quickly");
  if (!h.result.is_object()) {
    const std::string &o = run.output;
    throw Refusal(shown + ": reader: the KernelBench reader ended (" +
                  (run.signal ? "signal " + std::to_string(run.signal) : "status " + std::to_string(run.exitCode)) +
                  ") without a result; its last output: " + printable(o.substr(o.size() > 1500 ? o.size() - 1500 : 0)));
  }
  return h.result;
}

// The host-launcher starter kwb_starter.py writes for `spec`, or nullopt with the reason among
// the warnings (the empty kernel is the starter then).
std::optional<std::string> runStarterWriter(const json &spec, const TorchSettings &settings,
                                            std::vector<std::string> &warnings) {
  // The spec in a private temporary file (mkstemp: made new, mode 0600), removed afterwards.
  std::string specPath = (fs::temp_directory_path() / "kwb-starter-XXXXXX").string();
  const int fd = ::mkstemp(specPath.data());
  if (fd < 0) {
    warnings.push_back("the starter is an empty kernel: no temporary file for the starter writer's spec");
    return std::nullopt;
  }
  const std::string text = spec.dump();
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  struct Remove {
    std::string path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove{specPath};
  if (!written) {
    warnings.push_back("the starter is an empty kernel: the starter writer's spec could not be written");
    return std::nullopt;
  }
  const HelperRun h = runHelper(kStarterScript, {specPath}, settings);
  if (!h.missing.empty()) {
    warnings.push_back("the starter is an empty kernel: the starter writer did not run (" + h.why + ")");
    return std::nullopt;
  }
  const json &result = h.result;
  if (!h.run.started || !result.is_object()) {
    warnings.push_back("the starter is an empty kernel: the starter writer ended without an answer" +
                       (h.run.started ? std::string() : " (" + h.run.startError + ")"));
    return std::nullopt;
  }
  if (!result.value("ok", false) || !result.value("source", json()).is_string()) {
    warnings.push_back("the starter is an empty kernel (write forward in it): the starter writer could not write one: " +
                       printable(result.value("reason", std::string("no reason given"))));
    return std::nullopt;
  }
  std::vector<std::string> steps;
  for (const json &step : result.value("steps", json::array()))
    if (step.is_string()) steps.push_back(step.get<std::string>());
  warnings.push_back("the starter is a host launcher of " + std::to_string(steps.size()) +
                     " naive kernels, one per step of forward (" + printable(join(steps, ", ")) +
                     "): correct by construction, slow; fuse them");
  return result.at("source").get<std::string>();
}

// Refused: toDir / name is a link, not a folder, or holds files without `force`. Makes nothing.
void checkTaskFolder(const fs::path &toDir, const std::string &name, bool force) {
  const fs::path folder = toDir / name;
  std::error_code ec;
  if (fs::is_symlink(folder, ec))
    throw Refusal(folder.string() + ": is a symbolic link; an import is not written through links: remove it or choose another --to");
  if (fs::exists(folder, ec)) {
    if (!fs::is_directory(folder, ec)) throw Refusal(folder.string() + ": exists and is not a folder; choose another --to");
    if (!fs::is_empty(folder, ec) && !force)
      throw Refusal(folder.string() + ": already holds files; pass --force to write over them");
  }
}

// toDir / name, made and held open (SafeFolder: a symbolic link in its place refused); refused
// as checkTaskFolder says.
SafeFolder taskFolder(const fs::path &toDir, const std::string &name, bool force) {
  checkTaskFolder(toDir, name, force);
  try {
    checkPathComponent(name, "the task's name");
    return SafeFolder::open(toDir / name, true);
  } catch (const SafeWriteError &e) {
    throw Refusal(e.what());
  }
}

void importInto(ImportOutcome &out, const fs::path &problem, const fs::path &toDir, bool force,
                const TorchSettings &python, const Progress &onProgress) {
  std::error_code ec;
  if (!fs::is_regular_file(problem, ec))
    throw Refusal(problem.string() + ": file: not a readable file; give the path of a KernelBench problem (.py)");
  const std::string text = readSourceFile(problem, {kMaxSourceBytes, true, "problem"});
  // One reader run: the static read, the outputs on PyTorch's meta device, the module's state and
  // the shapes at every configuration (--configs).
  // A folder that holds files is refused before the module is read (seconds of PyTorch).
  checkTaskFolder(toDir, taskNameOf(problem.stem().string()), force);
  const json reader = runReader(problem, python, {"--configs"}, onProgress);
  if (!reader.value("ok", false))
    throw Refusal(reader.value("message", problem.string() + ": the KernelBench reader failed"));
  std::string error;
  const auto task = taskFromKernelBench(reader, error);
  if (!task) throw Refusal(error);
  out.name = task->name;
  std::string starter = task->starter;
  out.warnings = task->warnings;
  if (onProgress) onProgress("the starter: tracing forward (torch.fx) to write a naive kernel per step");
  if (const auto written = runStarterWriter(task->starterSpec, python, out.warnings))
    starter = task->starterNotes + "//\n// The starter below runs forward one step at a time, a naive kernel each (written by\n"
              "// kwb_starter.py from the traced module): correct, slow; fuse the steps.\n\n" + *written;
  const SafeFolder folder = taskFolder(toDir, task->name, force);
  out.folder = folder.path();
  try {
    // Each file made new and renamed into place: a link planted in the folder is replaced, never written through.
    folder.write(kManifestFileName, task->manifest);
    folder.write("reference.py", text);
    folder.write(task->starterFile, starter);
  } catch (const SafeWriteError &e) {
    throw Refusal(e.what());
  }
  Task loaded;
  try {
    loaded = loadTask(out.folder);
  } catch (const std::exception &e) {
    throw Refusal(std::string("the task written to ") + out.folder.string() +
                  " does not load, a bug in kwb import (please report it with the problem file): " + e.what());
  }
  for (const auto &c : loaded.configs) out.configs.push_back(c.name);
  for (const auto &t : loaded.tensors) (t.role == TensorRole::Out ? out.outputs : out.inputs) += 1;
  out.ok = true;
}

}  // namespace

std::optional<ImportedTask> taskFromKernelBench(const json &reader, std::string &error, const json *doubled) {
  if (!reader.is_object()) {
    error = "reader: the KernelBench reader's output is not a JSON object; a bug, please report it";
    return std::nullopt;
  }
  try {
    const Draft d = draftFrom(reader, doubled);
    ImportedTask task;
    task.name = d.name;
    task.starterFile = d.name + ".cu";
    task.manifest = manifestText(d, task.starterFile);
    task.starter = starterText(d, task.starterFile);
    task.starterNotes = starterHeader(d, task.starterFile);
    task.starterSpec = starterSpec(reader, d);
    task.warnings = d.warnings;
    return task;
  } catch (const Refusal &e) {
    error = e.what();
  } catch (const json::exception &e) {
    const json file = reader.value("file", json());
    error = (file.is_string() ? fs::path(file.get<std::string>()).filename().string() : std::string("problem.py")) +
            ": reader: unexpected JSON from the KernelBench reader (" + e.what() + "); a bug, please report it";
  }
  return std::nullopt;
}

std::string importPython() {
  if (const char *env = std::getenv("KWB_PYTHON"); env && *env) return {};
  fs::path venv;
  if (const char *v = std::getenv("KWB_TORCH_VENV"); v && *v) venv = v;
  else if (const char *home = std::getenv("HOME"); home && *home)
    venv = fs::path(home) / ".local/share/kernel-workbench/torch-venv";
  std::error_code ec;
  if (!venv.empty() && fs::is_regular_file(venv / "bin/python", ec)) return (venv / "bin/python").string();
  return {};
}

ImportOutcome importKernelBench(const fs::path &problem, const fs::path &toDir, bool force,
                                const TorchSettings &python, const Progress &onProgress) {
  ImportOutcome out;
  out.problem = problem.string();
  try {
    importInto(out, problem, toDir, force, python, onProgress);
  } catch (const std::exception &e) {
    out.ok = false;
    out.message = e.what();
  }
  return out;
}

}  // namespace kwb
