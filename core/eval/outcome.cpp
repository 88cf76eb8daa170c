#include "core/eval/outcome.h"

#include <array>
#include <utility>

#include <nlohmann/json.hpp>

namespace kwb {

namespace {

constexpr std::array<std::pair<Outcome, const char *>, 12> kNames{{
    {Outcome::Correct, "correct"},
    {Outcome::Incorrect, "incorrect"},
    {Outcome::CompileError, "compile-error"},
    {Outcome::LoadError, "load-error"},
    {Outcome::RuntimeError, "runtime-error"},
    {Outcome::Timeout, "timeout"},
    {Outcome::NotRun, "not-run"},
    {Outcome::Unsupported, "unsupported"},
    {Outcome::Cancelled, "cancelled"},
    {Outcome::Error, "error"},
    {Outcome::Profiled, "profiled"},
    {Outcome::NotProfiled, "not-profiled"},
}};

}  // namespace

const char *toString(Outcome outcome) {
  for (const auto &[o, name] : kNames)
    if (o == outcome) return name;
  return "error";
}

std::optional<Outcome> parseOutcome(std::string_view text) {
  for (const auto &[o, name] : kNames)
    if (text == name) return o;
  return std::nullopt;
}

void to_json(nlohmann::json &j, Outcome outcome) { j = toString(outcome); }

void from_json(const nlohmann::json &j, Outcome &outcome) {
  outcome = j.is_string() ? parseOutcome(j.get<std::string>()).value_or(Outcome::Error) : Outcome::Error;
}

}  // namespace kwb
