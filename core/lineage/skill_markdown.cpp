#include "core/lineage/skill_markdown.h"

#include <yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

namespace kwb {

using nlohmann::json;

std::string SkillFileProblem::text() const {
  return file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + message;
}

namespace {

// ---- the front matter as a tree with line numbers -------------------------------------------

struct YamlNode {
  enum class Kind { Scalar, Sequence, Mapping } kind = Kind::Scalar;
  std::string value;  // a scalar's text
  bool plain = false;  // a plain (unquoted) scalar: may stand for a number, a boolean or null
  int line = 0;        // 1-based, in the file
  std::vector<YamlNode> items;                            // a sequence's
  std::vector<std::pair<YamlNode, YamlNode>> entries;     // a mapping's
  const YamlNode *find(const std::string &key) const {
    for (const auto &[k, v] : entries)
      if (k.kind == Kind::Scalar && k.value == key) return &v;
    return nullptr;
  }
};

// Nodes at most: aliases may point at a node many times, and a small file must not expand into
// a huge tree ("billion laughs").
constexpr std::size_t kMaxNodes = 100000;
constexpr int kMaxDepth = kMaxSkillNesting;

struct Reader {
  std::string file;
  int lineOffset = 0;  // the front matter's first line in the file, less one
  std::vector<SkillFileProblem> problems;
  std::vector<SkillRecordKey> recordKeys;
  void problem(int line, std::string message) { problems.push_back({file, line, std::move(message)}); }
};

// ---- checks before the parser --------------------------------------------------------------

// Where the text first stops being UTF-8 (overlong forms, surrogates and code points past
// U+10FFFF included, as the JSON the library stores refuses them): its offset, or nothing.
std::optional<std::size_t> firstNonUtf8(const std::string &text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = byte(i);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
    if (c < 0x80) n = 1;
    else if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
      n = 3;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 4;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return i;
    }
    if (i + n > text.size()) return i;
    for (std::size_t k = 1; k < n; ++k)
      if (byte(i + k) < (k == 1 ? lo : 0x80) || byte(i + k) > (k == 1 ? hi : 0xbf)) return i;
    i += n;
  }
  return std::nullopt;
}

// Where the front matter's first document first nests deeper than `limit` lists and mappings,
// counted on libyaml's own events, without building the tree; nothing when it does not, or when
// it is not YAML (the load that follows names that problem). libyaml's time to load grows with
// the square of the flow nesting ('[[[...': each token looks at every open '[' for a pending
// key), but its scanner reads at most about 1,024 characters past the event it gives, so
// stopping at the event that passes the limit keeps the time linear in the file's size. The
// count is the parser's own: anchors, tags, quotes, plain text on several lines, CRLF, tabs and
// directives cannot make it count fewer levels than the load would build (a second scanner of
// the text did: 'deep: &a [[[...' passed it).
struct DeepAt {
  int line = 0, column = 0;  // 0-based, in the front matter
};
std::optional<DeepAt> nestingBeyond(const std::string &yaml, int limit) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return std::nullopt;
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t *)> parserGuard(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char *>(yaml.data()), yaml.size());
  int depth = 0;
  for (;;) {
    yaml_event_t event;
    if (!yaml_parser_parse(&parser, &event)) return std::nullopt;
    const yaml_event_type_t type = event.type;
    const yaml_mark_t mark = event.start_mark;
    yaml_event_delete(&event);
    if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
      if (++depth > limit) return DeepAt{static_cast<int>(mark.line), static_cast<int>(mark.column)};
    } else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
      --depth;
    } else if (type == YAML_DOCUMENT_END_EVENT || type == YAML_STREAM_END_EVENT) {
      return std::nullopt;  // the load reads the first document only
    }
  }
}

