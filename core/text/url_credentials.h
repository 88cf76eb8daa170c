#pragma once
// Credentials inside a URL (issue 45, 2): "http://user:KEY@host/v1?key=KEY" must never be stored,
// printed or exported as given. What counts as a credential:
//   - the user part, user and password alike ("http://user:KEY@h", "https://KEY@h");
//   - the value of a query (or fragment) parameter whose name looks like a key or a token. The
//     name (percent-escapes decoded) is read as words, split at '_', '-', '.' and camelCase humps,
//     case-insensitive ("accessToken" is access + token, "X-Amz-Signature" x + amz + signature):
//     a credential when a word is key, pwd, auth, authorization, sig, bearer, jwt, session,
//     sessionid, credential(s), or ends in token, secret, password, passwd, passphrase, apikey or
//     signature ("api_key", "access_key_id", "subscriptionKey", "clientSecret", "authToken";
//     not "monkey", "keys", "tokenizer", "max_tokens").
// The rest of the URL stays as it was, so it can still be read and compared. The request itself
// uses the real URL; these are for everything else.
#include <string>
#include <string_view>

namespace kwb {

// The URL with every credential replaced by "***": "http://***@host/v1?key=***&alt=json".
std::string redactedUrl(std::string_view url);

// True when the URL holds a credential (a user part or a key-like parameter), redacted or not.
bool urlHasCredentials(std::string_view url);

// Free text (an error message, a JSON document) with every http:// or https:// URL in it
// redacted. A URL runs to the first blank, quote, '<', '>' or backslash.
std::string redactUrlsIn(std::string_view text);

// `text` with the raw credentials of `url` (and their percent-decoded forms) replaced by "***"
// wherever they appear, not only inside the URL: a server's or libcurl's message may echo a
// password or a key alone. Those are the password, the whole "user:password" and the values of
// key-like parameters; never a user name alone (it may be any word of the text: a stored answer
// blanked there no longer replays). Values shorter than 4 characters are left (they would blot
// out the text).
std::string withoutUrlSecrets(std::string text, std::string_view url);

}  // namespace kwb
