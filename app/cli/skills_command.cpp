#include "app/cli/skills_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/candidate_input.h"
#include "app/cli/llm_command.h"
#include "core/agent/card_application.h"
#include "core/eval/evaluator.h"
#include "core/lineage/skill_library.h"
#include "core/lineage/skill_markdown.h"
#include "core/lineage/skill_transfer.h"
#include "core/paths/safe_write.h"
#include "core/task/source_file.h"
#include "core/text/printable.h"

namespace fs = std::filesystem;
using nlohmann::json;

using kwb::fixed;

namespace {

constexpr int kExitInvalid = 2;

std::unique_ptr<kwb::SkillLibrary> openLibrary(const SkillsArgs &args) {
  return kwb::SkillLibrary::open(args.library.empty() ? kwb::SkillLibrary::defaultPath() : fs::path(args.library));
}

std::string reviewer(const SkillsArgs &args) {
  if (!args.by.empty()) return "reviewer:" + args.by;
  const char *user = std::getenv("USER");
  return std::string("reviewer:") + (user && *user ? user : "unknown");
}

// The cards --status, --case and --text ask for; nothing (and a message) for a status unknown.
std::optional<kwb::CardFilter> filterOf(const SkillsArgs &args) {
  kwb::CardFilter filter;
  if (!args.status.empty()) {
    filter.status = kwb::cardStatusFromString(args.status);
    if (!filter.status) {
      std::cerr << "kwb: --status " << kwb::printable(args.status) << " is not one of proposed, admitted, approved, rejected\n";
      return std::nullopt;
    }
  }
  filter.scopeCase = args.scopeCase;
  filter.text = args.text;
  return filter;
}

}  // namespace

