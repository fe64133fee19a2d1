//===- ParallelEncode.cpp - many documents encoded on many threads --------===//

#include "runtime/text/ParallelEncode.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace fbt {

namespace {
/// A piece of one document: the work a thread takes at a time.
struct Item {
  std::string_view text;
  size_t doc;
};

std::vector<Item> cut(const Tokenizer &tok, const std::vector<TextDocument> &docs,
                      size_t chunk) {
  std::vector<Item> items;
  for (size_t d = 0; d < docs.size(); ++d) {
    std::string_view rest = docs[d].text;
    while (chunk > 0 && rest.size() > 2 * chunk) {
      size_t at = tok.splitPoint(rest, chunk);
      if (at == std::string_view::npos || at == 0 || at >= rest.size())
        break;
      items.push_back({rest.substr(0, at), d});
      rest.remove_prefix(at);
    }
    items.push_back({rest, d});
  }
  return items;
}
} // namespace

std::vector<int32_t> encodeDocuments(const Tokenizer &tok, const std::vector<TextDocument> &docs,
                                     const EncodeOptions &options) {
  std::vector<Item> items = cut(tok, docs, options.chunkBytes);
  std::vector<std::vector<int32_t>> ids(items.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex errorLock, progressLock;
  std::string firstError;
  std::atomic<int64_t> doneBytes{0};
  // Workers take items in order, so the first error is near the first
  // failing document; the others stop at their next item.
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < items.size();) {
      try {
        ids[i] = tok.encode(items[i].text);
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> g(errorLock);
        if (!failed.exchange(true))
          firstError = docs[items[i].doc].where + ": " + e.what();
        return;
      }
      int64_t done = doneBytes += (int64_t)items[i].text.size();
      // One thread reports at a time; the others go on rather than wait.
      if (options.progress && progressLock.try_lock()) {
        options.progress(done);
        progressLock.unlock();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, options.threads); ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  if (failed)
    throw RuntimeError(firstError);

  std::vector<int32_t> all;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i == 0 || items[i].doc != items[i - 1].doc)
      all.push_back(tok.documentSeparator());
    all.insert(all.end(), ids[i].begin(), ids[i].end());
  }
  return all;
}

} // namespace fbt
