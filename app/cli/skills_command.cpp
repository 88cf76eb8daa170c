#include "app/cli/skills_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

// The SKILL.md files of an import: the file itself, or FOLDER/SKILL.md and FOLDER/*/SKILL.md.
std::vector<fs::path> skillFiles(const fs::path &folder) {
  std::error_code ec;
  if (fs::is_regular_file(folder, ec)) return {folder};
  std::vector<fs::path> files;
  if (fs::is_regular_file(folder / "SKILL.md", ec)) files.push_back(folder / "SKILL.md");
  for (const auto &entry : fs::directory_iterator(folder, ec))
    if (entry.is_directory(ec) && fs::is_regular_file(entry.path() / "SKILL.md", ec)) files.push_back(entry.path() / "SKILL.md");
  std::sort(files.begin(), files.end());
  return files;
}

bool writeAtomically(const fs::path &path, const std::string &text, std::string &error) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      error = "cannot write " + tmp.string();
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    error = "cannot write " + path.string() + ": " + ec.message();
    return false;
  }
  return true;
}

// The cards --status, --case and --text ask for; nothing (and a message) for a status unknown.
std::optional<kwb::CardFilter> filterOf(const SkillsArgs &args) {
  kwb::CardFilter filter;
  if (!args.status.empty()) {
    filter.status = kwb::cardStatusFromString(args.status);
    if (!filter.status) {
      std::cerr << "kwb: --status " << kwb::printable(args.status) << " is not one of proposed, admitted, rejected\n";
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
                << c.evidence.size() << " measurements  " << c.intent.substr(0, 70) << "\n";
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
    std::cout << kwb::writeSkillMarkdown(*card);
    std::cout << "\n<!-- audit trail -->\n";
    for (const auto &a : audit) std::cout << "<!-- " << a.at << "  " << a.who << "  " << a.action << "  " << a.detail << " -->\n";
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
  const auto files = skillFiles(args.folder);
  if (files.empty()) {
    std::cerr << "kwb: " << kwb::printable(args.folder) << ": no SKILL.md in it or in its subfolders\n";
    return kExitInvalid;
  }
  // Every file is read and checked before anything is stored: an import never half-applies.
  std::vector<kwb::SkillCard> cards;
  std::vector<std::string> problems;
  std::map<std::string, fs::path> seen;
  for (const auto &f : files) {
    std::string text;
    try {
      kwb::SourceReadOptions o;
      o.maxBytes = kwb::kMaxSkillFileBytes;
      o.what = "SKILL.md";
      text = kwb::readSourceFile(f, o);
    } catch (const std::exception &e) {
      problems.push_back(e.what());
      continue;
    }
    auto read = kwb::readSkillMarkdown(text, f.string());
    for (const auto &p : read.problems) problems.push_back(kwb::printable(p.text()));
    if (!read.card) continue;
    if (auto [it, inserted] = seen.emplace(read.card->id, f); !inserted) {
      problems.push_back(f.string() + ": skill_id '" + read.card->id + "' is also the id of " + it->second.string());
      continue;
    }
    cards.push_back(std::move(*read.card));
  }
  if (!problems.empty()) {
    for (const auto &p : problems) std::cerr << p << "\n";
    std::cerr << "kwb: nothing imported (" << problems.size() << " problem" << (problems.size() == 1 ? "" : "s") << " in "
              << files.size() << " file" << (files.size() == 1 ? "" : "s") << ")\n";
    return kExitInvalid;
  }
  try {
    auto library = openLibrary(args);
    library->putCards(cards, "kwb skills import", "imported", "from " + fs::absolute(args.folder).string());
    if (asJson) {
      json ids = json::array();
      for (const auto &c : cards) ids.push_back(c.id);
      std::cout << json{{"library", library->path().string()}, {"imported", ids}}.dump(2) << "\n";
    } else {
      std::cout << "imported " << cards.size() << " card" << (cards.size() == 1 ? "" : "s") << " into "
                << library->path().string() << "\n";
      for (const auto &c : cards) std::cout << "  " << c.id << "  " << kwb::toString(c.status) << "\n";
    }
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << e.what() << "; nothing imported\n";
    return 1;
  }
  return 0;
}

int skillsExportCommand(const SkillsArgs &args, bool asJson) {
  const auto filter = filterOf(args);
  if (!filter) return kExitInvalid;
  try {
    auto library = openLibrary(args);
    const auto cards = library->cards(*filter);
    std::error_code ec;
    fs::create_directories(args.folder, ec);
    if (ec) {
      std::cerr << "kwb: cannot make " << kwb::printable(args.folder) << ": " << ec.message() << "\n";
      return 1;
    }
    json written = json::array();
    for (const auto &c : cards) {
      const fs::path dir = fs::path(args.folder) / c.id;  // the id is a plain name (validSkillId)
      fs::create_directories(dir, ec);
      std::string error;
      if (ec || !writeAtomically(dir / "SKILL.md", kwb::writeSkillMarkdown(c), error)) {
        std::cerr << "kwb: " << (error.empty() ? "cannot make " + dir.string() + ": " + ec.message() : error) << "\n";
        return 1;
      }
      written.push_back((dir / "SKILL.md").string());
    }
    if (asJson) std::cout << json{{"library", library->path().string()}, {"written", written}}.dump(2) << "\n";
    else std::cout << "wrote " << written.size() << " SKILL.md file" << (written.size() == 1 ? "" : "s") << " under " << args.folder << "\n";
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << e.what() << "\n";
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
    library->setStatus(args.id, approve ? kwb::CardStatus::Admitted : kwb::CardStatus::Rejected, reviewer(args), args.why);
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
    recorded = kwb::agent::recordApplication(*library, result);
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
              {"required_speedup", result.requiredSpeedup},
              {"device", result.device},
              {"recorded", recorded},
              {"status", status}};
    if (result.beforeMs) j["before_ms"] = *result.beforeMs;
    if (result.afterMs) j["after_ms"] = *result.afterMs;
    if (result.speedup) j["speedup"] = *result.speedup;
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
