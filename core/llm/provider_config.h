#pragma once
// The providers a user configured, in one JSON file shared by the GUI and `kwb llm`:
// $KWB_PROVIDERS_FILE, else $XDG_CONFIG_HOME/kernel-workbench/providers.json (default
// ~/.config/...). The file never holds a key: a provider names the environment variable that
// holds its key, or says the key is in the desktop keychain.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/llm/provider.h"

namespace kwb::llm {

std::filesystem::path providersFile();

// Throws std::runtime_error naming the file and what is wrong; a missing file is no providers.
std::vector<ProviderConfig> loadProviders(const std::filesystem::path &file = providersFile());
// Writes atomically (temporary file, then rename); throws std::runtime_error on failure.
void saveProviders(const std::vector<ProviderConfig> &providers, const std::filesystem::path &file = providersFile());

// The providers file's form: base_url as given, credentials included. Anything shown or printed
// takes redactedUrl(baseUrl) instead (kwb llm list --json does).
nlohmann::json toJson(const ProviderConfig &);
// Throws std::runtime_error naming the field.
ProviderConfig providerFromJson(const nlohmann::json &);

// Known hosted services and local servers, to start a new provider from: name, format, base URL,
// key variable, and prices where public.
std::vector<ProviderConfig> providerTemplates();

// The key of a provider from its environment variable; empty when none is set. (The keychain is
// read by the GUI and the command line through QtKeychain, outside core/.)
std::string keyFromEnvironment(const ProviderConfig &);

// A provider for a bare base URL ("http://127.0.0.1:8080/v1"): OpenAI-compatible unless the
// format is given; the key from $KWB_LLM_API_KEY when set.
ProviderConfig adHocProvider(const std::string &baseUrl, std::optional<WireFormat> format = std::nullopt);

}  // namespace kwb::llm
