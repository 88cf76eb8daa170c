#include "core/gpu/worker_gpu_report.h"

#include <nlohmann/json.hpp>

namespace kwb {

namespace {

template <typename T>
std::variant<T, std::string> parseReport(std::string_view text, std::initializer_list<const char *> lists) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error &e) {
    return std::string("not JSON (") + e.what() + ")";
  }
  std::string missing;
  int count = 0;
  for (const char *key : lists)
    if (!j.is_object() || !j.contains(key) || !j[key].is_array()) {
      missing += std::string(missing.empty() ? "" : " and ") + "\"" + key + "\"";
      ++count;
    }
  if (count) return "no " + missing + (count > 1 ? " lists" : " list");
  try {
    return j.get<T>();
  } catch (const nlohmann::json::exception &e) {
    return std::string(e.what());
  }
}

}  // namespace

std::variant<GpuInventory, std::string> parseGpuInventory(std::string_view text) {
  return parseReport<GpuInventory>(text, {"devices", "libraries"});
}

std::variant<GpuStatsReport, std::string> parseGpuStats(std::string_view text) {
  return parseReport<GpuStatsReport>(text, {"devices"});
}

}  // namespace kwb
