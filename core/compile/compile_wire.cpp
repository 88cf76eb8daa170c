#include "core/compile/compile_wire.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/text/base64.h"

namespace kwb::compile_wire {

using nlohmann::json;

json toJson(const Request &r) {
  json defines = json::array();
  for (const auto &[name, value] : r.request.defines) defines.push_back({name, value});
  return json{{"id", r.id},
              {"target", r.target == Target::Ptx ? "ptx" : "cubin"},
              {"time_limit_ms", r.timeLimit.count()},
              {"request",
               {{"source_base64", base64Encode(r.request.source)},  // any bytes, not only UTF-8
                {"source_name", r.request.sourceName},
                {"form", r.request.form},
                {"arch", r.request.arch},
                {"defines", defines},
                {"extra_options", r.request.extraOptions},
                {"line_info", r.request.lineInfo},
                {"expected_kernels", r.request.expectedKernels}}}};
}

Request requestFromJson(const json &j) {
  Request r;
  r.id = j.at("id").get<std::uint64_t>();
  r.target = j.value("target", std::string("cubin")) == "ptx" ? Target::Ptx : Target::Cubin;
  r.timeLimit = std::chrono::milliseconds(j.value("time_limit_ms", std::int64_t{120000}));
  const json &q = j.at("request");
  auto source = base64Decode(q.at("source_base64").get<std::string>());
  if (!source) throw std::invalid_argument("source_base64 is not base64");
  r.request.source = std::move(*source);
  r.request.sourceName = q.value("source_name", std::string("candidate.cu"));
  r.request.form = q.value("form", SourceForm::DeviceOnly);
  r.request.arch = q.value("arch", std::string("sm_90"));
  for (const auto &d : q.value("defines", json::array()))
    r.request.defines.emplace_back(d.at(0).get<std::string>(), d.at(1).get<std::string>());
  r.request.extraOptions = q.value("extra_options", std::vector<std::string>{});
  r.request.lineInfo = q.value("line_info", true);
  r.request.expectedKernels = q.value("expected_kernels", std::vector<std::string>{});
  return r;
}

json toJson(const CompileOutcome &outcome) {
  json result = outcome.result;
  result["arch"] = outcome.result.arch;
  result["log"] = outcome.result.log;
  result["image_base64"] = base64Encode(outcome.result.image);
  return json{{"cacheable", outcome.cacheable}, {"result", std::move(result)}};
}

CompileOutcome outcomeFromJson(const json &j) {
  CompileOutcome out;
  out.cacheable = j.value("cacheable", false);
  const json &r = j.at("result");
  out.result = r.get<CompileResult>();
  out.result.arch = r.value("arch", std::string());
  out.result.log = r.value("log", std::string());
  out.result.image = base64Decode(r.value("image_base64", std::string())).value_or(std::string());
  return out;
}

json toJson(const TextOutput &t) {
  return json{{"ok", t.ok}, {"text", t.text}, {"error", t.error}, {"log", t.log}, {"diagnostics", t.diagnostics}};
}

TextOutput textFromJson(const json &j) {
  TextOutput t;
  t.ok = j.value("ok", false);
  t.text = j.value("text", std::string());
  t.error = j.value("error", std::string());
  t.log = j.value("log", std::string());
  t.diagnostics = j.value("diagnostics", std::vector<Diagnostic>{});
  return t;
}

}  // namespace kwb::compile_wire
