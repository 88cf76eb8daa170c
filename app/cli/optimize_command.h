#pragma once
// kwb optimize | sessions | trajectories export: agent sessions from the command line
// (core/agent/session.h), their list, and their trajectories as JSON Lines.
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

struct OptimizeArgs {
  std::string task;
  std::string workers;               // --workers: where the workers run (empty: this machine)
  std::string candidate;             // the kernel to start from; empty: the task's starter
  std::string provider;              // a configured provider's name, or a base URL
  std::string format;                // for a base URL
  std::string model;
  std::size_t candidates = 4;
  std::size_t turns = 3;
  std::optional<std::size_t> groups;  // default 3
  std::optional<std::size_t> easyBelow, hopelessAbove;
  double discount = 0.5;
  std::optional<double> dollars;
  std::optional<long long> tokens;
  std::optional<double> wallSeconds;
  int maxTokens = 4096;
  std::optional<double> temperature;
  std::vector<std::string> configs;
  double timeCap = 1.0;
  double timeLimit = 120.0;
  std::vector<int> gpus;
  bool noGpu = false;
  bool noProfile = false;
  bool noSanitize = false;
  bool noSkills = false;
  bool proposedCards = false;  // proposed (unproven) cards may reach the prompts
  bool noMemory = false;
  std::size_t contextWindow = 0;  // 0: the provider's, else 32768 assumed
  std::string resume;                // a session id
  std::string workspace;             // default: the workbench's
  std::string output;                // the best kernel's file
};

struct SessionsArgs {
  std::string workspace;
  std::vector<std::string> sessions;  // trajectories export
  std::string format = "jsonl";
  std::string output;                 // default: stdout
  bool all = false;                   // unrewarded attempts too
};

// Adds `optimize`, `sessions` and `trajectories export` to the app; main() runs the one given.
struct SessionCommands {
  CLI::App *optimize = nullptr, *sessions = nullptr, *trajectoriesExport = nullptr;
};
SessionCommands addSessionCommands(CLI::App &app, OptimizeArgs &optimize, SessionsArgs &sessions, bool &asJson);

int optimizeCommand(const OptimizeArgs &args, bool asJson);

// kwb suite TASKS --agent --provider P [--ablate memory|skills|dcp|none]...: the same sessions on
// every task once per arm, each arm with one part switched off (core/agent/ablation.h), and per
// arm solve rate, fast_p, LLM calls, tokens and GPU evaluations. Each arm starts from its own copy
// of the user's library (cards and memory), so no arm learns from another's sessions.
struct AgentSuiteArgs {
  std::string tasks;                  // the folder of task folders
  std::vector<std::string> ablate;    // arms, in order; empty: none
  OptimizeArgs session;               // provider, model, G, K, groups, budgets, GPUs, workspace
  std::string out;                    // the JSON file (default: none; --json prints it)
};
int agentSuiteCommand(const AgentSuiteArgs &args, bool asJson);
int sessionsCommand(const SessionsArgs &args, bool asJson);
int trajectoriesExportCommand(const SessionsArgs &args);
