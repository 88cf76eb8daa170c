#include "core/text/content_hash.h"

#include <xxhash.h>

namespace kwb {

std::string contentHash(std::string_view bytes) {
  // XXH3 accepts a null pointer only together with a zero length; an empty view may carry one.
  const char *data = bytes.empty() ? "" : bytes.data();
  const XXH128_hash_t hash = XXH3_128bits(data, bytes.size());
  // The canonical form is big-endian (high half first), so the text is the same on every host.
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);

  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(sizeof(canonical.digest) * 2);
  for (unsigned char byte : canonical.digest) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 0x0f]);
  }
  return hex;
}

}  // namespace kwb
