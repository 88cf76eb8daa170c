#include "core/profile/profile_request.h"

#include <tuple>

#include "core/text/json_fields.h"

namespace kwb::profile {

using nlohmann::json;
using json_fields::field;
using json_fields::omitEmpty;
using json_fields::readFields;
using json_fields::writeFields;

namespace {

constexpr auto kMetricFields = std::tuple{field("name", &MetricValue::name), field("label", &MetricValue::label),
                                          field("unit", &MetricValue::unit), field("value", &MetricValue::value)};

constexpr auto kProfileRequestFields = std::tuple_cat(
    worker::kTaskRequestFields,
    std::tuple{field("seed", &ProfileRequest::seed), field("candidate", &ProfileRequest::candidate),
               omitEmpty("metrics", &ProfileRequest::metrics), omitEmpty("set", &ProfileRequest::set)});

constexpr auto kProfileReplyFields = std::tuple_cat(worker::kReplyVerdictFields, std::tuple{
    field("config", &ProfileReply::config),
    field("seed", &ProfileReply::seed),
    field("device", &ProfileReply::device),
    field("device_ordinal", &ProfileReply::deviceOrdinal),
    omitEmpty("chip", &ProfileReply::chip),
    omitEmpty("set", &ProfileReply::set),
    field("metrics_requested", &ProfileReply::metricsRequested),
    omitEmpty("cupti", &ProfileReply::cupti),
    field("passes", &ProfileReply::passes),
    field("passes_run", &ProfileReply::passesRun),
    field("ranges", &ProfileReply::ranges),
    field("ranges_dropped", &ProfileReply::rangesDropped),
    field("candidate_kernels", &ProfileReply::candidateKernels),
    field("metrics", &ProfileReply::metrics),
    field("cupti_error", &ProfileReply::cuptiError)});

}  // namespace

void to_json(json &j, const MetricValue &v) { writeFields(j, v, kMetricFields); }
void from_json(const json &j, MetricValue &v) { readFields(j, v, kMetricFields); }

void to_json(json &j, const ProfileRequest &v) { writeFields(j, v, kProfileRequestFields); }
void from_json(const json &j, ProfileRequest &v) { readFields(j, v, kProfileRequestFields); }
void to_json(json &j, const ProfileReply &v) { writeFields(j, v, kProfileReplyFields); }
void from_json(const json &j, ProfileReply &v) { readFields(j, v, kProfileReplyFields); }

}  // namespace kwb::profile
