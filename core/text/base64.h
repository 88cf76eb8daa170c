#pragma once
// Standard base64 (RFC 4648, with padding), for binary payloads inside protocol JSON (CUBINs).
#include <optional>
#include <string>
#include <string_view>

namespace kwb {

std::string base64Encode(std::string_view bytes);
// nullopt when `text` is not valid padded base64 (whitespace is not allowed).
std::optional<std::string> base64Decode(std::string_view text);

}  // namespace kwb
