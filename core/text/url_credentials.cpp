#include "core/text/url_credentials.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace kwb {

namespace {

constexpr std::string_view kMask = "***";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes decoded ('+' too, as a form-encoded query writes a blank); a malformed escape is
// kept as it is.
std::string percentDecoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hexValue(s[i + 1]) >= 0 && hexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A parameter's name in lower-case words: split at '_', '-', '.', blanks and camelCase humps
// ("accessToken" -> access token, "XAmzSignature" -> x amz signature, "APIKey" -> api key).
std::vector<std::string> nameWords(std::string_view raw) {
  const std::string name = percentDecoded(raw);
  std::vector<std::string> words(1);
  auto isUpper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  auto isLower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '_' || c == '-' || c == '.' || c == ' ') {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    // A hump: "tT" (access|Token), or the last capital of a run before a lower-case ("API|Key").
    const bool hump = i > 0 && isUpper(c) &&
                      (isLower(name[i - 1]) || std::isdigit(static_cast<unsigned char>(name[i - 1])) || (isUpper(name[i - 1]) && i + 1 < name.size() && isLower(name[i + 1])));
    if (hump && !words.back().empty()) words.emplace_back();
    words.back().push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

bool isSecretName(std::string_view raw) {
  // A word that is one of these ("key" in "access_key_id", "sessionKey", "key")...
  static constexpr std::string_view kWords[] = {"key",  "pwd", "auth", "authorization", "sig",  "bearer",
                                                "jwt",  "session", "sessionid", "credential", "credentials"};
  // ...or ends in one of these ("accessToken", "clientsecret", "dbPassword", "apikey"), but not
  // "tokenizer" or "max_tokens".
  static constexpr std::string_view kEndings[] = {"token", "secret", "password", "passwd", "passphrase", "apikey", "signature"};
  for (const std::string &word : nameWords(raw)) {
    for (std::string_view w : kWords)
      if (word == w) return true;
    for (std::string_view e : kEndings)
      if (endsWith(word, e)) return true;
  }
  return false;
}

// Where the parts of a URL lie (offsets into it); npos when a part is absent.
struct UrlParts {
  std::size_t userStart = std::string_view::npos, userEnd = std::string_view::npos;  // [start, end) before '@'
  std::size_t queryStart = std::string_view::npos, queryEnd = std::string_view::npos;  // after '?', up to '#'
  std::size_t fragmentStart = std::string_view::npos;                               // after '#'
};

UrlParts partsOf(std::string_view url) {
  UrlParts p;
  std::size_t start = 0;
  if (const auto scheme = url.find("://"); scheme != std::string_view::npos) {
    start = scheme + 3;
    const std::size_t end = std::min(url.find_first_of("/?#", start), url.size());
    const auto at = url.substr(start, end - start).rfind('@');
    if (at != std::string_view::npos) {
      p.userStart = start;
      p.userEnd = start + at;
    }
    start = end;
  }
  const auto fragment = url.find('#', start);
  const auto query = url.find('?', start);
  if (query != std::string_view::npos && (fragment == std::string_view::npos || query < fragment)) {
    p.queryStart = query + 1;
    p.queryEnd = fragment == std::string_view::npos ? url.size() : fragment;
  }
  if (fragment != std::string_view::npos) p.fragmentStart = fragment + 1;
  return p;
}

// Calls f(nameBegin, valueBegin, valueEnd) for each "name=value" of a query or fragment.
template <typename F>
void forEachParameter(std::string_view url, std::size_t begin, std::size_t end, F f) {
  std::size_t pos = begin;
  while (pos < end) {
    std::size_t next = url.find_first_of("&;", pos);
    if (next == std::string_view::npos || next > end) next = end;
    const std::string_view part = url.substr(pos, next - pos);
    if (const auto eq = part.find('='); eq != std::string_view::npos && isSecretName(part.substr(0, eq)))
      f(pos + eq + 1, next);
    pos = next + 1;
  }
}

// The spans [begin, end) of every credential in the URL, in order.
std::vector<std::pair<std::size_t, std::size_t>> secretSpans(std::string_view url) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  const UrlParts p = partsOf(url);
  if (p.userStart != std::string_view::npos) spans.emplace_back(p.userStart, p.userEnd);
  auto add = [&](std::size_t b, std::size_t e) { spans.emplace_back(b, e); };
  if (p.queryStart != std::string_view::npos) forEachParameter(url, p.queryStart, p.queryEnd, add);
  if (p.fragmentStart != std::string_view::npos) forEachParameter(url, p.fragmentStart, url.size(), add);
  return spans;
}

bool urlCharacter(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u <= 0x20 || u == 0x7f) return false;
  return c != '"' && c != '\'' && c != '<' && c != '>' && c != '\\' && c != '`';
}

bool schemeCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

}  // namespace

std::string redactedUrl(std::string_view url) {
  std::string out;
  std::size_t copied = 0;
  for (const auto &[b, e] : secretSpans(url)) {
    out.append(url.substr(copied, b - copied));
    if (b != e) out.append(kMask);
    copied = e;
  }
  out.append(url.substr(copied));
  return out;
}

bool urlHasCredentials(std::string_view url) {
  for (const auto &[b, e] : secretSpans(url))
    if (b != e) return true;
  return false;
}

std::string redactUrlsIn(std::string_view text) {
  std::string out;
  std::size_t copied = 0;
  for (std::size_t found = text.find("://"); found != std::string_view::npos; found = text.find("://", found + 3)) {
    std::size_t begin = found;
    while (begin > copied && schemeCharacter(text[begin - 1])) --begin;
    while (begin < found && !std::isalpha(static_cast<unsigned char>(text[begin]))) ++begin;  // a scheme starts with a letter
    if (begin == found) continue;
    std::size_t end = found + 3;
    while (end < text.size() && urlCharacter(text[end])) ++end;
    // Punctuation closing a sentence is not part of the URL ("... at http://h/v1.").
    while (end > found + 3 && std::string_view(".,;:!?)]}").find(text[end - 1]) != std::string_view::npos) --end;
    out.append(text.substr(copied, begin - copied));
    out.append(redactedUrl(text.substr(begin, end - begin)));
    copied = end;
    found = end - 3;  // the next search starts at the end of this URL
  }
  out.append(text.substr(copied));
  return out;
}

std::string withoutUrlSecrets(std::string text, std::string_view url) {
  std::vector<std::string> secrets;
  auto add = [&secrets](std::string_view s) {
    for (std::string v : {std::string(s), percentDecoded(s)})
      if (v.size() >= 4 && v != kMask) secrets.push_back(std::move(v));
  };
  // The user part's password, and the whole "user:password"; never the user name alone: a name
  // ("completion", "chat") can be any word of the text, and blanking it corrupts a stored answer
  // that `kwb llm replay` reads again. (In a URL the whole user part is still redacted.)
  const UrlParts p = partsOf(url);
  for (const auto &[b, e] : secretSpans(url)) {
    const std::string_view value = url.substr(b, e - b);
    if (b != p.userStart) {
      add(value);
    } else if (const auto colon = value.find(':'); colon != std::string_view::npos) {
      add(value);
      add(value.substr(colon + 1));
    }
  }
  // Longest first: a user part "user:KEY" goes whole before "KEY" alone.
  std::sort(secrets.begin(), secrets.end(), [](const std::string &a, const std::string &b) { return a.size() > b.size(); });
  for (const std::string &secret : secrets)
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + kMask.size()))
      text.replace(at, secret.size(), kMask);
  return text;
}

}  // namespace kwb
