#include "core/agent/prompt_templates.h"

#include <fstream>
#include <sstream>

#include "core/paths/install_paths.h"

namespace fs = std::filesystem;

namespace kwb::agent {

const std::vector<std::string> &promptTemplateNames() {
  static const std::vector<std::string> names = {"system", "first_turn", "repair", "answer_format"};
  return names;
}

PromptTemplate loadPromptTemplate(const std::string &name, const fs::path &userDir, const fs::path &bundledDir) {
  const fs::path user = userDir.empty() ? userConfigDir() / "prompts" : userDir;
  fs::path bundled = bundledDir;
  if (bundled.empty())
    if (const auto found = bundledPromptsDir()) bundled = *found;
  const std::string file = name + ".md";
  std::error_code ec;
  for (const auto &[dir, isUser] : {std::pair{user, true}, std::pair{bundled, false}}) {
    if (dir.empty() || !fs::is_regular_file(dir / file, ec)) continue;
    std::ifstream in(dir / file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof())
      throw std::runtime_error("cannot read the prompt template " + (dir / file).string());
    return PromptTemplate{name, text.str(), dir / file, isUser};
  }
  throw std::runtime_error("no prompt template '" + name + "': neither " + (user / file).string() + " nor " +
                           (bundled.empty() ? std::string("the bundled prompts folder (not found: set $KWB_PROMPTS_DIR)")
                                            : (bundled / file).string()) +
                           " exists; reinstall the workbench, or write " + (user / file).string());
}

}  // namespace kwb::agent
