#pragma once
// The worker's `profile` command as a typed request and reply (PROTOCOL.md "profile"), shared
// by the client (core/profile/profiler.h) and the server (core/worker/server/profile_command.cpp),
// each pair made from one field table as in core/worker/commands.h.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/worker/commands.h"

namespace kwb::profile {

struct MetricValue {
  std::string name;   // dram__throughput.avg.pct_of_peak_sustained_elapsed
  std::string label;  // DRAM throughput
  std::string unit;   // %
  double value = 0;
  friend bool operator==(const MetricValue &, const MetricValue &) = default;
};

struct ProfileRequest : worker::TaskRequest {
  std::uint64_t seed = 1;
  worker::LaunchRequest candidate;
  std::vector<std::string> metrics;  // empty: the set below
  std::string set;                   // "default" or "detailed"; empty with no metrics: "default"
};

// verdict "profiled" (metrics) or "not-profiled" (reason: insufficient-privileges,
// profiler-busy, unsupported, no-cupti, cupti-error; reason_detail in words), or a load or
// runtime error.
struct ProfileReply : worker::ReplyVerdict {
  std::string config;
  std::uint64_t seed = 0;
  std::string device;
  int deviceOrdinal = -1;
  std::string chip;
  std::string set;
  std::vector<std::string> metricsRequested;
  std::string cupti;  // the libcupti loaded
  std::uint64_t passes = 0, passesRun = 0, ranges = 0, rangesDropped = 0;
  std::vector<std::string> candidateKernels;
  std::vector<MetricValue> metrics;
  int cuptiError = 0;
};

void to_json(nlohmann::json &j, const MetricValue &v);
void from_json(const nlohmann::json &j, MetricValue &v);
void to_json(nlohmann::json &j, const ProfileRequest &v);
void from_json(const nlohmann::json &j, ProfileRequest &v);
void to_json(nlohmann::json &j, const ProfileReply &v);
void from_json(const nlohmann::json &j, ProfileReply &v);

}  // namespace kwb::profile
