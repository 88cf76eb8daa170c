#pragma once
// The prompt templates a session fills (core/agent/prompt.h renderTemplate): the bundled ones in
// resources/prompts/ (installed under share/kernel-workbench/prompts), each of which the user may
// replace with a copy of the same name in <config>/prompts/ (userConfigDir(); `kwb` and the
// window say which file was used). Names: system, first_turn, repair, answer_format.
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace kwb::agent {

struct PromptTemplate {
  std::string name;            // "repair"
  std::string text;
  std::filesystem::path path;  // the file read
  bool userCopy = false;       // from the user's config folder
};

// The names every session needs.
const std::vector<std::string> &promptTemplateNames();

// NAME.md from `userDir` (default userConfigDir() / "prompts") when it exists there, else from
// `bundledDir` (default bundledPromptsDir()). Throws std::runtime_error naming both places and
// the fix when neither has it or the file cannot be read.
PromptTemplate loadPromptTemplate(const std::string &name, const std::filesystem::path &userDir = {},
                                  const std::filesystem::path &bundledDir = {});

}  // namespace kwb::agent
