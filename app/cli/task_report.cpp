#include "app/cli/task_report.h"

#include <cstdio>
#include <sstream>

namespace kwb {

namespace {

std::string joinExpressions(const std::vector<Expression> &exprs, const char *sep) {
  std::string s;
  for (std::size_t i = 0; i < exprs.size(); ++i) s += (i ? sep : "") + exprs[i].text();
  return s;
}

std::string humanCount(double v, const char *unit) {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000.0 && i < 5) {
    v /= 1000.0;
    ++i;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, prefixes[i], unit);
  return buf;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string generatorLine(const Generator &g) {
  std::string s(generatorKindName(g.kind));
  const GeneratorParams params = generatorParameterNames(g.kind);
  if (params.second)
    s += std::string("(") + params.first + " " + number(g.a) + ", " + params.second + " " + number(g.b) + ")";
  else
    s += "(" + number(g.a) + ")";
  if (const std::string extras = generatorExtrasText(g); !extras.empty()) s += " " + extras;
  if (g.seedOffset) s += " seed+" + std::to_string(g.seedOffset);
  return s;
}

std::string joined(const std::vector<std::string> &items) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s;
}

std::string launchLine(const Launch &l) {
  std::string s = l.kernel + "<<<(" + joinExpressions(l.grid, ", ") + "), (" +
                  joinExpressions(l.block, ", ") + ")";
  if (!l.sharedBytes.empty() && l.sharedBytes.text() != "0") s += ", " + l.sharedBytes.text();
  s += ">>>(";
  for (std::size_t i = 0; i < l.args.size(); ++i) s += (i ? ", " : "") + l.args[i];
  return s + ")";
}

}  // namespace

std::string formatTask(const Task &task) {
  std::ostringstream out;
  out << task.name << ": " << task.description << "\n"
      << "  folder      " << task.folder.string() << "\n"
      << "  sizes       ";
  for (std::size_t i = 0; i < task.sizeNames.size(); ++i) out << (i ? ", " : "") << task.sizeNames[i];
  out << "\n  seeds       ";
  for (std::size_t i = 0; i < task.seeds.size(); ++i) out << (i ? ", " : "") << task.seeds[i];
  out << "\n\nTensors:\n";
  for (const auto &t : task.tensors) {
    out << "  " << t.name << "  " << dtypeName(t.dtype) << "[" << joinExpressions(t.shape, ", ")
        << "]  " << roleName(t.role);
    if (t.init) out << "  init " << generatorLine(*t.init);
    for (const auto &g : t.moreInits) out << " | " << generatorLine(g);
    if (t.tolerance) {
      if (t.tolerance->exact) out << "  exact";
      else out << "  rtol " << number(t.tolerance->rtol) << " atol " << number(t.tolerance->atol);
    }
    if (!t.state.empty()) out << "  module state " << t.state;
    if (t.draw > 0) out << "  forward's random draw " << t.draw;
    out << "\n";
  }
  out << "\nConfigurations:\n";
  for (const auto &c : task.configs) {
    out << "  " << c.name << ":";
    for (const auto &n : task.sizeNames) out << " " << n << "=" << c.values.at(n);
    const double flops = static_cast<double>(task.flops.evaluate(c.values));
    const double bytes = static_cast<double>(task.bytes.evaluate(c.values));
    out << "  (" << humanCount(flops, "FLOP") << ", " << humanCount(bytes, "B");
    if (bytes > 0) {
      char ai[32];
      std::snprintf(ai, sizeof ai, "%.2f", flops / bytes);
      out << ", " << ai << " FLOP/B";
    }
    out << ")\n";
  }
  if (task.reference.hasCuda())
    out << "\nReference:  " << task.reference.source.string() << "  " << launchLine(task.reference.launch) << "\n";
  if (!task.reference.python.empty())
    out << (task.reference.hasCuda() ? "PyTorch:    " : "\nReference:  ") << task.reference.python.string()
        << " (a PyTorch module" << (task.reference.hasCuda() ? ", timed for the speedup over PyTorch" : "") << ")\n"
        << "            " << (task.reference.init ? "Model(" + joined(*task.reference.init) + ")" : "Model(*get_init_inputs())")
        << ", forward(" << joined(forwardArguments(task)) << ")\n";
  for (const auto &c : task.configs)
    if (c.launch) out << "  " << c.name << ": " << launchLine(*c.launch) << "\n";
  if (!task.params.empty()) {
    out << "Parameters:";
    for (const auto &p : task.params) out << " " << p.name << "=" << p.literal() << " (" << kwb::dtypeName(p.dtype) << ")";
    out << "\n";
  }
  if (task.launch) out << "Candidates: " << launchLine(*task.launch) << "\n";
  out << "Starter:    " << task.starterSource().string() << "\n";
  if (!task.tunables.empty()) {
    out << "\nTunables (passed as -DNAME=value):\n";
    for (const auto &t : task.tunables) {
      out << "  " << t.name << " =";
      for (auto v : t.values) out << " " << v;
      out << "\n";
    }
  }
  out << "\nCost: flops = " << task.flops.text() << "; bytes = " << task.bytes.text() << "\n";
  return out.str();
}

}  // namespace kwb