int skillsListCommand(const SkillsArgs &args, bool asJson) {
  const auto filter = filterOf(args);
  if (!filter) return kExitInvalid;
  try {
    auto library = openLibrary(args);
    const auto cards = library->cards(*filter);
    if (asJson) {
      json out = json::array();
      for (const auto &c : cards)
        out.push_back({{"skill_id", c.id},
                       {"status", kwb::toString(c.status)},
                       {"intent", c.intent},
                       {"scope", c.scope},
                       {"provides", c.providedFeatures},
                       {"evidence", c.evidence.size()},
                       {"measured_speedup", c.measuredSpeedup()}});
      std::cout << json{{"library", library->path().string()}, {"cards", out}}.dump(2) << "\n";
      return 0;
    }
    std::cout << cards.size() << " card" << (cards.size() == 1 ? "" : "s") << " in " << library->path().string() << "\n";
    for (const auto &c : cards)
      std::cout << "  " << c.id << "  " << kwb::toString(c.status) << "  " << fixed(c.measuredSpeedup(), 2) << "x  "
                << c.evidence.size() << " measurements  " << kwb::printable(kwb::clippedLine(c.intent, 70)) << "\n";
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int skillsShowCommand(const SkillsArgs &args, bool asJson) {
  try {
    auto library = openLibrary(args);
    const auto card = library->card(args.id);
    if (!card) {
      std::cerr << "kwb: no skill card '" << kwb::printable(args.id) << "' in " << library->path().string()
                << " (kwb skills list shows them)\n";
      return kExitInvalid;
    }
    const auto audit = library->audit(args.id);
    if (asJson) {
      json out = *card;
      out["audit"] = audit;
      out["measured_speedup"] = card->measuredSpeedup();
      out["missing_precondition_categories"] = card->missingCategories();
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    // The body is the card's text verbatim: each line with its control characters escaped.
    std::istringstream lines(kwb::writeSkillMarkdown(*card));
    for (std::string line; std::getline(lines, line);) std::cout << kwb::printable(line, line.size() * 6 + 16) << "\n";
    std::cout << "\n<!-- audit trail -->\n";
    for (const auto &a : audit)
      std::cout << "<!-- " << a.at << "  " << kwb::printable(a.who) << "  " << a.action << "  " << kwb::printable(a.detail)
                << " -->\n";
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int skillsImportCommand(const SkillsArgs &args, bool asJson) {
  std::error_code ec;
  if (!fs::exists(args.folder, ec)) {
    std::cerr << "kwb: " << kwb::printable(args.folder) << ": no such file or folder\n";
    return kExitInvalid;
  }
  try {
    auto library = openLibrary(args);
    const auto result = kwb::importSkillFiles(*library, args.folder, args.replace, "kwb skills import");
    if (!result.problems.empty()) {
      for (const auto &p : result.problems) std::cerr << kwb::printable(p) << "\n";
      if (!result.known.empty())
        std::cerr << "kwb: nothing imported: " << result.known.size() << " of the cards are in the library already; "
                  << "--replace gives them the files' text and keeps their status, evidence and verification log\n";
      else
        std::cerr << "kwb: nothing imported (" << result.problems.size() << " problem"
                  << (result.problems.size() == 1 ? "" : "s") << " in " << result.files << " file"
                  << (result.files == 1 ? "" : "s") << ")\n";
      return kExitInvalid;
    }
    // What a file said of a card's record and the library did not take.
    for (const auto &p : result.notTaken) std::cerr << kwb::printable(p) << "\n";
    if (asJson) {
      json ids = json::array();
      for (const auto *list : {&result.added, &result.merged})
        for (const auto &id : *list) ids.push_back(id);
      std::cout << json{{"library", library->path().string()}, {"imported", ids},     {"added", result.added},
                        {"merged", result.merged},           {"not_taken", result.notTaken}}
                       .dump(2, ' ', false, json::error_handler_t::replace)
                << "\n";
    } else {
      const std::size_t n = result.added.size() + result.merged.size();
      std::cout << "imported " << n << " card" << (n == 1 ? "" : "s") << " into "
                << kwb::printable(library->path().string()) << ": " << result.added.size() << " new (proposed), "
                << result.merged.size() << " merged (the file's text; status, evidence and verification log kept)\n";
      for (const auto &id : result.added) std::cout << "  " << id << "  new  proposed\n";
      for (const auto &id : result.merged)
        std::cout << "  " << id << "  merged  " << kwb::toString(library->card(id)->status) << "\n";
    }
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << kwb::printable(e.what()) << "; nothing imported\n";
    return fs::exists(args.folder, ec) && std::string(e.what()).find("no SKILL.md") != std::string::npos ? kExitInvalid : 1;
  }
  return 0;
}

int skillsExportCommand(const SkillsArgs &args, bool asJson) {
  const auto filter = filterOf(args);
  if (!filter) return kExitInvalid;
  try {
    auto library = openLibrary(args);
    json written = json::array();
    for (const auto &f : kwb::exportSkillCards(library->cards(*filter), args.folder, library->path().string()))
      written.push_back(f.string());
    if (asJson)
      std::cout << json{{"library", library->path().string()}, {"written", written}}.dump(2, ' ', false, json::error_handler_t::replace)
                << "\n";
    else
      std::cout << "wrote " << written.size() << " SKILL.md file" << (written.size() == 1 ? "" : "s") << " under "
                << kwb::printable(args.folder) << "\n";
  } catch (const kwb::SafeWriteError &e) {
    std::cerr << "kwb: " << kwb::printable(e.what()) << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << kwb::printable(e.what()) << "\n";
    return 1;
  }
  return 0;
}

int skillsReviewCommand(const SkillsArgs &args, bool approve, bool asJson) {
  if (!approve && args.why.empty()) {
    std::cerr << "kwb: a rejection needs its reason: --why TEXT (it goes into the card's audit trail)\n";
    return kExitInvalid;
  }
  try {
    auto library = openLibrary(args);
    if (!library->card(args.id)) {
      std::cerr << "kwb: no skill card '" << kwb::printable(args.id) << "' in " << library->path().string()
                << " (kwb skills list shows them)\n";
      return kExitInvalid;
    }
    // A reviewer approves; the gate admits. Approving a card the gate admitted changes nothing.
    if (!approve || library->card(args.id)->status != kwb::CardStatus::Admitted)
      library->setStatus(args.id, approve ? kwb::CardStatus::Approved : kwb::CardStatus::Rejected, reviewer(args), args.why);
    const auto card = library->card(args.id);
    if (asJson) std::cout << json{{"skill_id", args.id}, {"status", kwb::toString(card->status)}}.dump(2) << "\n";
    else std::cout << args.id << ": " << kwb::toString(card->status) << "\n";
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int skillsApplyCommand(const SkillsArgs &args, bool asJson) {
  std::unique_ptr<kwb::SkillLibrary> library;
  std::optional<kwb::SkillCard> card;
  try {
    library = openLibrary(args);
    card = library->card(args.id);
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << e.what() << "\n";
    return 1;
  }
  if (!card) {
    std::cerr << "kwb: no skill card '" << kwb::printable(args.id) << "' in " << library->path().string()
              << " (kwb skills list shows them)\n";
    return kExitInvalid;
  }
  if (!(args.timeCap > 0 && args.timeCap <= 60)) {
    std::cerr << "kwb: --time-cap wants seconds from 0 to 60, got " << args.timeCap << "\n";
    return kExitInvalid;
  }
  const auto input = loadCandidate(args.task, args.kernel, "kwb skills apply");
  if (!input) return kExitInvalid;
  const auto chat = chatProvider(args.provider, args.format, args.model);
  if (!chat) return kExitInvalid;
  kwb::Evaluator evaluator;
  kwb::agent::CardApplicationServices services;
  services.provider = chat.get();
  services.evaluator = &evaluator;
  if (!asJson) services.onProgress = [](const std::string &line) { std::cerr << "kwb: " << line << "\n"; };
  kwb::agent::CardApplicationSettings settings;
  settings.timingCap = std::chrono::milliseconds(static_cast<long long>(args.timeCap * 1000));
  settings.tunables = input->tunables;
  settings.maxTokens = args.maxTokens;
  kwb::agent::CardApplication result;
  std::string recorded;
  try {
    result = kwb::agent::applyCard(*card, input->task, input->text, input->path.filename().string(), services, settings);
    recorded = kwb::agent::recordApplication(*library, result, args.tasksToAdmit);
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 1;
  }
  const auto stored = library->card(args.id);
  const std::string status = stored ? kwb::toString(stored->status) : "unknown";
  if (asJson) {
    json j = {{"skill_id", result.cardId},
              {"task", result.task},
              {"kernel", result.kernelName},
              {"verdict", kwb::agent::toString(result.verdict)},
              {"message", result.message},
              {"answer", result.answerOutcome},
              {"declared_speedup", result.declaredSpeedup},
              {"declared_where", result.declaredWhere},
              {"required_speedup", result.requiredSpeedup},
              {"gate_config", result.gateConfig},
              {"device", result.device},
              {"recorded", recorded},
              {"status", status}};
    if (result.beforeMs) j["before_ms"] = *result.beforeMs;
    if (result.afterMs) j["after_ms"] = *result.afterMs;
    if (result.speedup) j["speedup"] = *result.speedup;
    if (result.gateSpeedup) j["gate_speedup"] = *result.gateSpeedup;
    if (!result.source.empty()) j["source"] = result.source;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << result.cardId << " on " << result.kernelName << " (" << result.task << "): "
              << kwb::agent::toString(result.verdict) << ": " << result.message << "\n"
              << "  " << recorded << "\n";
  }
  switch (result.verdict) {
    case kwb::agent::ApplicationVerdict::Success: return 0;
    case kwb::agent::ApplicationVerdict::NotGated: return 3;
    default: return 1;
  }
}
