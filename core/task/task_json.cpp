#include "core/task/task_json.h"

namespace kwb {

namespace {

using nlohmann::json;

json expressionList(const std::vector<Expression> &list) {
  json out = json::array();
  for (const auto &e : list) out.push_back(e.text());
  return out;
}

json generatorToJson(const Generator &g) {
  json out{{"kind", generatorKindName(g.kind)}, {"seed_offset", g.seedOffset}};
  // randint's bounds are integers; every other parameter is a real number.
  const auto value = [&](double v) {
    return g.kind == Generator::Kind::RandInt ? json(static_cast<std::int64_t>(v)) : json(v);
  };
  const GeneratorParams params = generatorParameterNames(g.kind);
  out[params.first] = value(g.a);
  if (params.second) out[params.second] = value(g.b);
  // Only where they differ from the defaults, as a manifest would say them.
  if (g.scale != 1.0) out["scale"] = g.scale;
  if (g.shift != 0.0) out["shift"] = g.shift;
  if (g.matrix != Generator::Matrix::None) out["matrix"] = generatorMatrixName(g.matrix);
  if (g.matrix == Generator::Matrix::Upper || g.matrix == Generator::Matrix::Lower) out["diagonal"] = g.diagonal;
  return out;
}

json toleranceToJson(const Tolerance &t) {
  if (t.exact) return "exact";
  return json{{"rtol", t.rtol}, {"atol", t.atol}};
}

json launchToJson(const Launch &l) {
  return json{{"kernel", l.kernel},
              {"grid", expressionList(l.grid)},
              {"block", expressionList(l.block)},
              {"shared_bytes", l.sharedBytes.empty() ? std::string("0") : l.sharedBytes.text()},
              {"args", l.args}};
}

// Evaluates one expression for a configuration; null when it cannot be (unvalidated tasks).
json evaluated(const Expression &e, const std::map<std::string, std::int64_t> &values) {
  try {
    return e.evaluate(values);
  } catch (const ExpressionError &) {
    return nullptr;
  }
}

json configToJson(const Task &task, const SizeConfig &config) {
  json sizes = json::object();
  for (const auto &[name, value] : config.values) sizes[name] = value;
  json tensors = json::object();
  for (const Tensor &t : task.tensors) {
    json shape = json::array();
    std::int64_t elements = 1;
    bool known = true;
    for (const Expression &d : t.shape) {
      json v = evaluated(d, config.values);
      if (v.is_null() || __builtin_mul_overflow(elements, v.get<std::int64_t>(), &elements)) known = false;
      shape.push_back(v);
    }
    std::int64_t bytes = 0;
    if (known && __builtin_mul_overflow(elements, static_cast<std::int64_t>(dtypeSize(t.dtype)), &bytes)) known = false;
    tensors[t.name] = json{{"shape", shape},
                           {"elements", known ? json(elements) : json(nullptr)},
                           {"bytes", known ? json(bytes) : json(nullptr)}};
  }
  return json{{"name", config.name},
              {"sizes", sizes},
              {"tensors", tensors},
              {"flops", evaluated(task.flops, config.values)},
              {"bytes", evaluated(task.bytes, config.values)}};
}

}  // namespace

nlohmann::json taskToJson(const Task &task) {
  json out;
  out["name"] = task.name;
  out["description"] = task.description;
  out["folder"] = task.folder.string();
  out["manifest"] = task.manifestPath.string();
  out["sizes"] = task.sizeNames;
  out["seeds"] = task.seeds;

  json configs = json::array();
  for (const SizeConfig &c : task.configs) configs.push_back(configToJson(task, c));
  out["configs"] = configs;

  json tensors = json::array();
  for (const Tensor &t : task.tensors) {
    json j{{"name", t.name},
           {"dtype", dtypeName(t.dtype)},
           {"role", roleName(t.role)},
           {"shape", expressionList(t.shape)},
           {"line", t.line}};
    if (t.init && t.moreInits.empty()) j["init"] = generatorToJson(*t.init);
    if (t.init && !t.moreInits.empty()) {
      j["init"] = json::array({generatorToJson(*t.init)});
      for (const auto &g : t.moreInits) j["init"].push_back(generatorToJson(g));
    }
    if (t.tolerance) j["tolerance"] = toleranceToJson(*t.tolerance);
    if (!t.state.empty()) j["state"] = t.state;
    if (t.draw > 0) j["draw"] = t.draw;
    tensors.push_back(j);
  }
  out["tensors"] = tensors;

  json reference = task.reference.hasCuda() ? launchToJson(task.reference.launch) : json::object();
  reference["source"] = task.reference.source.generic_string();
  if (!task.reference.python.empty()) {
    reference["python"] = task.reference.python.generic_string();
    if (task.reference.init) reference["init"] = *task.reference.init;
    reference["forward"] = forwardArguments(task);  // the default spelled out
    if (!task.reference.moduleConstants.empty()) reference["module_constants"] = task.reference.moduleConstants;
  }
  out["reference"] = reference;
  json params = json::array();
  for (const Param &p : task.params)
    params.push_back(json{{"name", p.name}, {"dtype", dtypeName(p.dtype)}, {"value", p.literal()}});
  out["params"] = params;
  out["launch"] = task.launch ? launchToJson(*task.launch) : json(nullptr);

  json tunables = json::array();
  for (const Tunable &t : task.tunables) tunables.push_back(json{{"name", t.name}, {"values", t.values}});
  out["tunables"] = tunables;

  out["cost"] = json{{"flops", task.flops.text()}, {"bytes", task.bytes.text()}};
  out["starter"] = task.starter ? json(task.starter->generic_string()) : json(nullptr);
  out["starter_source"] = task.starterSource().generic_string();
  return out;
}

}  // namespace kwb