bool convert(yaml_document_t &doc, yaml_node_t *node, YamlNode &out, int depth, std::size_t &count, Reader &r) {
  if (++count > kMaxNodes) {
    r.problem(r.lineOffset + 1, "the front matter expands to more than " + std::to_string(kMaxNodes) +
                                    " values (aliases repeated?)");
    return false;
  }
  out.line = r.lineOffset + static_cast<int>(node->start_mark.line) + 1;
  if (depth > kMaxDepth) {
    r.problem(out.line, "the front matter nests deeper than " + std::to_string(kMaxDepth) + " levels");
    return false;
  }
  switch (node->type) {
    case YAML_SCALAR_NODE:
      out.kind = YamlNode::Kind::Scalar;
      out.value.assign(reinterpret_cast<const char *>(node->data.scalar.value), node->data.scalar.length);
      out.plain = node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
      return true;
    case YAML_SEQUENCE_NODE:
      out.kind = YamlNode::Kind::Sequence;
      for (auto *item = node->data.sequence.items.start; item < node->data.sequence.items.top; ++item) {
        out.items.emplace_back();
        if (!convert(doc, yaml_document_get_node(&doc, *item), out.items.back(), depth + 1, count, r)) return false;
      }
      return true;
    case YAML_MAPPING_NODE: {
      out.kind = YamlNode::Kind::Mapping;
      std::set<std::string> seen;
      for (auto *pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top; ++pair) {
        YamlNode key, value;
        if (!convert(doc, yaml_document_get_node(&doc, pair->key), key, depth + 1, count, r)) return false;
        if (!convert(doc, yaml_document_get_node(&doc, pair->value), value, depth + 1, count, r)) return false;
        if (key.kind != YamlNode::Kind::Scalar) {
          r.problem(key.line, "a key must be a plain name");
          continue;
        }
        if (!seen.insert(key.value).second) {
          r.problem(key.line, "'" + key.value + "' appears twice");
          continue;
        }
        out.entries.emplace_back(std::move(key), std::move(value));
      }
      return true;
    }
    default:
      r.problem(out.line, "an empty value where one was expected");
      return false;
  }
}

// Parses the front matter's text; nothing (and problems) when it is not YAML.
std::optional<YamlNode> parseYaml(const std::string &text, Reader &r) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    r.problem(0, "cannot start the YAML parser");
    return std::nullopt;
  }
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t *)> parserGuard(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char *>(text.data()), text.size());
  yaml_document_t doc;
  if (!yaml_parser_load(&parser, &doc)) {
    // A problem found only at the end of the front matter (an unclosed bracket or quote) is
    // placed where the construct opened.
    const bool atEnd = parser.problem_mark.index >= text.size();
    const auto &mark = parser.context && atEnd ? parser.context_mark : parser.problem_mark;
    std::string message = parser.problem ? parser.problem : "the front matter is not YAML";
    if (parser.context) message = std::string(parser.context) + (atEnd ? " (it opened here)" : "") + ": " + message;
    r.problem(r.lineOffset + static_cast<int>(mark.line) + 1, "YAML: " + message);
    return std::nullopt;
  }
  std::unique_ptr<yaml_document_t, void (*)(yaml_document_t *)> docGuard(&doc, yaml_document_delete);
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root) {
    r.problem(r.lineOffset + 1, "the front matter is empty (it needs skill_id, intent, preconditions and scope)");
    return std::nullopt;
  }
  YamlNode tree;
  std::size_t count = 0;
  if (!convert(doc, root, tree, 0, count, r)) return std::nullopt;
  return tree;
}

