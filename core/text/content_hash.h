#pragma once
#include <string>
#include <string_view>

namespace kwb {
// A stable content address: 32 lowercase hex digits of XXH3-128 over the bytes.
std::string contentHash(std::string_view bytes);
}
