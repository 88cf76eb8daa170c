#pragma once
// Splitting an element range over threads for the host-side checks (compare.cpp, poison.cpp):
// contiguous chunks of whole blocks, so per-block results merged in block order are the same
// whatever the number of threads.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace kwb::detail {

// The bounds of the chunks of [0, count): {0, b1, ..., count}, at least one chunk. `threads`
// chunks (0: one per hardware thread from `parallelMin` elements on, else one), each of whole
// blocks of `block` elements but the last, and no empty chunk.
inline std::vector<std::uint64_t> chunkBounds(std::uint64_t count, unsigned threads, std::uint64_t block,
                                       std::uint64_t parallelMin) {
  std::uint64_t workers = threads;
  if (workers == 0) workers = count < parallelMin ? 1 : std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t blocks = std::max<std::uint64_t>(1, (count + block - 1) / block);
  workers = std::clamp<std::uint64_t>(workers, 1, blocks);
  const std::uint64_t perChunk = (blocks + workers - 1) / workers;  // blocks
  std::vector<std::uint64_t> bounds{0};
  do {
    const std::uint64_t next = bounds.back() + perChunk * block;
    bounds.push_back(next >= count || next < bounds.back() ? count : next);
  } while (bounds.back() < count);
  return bounds;
}

// Runs work(chunk, first, end) for every chunk of `bounds`, chunk 0 on the calling thread and
// each other on a thread of its own (on the calling thread too when no thread can be started).
// Rethrows the exception of the first chunk that threw, once all are done.
template <class Work>
void runChunks(const std::vector<std::uint64_t> &bounds, const Work &work) {
  const std::size_t chunks = bounds.size() - 1;
  std::vector<std::exception_ptr> errors(chunks);
  const auto run = [&](std::size_t c) {
    try {
      work(c, bounds[c], bounds[c + 1]);
    } catch (...) {
      errors[c] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  std::vector<std::size_t> here{0};
  for (std::size_t c = 1; c < chunks; ++c) {
    try {
      pool.emplace_back(run, c);
    } catch (const std::system_error &) {
      here.push_back(c);
    }
  }
  for (std::size_t c : here) run(c);
  for (auto &t : pool) t.join();
  for (const auto &e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace kwb::detail