// A plain scalar that YAML reads as something else than text.
std::optional<json> typedPlain(const std::string &v) {
  if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return json(nullptr);
  if (v == "true" || v == "True" || v == "TRUE") return json(true);
  if (v == "false" || v == "False" || v == "FALSE") return json(false);
  const char *begin = v.c_str();
  char *end = nullptr;
  errno = 0;
  const long long i = std::strtoll(begin, &end, 10);
  if (*end == '\0' && errno == 0 && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-' || v[0] == '+'))
    return json(i);
  const double d = std::strtod(begin, &end);
  if (*end == '\0' && std::isfinite(d) &&
      (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-' || v[0] == '+' || v[0] == '.'))
    return json(d);
  return std::nullopt;
}

json toJson(const YamlNode &n) {
  switch (n.kind) {
    case YamlNode::Kind::Scalar:
      if (n.plain)
        if (auto typed = typedPlain(n.value)) return *typed;
      return n.value;
    case YamlNode::Kind::Sequence: {
      json a = json::array();
      for (const auto &i : n.items) a.push_back(toJson(i));
      return a;
    }
    case YamlNode::Kind::Mapping: {
      json o = json::object();
      for (const auto &[k, v] : n.entries) o[k.value] = toJson(v);
      return o;
    }
  }
  return nullptr;
}

const char *kindName(const YamlNode &n) {
  switch (n.kind) {
    case YamlNode::Kind::Scalar: return "a single value";
    case YamlNode::Kind::Sequence: return "a list";
    case YamlNode::Kind::Mapping: return "a mapping";
  }
  return "?";
}

bool readText(const YamlNode &n, const std::string &key, std::string &out, Reader &r) {
  if (n.kind != YamlNode::Kind::Scalar) {
    r.problem(n.line, key + " must be text, not " + kindName(n));
    return false;
  }
  out = n.value;
  return true;
}

// A list of text, or one text as a list of one.
bool readTextList(const YamlNode &n, const std::string &key, std::vector<std::string> &out, Reader &r) {
  out.clear();
  if (n.kind == YamlNode::Kind::Scalar) {
    if (!(n.plain && n.value.empty())) out.push_back(n.value);
    return true;
  }
  if (n.kind != YamlNode::Kind::Sequence) {
    r.problem(n.line, key + " must be a list of text, not " + kindName(n));
    return false;
  }
  bool ok = true;
  for (const auto &item : n.items) {
    if (item.kind != YamlNode::Kind::Scalar) {
      r.problem(item.line, "each item of " + key + " must be text, not " + kindName(item));
      ok = false;
      continue;
    }
    out.push_back(item.value);
  }
  return ok;
}

// ---- the body ------------------------------------------------------------------------------

std::string canonicalHeading(const std::string &heading) {
  for (const auto &k : kKnownSections) {
    const std::string known = k.heading;
    if (known.size() != heading.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < known.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(known[i])) == std::tolower(static_cast<unsigned char>(heading[i]));
    if (same) return known;
  }
  return heading;
}

// An ATX heading ("# Text", "## Text"): its level and text, outside fenced code.
bool headingOf(const std::string &line, int &level, std::string &text) {
  std::size_t n = 0;
  while (n < line.size() && line[n] == '#') ++n;
  if (n == 0 || n > 6) return false;
  if (n < line.size() && line[n] != ' ' && line[n] != '\t') return false;
  std::string t = line.substr(n);
  const auto first = t.find_first_not_of(" \t");
  if (first == std::string::npos) t.clear();
  else t = t.substr(first);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.pop_back();
  level = static_cast<int>(n);
  text = canonicalHeading(t);
  return true;
}

std::vector<CardSection> parseBody(const std::string &body) {
  std::vector<CardSection> sections;
  CardSection current{0, "", ""};
  std::optional<CodeFence> fence;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = body.find('\n', pos);
    const bool lastLine = end == std::string::npos;
    if (lastLine) end = body.size();
    const std::string line = body.substr(pos, end - pos);
    pos = end + 1;
    if (!fence) fence = codeFenceOf(line);
    else if (closesFence(line, *fence)) fence.reset();
    int level = 0;
    std::string heading;
    if (!fence && headingOf(line, level, heading)) {
      if (current.level > 0 || !current.text.empty()) sections.push_back(std::move(current));
      current = CardSection{level, heading, ""};
      continue;
    }
    current.text += line;
    if (!lastLine) current.text += "\n";
  }
  if (current.level > 0 || !current.text.empty()) sections.push_back(std::move(current));
  return sections;
}

// ---- reading the card from the tree --------------------------------------------------------

void readEvidence(const YamlNode &n, SkillCard &card, Reader &r) {
  if (n.kind != YamlNode::Kind::Sequence) {
    r.problem(n.line, std::string("evidence must be a list of measurements, not ") + kindName(n));
    return;
  }
  for (const auto &item : n.items) {
    if (item.kind != YamlNode::Kind::Mapping) {
      r.problem(item.line, "each evidence item must be a mapping (kind, task, config, before_ms, after_ms, ...)");
      continue;
    }
    try {
      card.evidence.push_back(toJson(item).get<CardEvidence>());
    } catch (const std::exception &e) {
      r.problem(item.line, std::string("an evidence item cannot be read: ") + e.what());
    }
  }
}

SkillCard readCard(const YamlNode &root, Reader &r) {
  SkillCard card;
  static const std::set<std::string> kKnownKeys = {"skill_id", "intent",   "preconditions", "scope",    "anchor",
                                                   "requires", "provides", "conflicts",     "status",   "evidence",
                                                   "verification"};
  const int top = r.lineOffset + 1;
  if (const auto *id = root.find("skill_id")) {
    if (id->kind == YamlNode::Kind::Scalar) {
      card.id = id->value;
      if (std::string why; !validSkillId(card.id, &why)) r.problem(id->line, "skill_id '" + card.id + "' is not usable: " + why);
    } else {
      r.problem(id->line, std::string("skill_id must be text, not ") + kindName(*id));
    }
  } else {
    r.problem(top, "the front matter has no skill_id");
  }
  if (const auto *intent = root.find("intent")) readText(*intent, "intent", card.intent, r);
  else r.problem(top, "the front matter has no intent (one line: what the change achieves)");
  if (const auto *p = root.find("preconditions")) readTextList(*p, "preconditions", card.preconditions, r);
  else r.problem(top, "the front matter has no preconditions (a list of 'Category: reason')");
  if (const auto *scope = root.find("scope")) {
    if (scope->kind != YamlNode::Kind::Mapping) {
      r.problem(scope->line, std::string("scope must be a mapping of cases, languages and platforms, not ") + kindName(*scope));
    } else {
      for (const auto &[k, v] : scope->entries) {
        if (k.value == "cases") readTextList(v, "scope.cases", card.scope.cases, r);
        else if (k.value == "languages") readTextList(v, "scope.languages", card.scope.languages, r);
        else if (k.value == "platforms") readTextList(v, "scope.platforms", card.scope.platforms, r);
        else r.problem(k.line, "scope has '" + k.value + "'; it holds cases, languages and platforms");
      }
    }
  } else {
    r.problem(top, "the front matter has no scope (cases, languages, platforms; '*' for any)");
  }
  if (const auto *a = root.find("anchor")) readText(*a, "anchor", card.anchor, r);
  if (const auto *v = root.find("requires")) readTextList(*v, "requires", card.requiredFeatures, r);
  if (const auto *v = root.find("provides")) readTextList(*v, "provides", card.providedFeatures, r);
  if (const auto *v = root.find("conflicts")) readTextList(*v, "conflicts", card.conflictingFeatures, r);
  for (const auto &[k, v] : root.entries)
    if (k.value == "status" || k.value == "evidence" || k.value == "verification") r.recordKeys.push_back({k.value, k.line});
  if (const auto *v = root.find("verification")) readTextList(*v, "verification", card.verification, r);
  if (const auto *s = root.find("status")) {
    std::string text;
    if (readText(*s, "status", text, r)) {
      if (auto status = cardStatusFromString(text)) card.status = *status;
      else r.problem(s->line, "status '" + text + "' is not one of proposed, admitted, rejected");
    }
  }
  if (const auto *e = root.find("evidence")) readEvidence(*e, card, r);
  for (const auto &[k, v] : root.entries)
    if (!kKnownKeys.count(k.value)) card.extra[k.value] = toJson(v);
  return card;
}

// ---- writing -------------------------------------------------------------------------------

class Emitter {
 public:
  Emitter() {
    yaml_emitter_initialize(&e_);
    yaml_emitter_set_output(&e_, &Emitter::write, &out_);
    yaml_emitter_set_width(&e_, 80);
    yaml_emitter_set_unicode(&e_, 1);
    yaml_emitter_set_indent(&e_, 2);
    yaml_event_t ev;
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    emit(ev);
    yaml_document_start_event_initialize(&ev, nullptr, nullptr, nullptr, 1);
    emit(ev);
  }
  ~Emitter() { yaml_emitter_delete(&e_); }
  Emitter(const Emitter &) = delete;
  Emitter &operator=(const Emitter &) = delete;

  void text(const std::string &v) {
    // Text that YAML would read as a number, a boolean or null is quoted.
    const bool typed = typedPlain(v).has_value();
    scalar(v, !typed, true, YAML_ANY_SCALAR_STYLE);
  }
  void number(const json &v) {
    if (v.is_number_integer() || v.is_number_unsigned()) {
      scalar(v.dump(), true, false, YAML_PLAIN_SCALAR_STYLE);
      return;
    }
    std::string s = v.dump();  // the shortest text that reads back as the same double
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // stays a number with a fraction
    scalar(s, true, false, YAML_PLAIN_SCALAR_STYLE);
  }
  void value(const json &v) {
    if (v.is_object()) {
      startMap();
      for (const auto &[k, x] : v.items()) {
        text(k);
        value(x);
      }
      endMap();
    } else if (v.is_array()) {
      startList(v.empty());
      for (const auto &x : v) value(x);
      endList();
    } else if (v.is_string()) {
      text(v.get<std::string>());
    } else if (v.is_boolean()) {
      scalar(v.get<bool>() ? "true" : "false", true, false, YAML_PLAIN_SCALAR_STYLE);
    } else if (v.is_null()) {
      scalar("null", true, false, YAML_PLAIN_SCALAR_STYLE);
    } else {
      number(v);
    }
  }
  void startMap() {
    yaml_event_t ev;
    yaml_mapping_start_event_initialize(&ev, nullptr, nullptr, 1, YAML_BLOCK_MAPPING_STYLE);
    emit(ev);
  }
  void endMap() {
    yaml_event_t ev;
    yaml_mapping_end_event_initialize(&ev);
    emit(ev);
  }
  void startList(bool flow = false) {
    yaml_event_t ev;
    yaml_sequence_start_event_initialize(&ev, nullptr, nullptr, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
    emit(ev);
  }
  void endList() {
    yaml_event_t ev;
    yaml_sequence_end_event_initialize(&ev);
    emit(ev);
  }
  void textList(const std::vector<std::string> &items) {
    startList(items.empty());
    for (const auto &i : items) text(i);
    endList();
  }
  std::string finish() {
    yaml_event_t ev;
    yaml_document_end_event_initialize(&ev, 1);
    emit(ev);
    yaml_stream_end_event_initialize(&ev);
    emit(ev);
    yaml_emitter_flush(&e_);
    return out_;
  }

 private:
  static int write(void *data, unsigned char *buffer, size_t size) {
    static_cast<std::string *>(data)->append(reinterpret_cast<const char *>(buffer), size);
    return 1;
  }
  void scalar(const std::string &v, bool plainImplicit, bool quotedImplicit, yaml_scalar_style_t style) {
    yaml_event_t ev;
    yaml_scalar_event_initialize(&ev, nullptr, reinterpret_cast<const yaml_char_t *>(YAML_STR_TAG),
                                 reinterpret_cast<const yaml_char_t *>(v.data()), static_cast<int>(v.size()),
                                 plainImplicit, quotedImplicit || !plainImplicit, style);
    emit(ev);
  }
  void emit(yaml_event_t &ev) {
    if (!yaml_emitter_emit(&e_, &ev) && error_.empty()) error_ = e_.problem ? e_.problem : "YAML emitter error";
  }
  yaml_emitter_t e_;
  std::string out_;
  std::string error_;
};

}  // namespace

SkillFileRead readSkillMarkdown(const std::string &text, const std::string &displayPath) {
  SkillFileRead out;
  Reader r;
  r.file = displayPath;
  if (text.size() > kMaxSkillFileBytes) {
    r.problem(0, "the file is larger than " + std::to_string(kMaxSkillFileBytes >> 20) + " MiB");
    out.problems = std::move(r.problems);
    return out;
  }
  if (text.find('\0') != std::string::npos) {
    int line = 1;
    for (std::size_t i = 0; i < text.find('\0'); ++i) line += text[i] == '\n';
    r.problem(line, "a NUL byte: SKILL.md is text");
    out.problems = std::move(r.problems);
    return out;
  }
  if (const auto bad = firstNonUtf8(text)) {
    const std::size_t lineStart = *bad == 0 ? 0 : text.rfind('\n', *bad - 1) + 1;  // npos + 1 is 0
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(*bad), '\n'));
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[*bad]));
    r.problem(line, "column " + std::to_string(*bad - lineStart + 1) + ": the byte " + byte +
                        " is not UTF-8: SKILL.md is UTF-8 text (save the file as UTF-8)");
    out.problems = std::move(r.problems);
    return out;
  }
  // The front matter: from a first line "---" to the next line "---" (or "...").
  std::size_t start = 0;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3;  // a byte-order mark
  auto lineAt = [&](std::size_t pos, std::size_t &next) {
    std::size_t end = text.find('\n', pos);
    next = end == std::string::npos ? text.size() : end + 1;
    std::string line = text.substr(pos, (end == std::string::npos ? text.size() : end) - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    return line;
  };
  std::size_t next = 0;
  if (lineAt(start, next) != "---") {
    r.problem(1, "SKILL.md starts with a '---' line and YAML front matter (skill_id, intent, preconditions, scope)");
    out.problems = std::move(r.problems);
    return out;
  }
  const std::size_t yamlStart = next;
  std::size_t pos = next, yamlEnd = std::string::npos, bodyStart = text.size();
  int line = 2;
  while (pos < text.size()) {
    const std::string l = lineAt(pos, next);
    if (l == "---" || l == "...") {
      yamlEnd = pos;
      bodyStart = next;
      break;
    }
    pos = next;
    ++line;
  }
  if (yamlEnd == std::string::npos) {
    r.problem(1, "the front matter opened on line 1 is never closed (a '---' line after it)");
    out.problems = std::move(r.problems);
    return out;
  }
  r.lineOffset = 1;
  const std::string yaml = text.substr(yamlStart, yamlEnd - yamlStart);
  if (const auto deep = nestingBeyond(yaml, kMaxDepth)) {
    r.problem(r.lineOffset + deep->line + 1, "column " + std::to_string(deep->column + 1) +
                                                 ": the front matter nests deeper than " + std::to_string(kMaxDepth) +
                                                 " levels (lists and mappings inside one another; a card needs 3)");
    out.problems = std::move(r.problems);
    return out;
  }
  const auto tree = parseYaml(yaml, r);
  if (!tree) {
    out.problems = std::move(r.problems);
    return out;
  }
  if (tree->kind != YamlNode::Kind::Mapping) {
    r.problem(tree->line, std::string("the front matter must be a mapping (skill_id: ..., intent: ...), not ") + kindName(*tree));
    out.problems = std::move(r.problems);
    return out;
  }
  SkillCard card = readCard(*tree, r);
  card.body = parseBody(text.substr(bodyStart));
  if (r.problems.empty()) out.card = std::move(card);
  out.problems = std::move(r.problems);
  out.recordKeys = std::move(r.recordKeys);
  return out;
}

