#pragma once
// kwb llm list | models | test | discover: the LLM providers from the command line.
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/llm/provider.h"

struct LlmArgs {
  std::string target;           // a configured provider's name, or a base URL
  std::string format;           // openai | anthropic | ollama (for a base URL)
  std::string model;
  std::string prompt = "Say hello in five words.";
  int maxTokens = 32;
  bool noStream = false;
  std::string workspace;        // record (test) or read (transcripts, replay) transcripts here; default: the GUI's
  std::string session;          // transcripts: which session ("" = connection tests)
  long long id = 0;             // replay: the transcript's id
};

int llmListCommand(bool asJson);
int llmModelsCommand(const LlmArgs &args, bool asJson);
int llmTestCommand(const LlmArgs &args, bool asJson);
int llmDiscoverCommand(bool asJson);
int llmTranscriptsCommand(const LlmArgs &args, bool asJson);
int llmReplayCommand(const LlmArgs &args, bool asJson);

// The provider args.target names (a configured one, or a base URL with args.format) and its key
// from the environment; nullopt after printing why not.
std::optional<std::pair<kwb::llm::ProviderConfig, std::string>> providerAndKey(const LlmArgs &args);

// The provider `target` names (a configured one, or a base URL spoken in `format`), `model` over
// its default, ready to chat; null after printing why not.
std::unique_ptr<kwb::llm::Provider> chatProvider(const std::string &target, const std::string &format,
                                                 const std::string &model);
