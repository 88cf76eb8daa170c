#pragma once
// The compile service's wire format (JSON lines), shared by its client (core/compile/
// compile_service.h) and its server (core/worker/server/compile_server.h, inside kwb-worker).
//   hello     {"hello":"kwb-compile-service","version","available","problem","nvrtc","sandbox",
//              "sandbox_reason","fence","limits":{"memory_bytes","cpu_seconds","output_bytes"}}
//   request   {"id","target":"cubin"|"ptx","time_limit_ms","request":{source_base64,source_name,form,
//              arch,defines:[[name,value]],extra_options,line_info,expected_kernels}}
//   reply     {"id","outcome":{"cacheable", "result":{...CompileResult, "log","image_base64"}}}
//             {"id","text":{"ok","text","error","log","diagnostics"}}          (target ptx)
//             {"id","fatal":"why the service stopped during this request"}     (then it exits)
//             each reply but a fatal one also has "work":{"wall_s","cpu_s","sys_s","minor_faults","major_faults",
//             "voluntary_switches","involuntary_switches"}: what the request cost the service (getrusage)
// Every field is written by this file; readers tolerate missing ones.
#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/compile/compile_outcome.h"

namespace kwb::compile_wire {

inline constexpr const char *kHello = "kwb-compile-service";

enum class Target { Cubin, Ptx };

struct Request {
  std::uint64_t id = 0;
  Target target = Target::Cubin;
  std::chrono::milliseconds timeLimit{120000};
  CompileRequest request;
};

nlohmann::json toJson(const Request &request);
Request requestFromJson(const nlohmann::json &j);  // throws (json::exception, invalid_argument) on a bad shape

nlohmann::json toJson(const CompileOutcome &outcome);  // with the log and the image
CompileOutcome outcomeFromJson(const nlohmann::json &j);
nlohmann::json toJson(const TextOutput &text);
TextOutput textFromJson(const nlohmann::json &j);

}  // namespace kwb::compile_wire