std::string writeSkillMarkdown(const SkillCard &card, bool withRecord) {
  Emitter y;
  y.startMap();
  y.text("skill_id");
  y.text(card.id);
  y.text("intent");
  y.text(card.intent);
  y.text("preconditions");
  y.textList(card.preconditions);
  y.text("scope");
  y.startMap();
  y.text("cases");
  y.textList(card.scope.cases);
  y.text("languages");
  y.textList(card.scope.languages);
  y.text("platforms");
  y.textList(card.scope.platforms);
  y.endMap();
  // This workbench's keys, only where they hold something: a published card writes back with the
  // keys it had (and a status).
  if (!card.anchor.empty()) {
    y.text("anchor");
    y.text(card.anchor);
  }
  const std::pair<const char *, const std::vector<std::string> *> lists[] = {
      {"requires", &card.requiredFeatures}, {"provides", &card.providedFeatures}, {"conflicts", &card.conflictingFeatures}};
  for (const auto &[key, list] : lists)
    if (!list->empty()) {
      y.text(key);
      y.textList(*list);
    }
  if (withRecord) {
    y.text("status");
    y.text(toString(card.status));
  }
  if (withRecord && !card.evidence.empty()) {
    y.text("evidence");
    y.value(json(card.evidence));
  }
  if (withRecord && !card.verification.empty()) {
    y.text("verification");
    y.textList(card.verification);
  }
  for (const auto &[k, v] : card.extra.items()) {
    y.text(k);
    y.value(v);
  }
  y.endMap();
  std::string yaml = y.finish();
  if (yaml.size() >= 4 && yaml.compare(yaml.size() - 4, 4, "...\n") == 0) yaml.resize(yaml.size() - 4);
  std::string out = "---\n" + yaml + "---\n";
  for (const auto &s : card.body) {
    if (s.level > 0) out += std::string(static_cast<std::size_t>(s.level), '#') + " " + s.heading + "\n";
    out += s.text;
  }
  return out;
}

}  // namespace kwb
