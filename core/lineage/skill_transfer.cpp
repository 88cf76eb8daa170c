#include "core/lineage/skill_transfer.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "core/lineage/skill_markdown.h"
#include "core/paths/safe_write.h"
#include "core/task/source_file.h"

namespace kwb {

namespace fs = std::filesystem;

namespace {

// A SKILL.md of an import: the path shown, and the path read (links resolved).
struct SkillFile {
  fs::path shown, resolved;
  bool named = false;   // the file the user named (read as named)
  std::string refusal;  // why it is not read: it leads outside the folder
};

// The file itself, or FOLDER/SKILL.md and FOLDER/*/SKILL.md; in a folder, a file reached through
// a symbolic link is read only where the link leads inside the folder.
std::vector<SkillFile> skillFiles(const fs::path &folder) {
  std::error_code ec;
  if (fs::is_regular_file(folder, ec)) return {{folder, folder, true, {}}};
  std::vector<fs::path> found;
  if (fs::is_regular_file(folder / "SKILL.md", ec)) found.push_back(folder / "SKILL.md");
  for (const auto &entry : fs::directory_iterator(folder, ec))
    if (entry.is_directory(ec) && fs::is_regular_file(entry.path() / "SKILL.md", ec)) found.push_back(entry.path() / "SKILL.md");
  std::sort(found.begin(), found.end());
  const fs::path root = fs::canonical(folder, ec);
  std::vector<SkillFile> files;
  for (const auto &f : found) {
    SkillFile file{f, fs::canonical(f, ec), false, {}};
    if (ec || root.empty() || !isInsideFolder(file.resolved, root))
      file.refusal = f.string() + ": leads through a symbolic link to " +
                     (ec ? std::string("a file that cannot be resolved") : file.resolved.string()) + ", outside " +
                     folder.string() + ": not followed (copy the card into the folder)";
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace

SkillImport importSkillFiles(SkillLibrary &library, const fs::path &from, bool replace, const std::string &who) {
  std::error_code ec;
  if (!fs::exists(from, ec)) throw std::runtime_error(from.string() + ": no such file or folder");
  const auto files = skillFiles(from);
  if (files.empty()) throw std::runtime_error(from.string() + ": no SKILL.md in it or in its subfolders");
  SkillImport out;
  out.files = files.size();
  std::vector<std::pair<SkillFileRead, std::string>> reads;
  std::map<std::string, fs::path> seen;
  for (const auto &f : files) {
    if (!f.refusal.empty()) {
      out.problems.push_back(f.refusal);
      continue;
    }
    std::string text;
    try {
      SourceReadOptions o;
      o.maxBytes = kMaxSkillFileBytes;
      o.what = "SKILL.md";
      o.followFinalLink = f.named;  // in a folder: the resolved path, so a link swapped in since is refused
      text = readSourceFile(f.resolved, o);
    } catch (const std::exception &e) {
      out.problems.push_back(e.what());
      continue;
    }
    auto read = readSkillMarkdown(text, f.shown.string());
    for (const auto &p : read.problems) out.problems.push_back(p.text());
    if (!read.card) continue;
    if (auto [it, inserted] = seen.emplace(read.card->id, f.shown); !inserted) {
      out.problems.push_back(f.shown.string() + ": skill_id '" + read.card->id + "' is also the id of " + it->second.string());
      continue;
    }
    reads.emplace_back(std::move(read), f.shown.string());
  }
  if (!out.problems.empty()) return out;
  std::vector<SkillLibrary::CardFromFile> cards;
  for (const auto &[read, file] : reads) cards.push_back({*read.card, fs::absolute(file).string()});
  const auto result = library.importCards(cards, replace ? SkillLibrary::KnownCards::Merge : SkillLibrary::KnownCards::Refuse, who);
  if (!result.known.empty()) {
    out.known = result.known;
    for (const auto &id : result.known)
      out.problems.push_back(seen.at(id).string() + ": the library holds a card '" + id + "' already");
    return out;
  }
  out.added = result.added;
  out.merged = result.merged;
  for (const auto &[read, file] : reads)
    for (const auto &p : recordClaims(read, file, library.card(read.card->id).value_or(SkillCard{})))
      out.notTaken.push_back(p.text());
  return out;
}

std::vector<fs::path> exportSkillCards(const std::vector<SkillCard> &cards, const fs::path &to, const std::string &libraryPath) {
  // Ids are checked on the way out as on the way in: each names one folder inside `to`.
  std::string said;
  std::size_t unusable = 0;
  for (const auto &c : cards)
    if (std::string why; !validSkillId(c.id, &why)) {
      said += libraryPath + ": a card's skill_id '" + c.id + "' is not usable: " + why + "\n";
      ++unusable;
    }
  if (unusable > 0)
    throw std::runtime_error(said + "nothing exported: the library holds " + std::to_string(unusable) +
                             (unusable == 1 ? " card" : " cards") +
                             " no import or lineage could have made (was the file changed by other means?)");
  // Written without following links: a link at <id> or <id>/SKILL.md is replaced, never written through.
  const auto root = SafeFolder::open(to);
  std::vector<fs::path> written;
  for (const auto &c : cards) {
    root.subfolder(c.id).write("SKILL.md", writeSkillMarkdown(c));
    written.push_back(to / c.id / "SKILL.md");
  }
  return written;
}

}  // namespace kwb
