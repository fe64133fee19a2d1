//===- CmdTokenize.cpp - fbt tokenize: text to a token file ----------------===//
//
//   fbt tokenize --tokenizer T FILE... -o OUT.bin [--field NAME] [--quiet]
//
// Each text file is one document; each line of a .jsonl file is one (its
// --field, "text" by default). Documents are encoded on every thread
// (--threads), in order, each preceded by the tokenizer's separator, and
// written with llm.c's header (runtime/text/TokenStream.h). Prints documents, tokens and
// MB/s; --json prints them as one object.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/base/Progress.h"
#include "runtime/hal/cpu/CpuThreads.h"
#include "runtime/text/TokenStream.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

namespace fbt {

namespace {
struct Document {
  std::string_view text;
  std::string where; ///< "file" or "file: document N", for errors
};

/// The documents of `path`, viewing `contents` (kept alive by the caller).
void documentsOf(const std::string &path, const std::string &contents,
                 const std::string &field, std::vector<std::string> &decoded,
                 std::vector<Document> &docs) {
  if (tokenFileFormat(path) != TokenFileFormat::Jsonl) {
    docs.push_back({contents, path});
    return;
  }
  size_t n = 0;
  for (std::string &text : jsonlTexts(path, contents, field)) {
    decoded.push_back(std::move(text));
    docs.push_back({{}, path + ": document " + std::to_string(++n)});
  }
}
/// --decode: each token file's text on stdout.
int decodeFiles(const CommandLine &args) {
  if (!args.has("tokenizer"))
    throw RuntimeError("give the tokenizer with --tokenizer (bytes, gpt2:DIR, sp:FILE)");
  std::unique_ptr<Tokenizer> tok = loadTokenizer(args.get("tokenizer"));
  for (const std::string &path : args.positional()) {
    TokenStream ids = loadTokenFile(path, tok->vocabSize(), TokenFileFormat::Auto);
    std::string text = tok->decode(ids.toVector());
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}
} // namespace

// One pipeline in one body: read every file, cut long documents into work
// items, encode them on the threads, write the ids in order. Its phases share
// buffers that the items view as string_views, which is why they stay
// together here.
int runTokenize(int argc, char **argv) {
  CommandLine args("fbt tokenize",
                   "Encodes text into a token file for fbt train: each text file is one\n"
                   "document, each line of a .jsonl file one (its --field, default\n"
                   "\"text\"), each preceded by the tokenizer's separator (<|endoftext|>,\n"
                   "BOS, or byte 0). Written with llm.c's header: uint16 ids, or uint32\n"
                   "above 65536 tokens. Runs on every thread (fbt --threads N).");
  args.positionals("FILE", "text or .jsonl files to encode (with --decode: token files)")
      .text("tokenizer", "T", "the tokenizer (required; see below)")
      .text("o,out", "OUT.bin", "the token file to write (required unless --decode)")
      .text("field", "NAME", "the .jsonl field holding the text (default \"text\")")
      .flag("quiet", "no progress output")
      .flag("json", "print the summary as JSON")
      .flag("decode", "decode token files FILE.bin to text on stdout")
      .footer("tokenizers: bytes | gpt2:DIR (encoder.json + vocab.bpe, or vocab.json +\n"
              "            merges.txt) | gpt2:tokenizer.json | sp:FILE.model");
  if (!args.parse(argc, argv))
    return 0;
  if (args.positional().empty()) {
    std::fputs(args.help().c_str(), stderr);
    return 2;
  }
  if (args.has("decode"))
    return decodeFiles(args);
  std::string out = args.get("out");
  if (out.empty())
    throw RuntimeError("give the output file with -o OUT.bin");
  if (!args.has("tokenizer"))
    throw RuntimeError("give the tokenizer with --tokenizer (bytes, gpt2:DIR, sp:FILE)");
  std::unique_ptr<Tokenizer> tok = loadTokenizer(args.get("tokenizer"));
  std::string field = args.get("field", "text");

  // Read everything first: the documents view these buffers.
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> contents;
  std::vector<std::string> decoded; // .jsonl texts
  std::vector<Document> docs;
  for (const std::string &path : args.positional())
    contents.push_back(readFile(path));
  for (size_t f = 0; f < contents.size(); ++f)
    documentsOf(args.positional()[f], contents[f], field, decoded, docs);
  for (size_t i = 0, d = 0; i < docs.size(); ++i)
    if (docs[i].text.data() == nullptr)
      docs[i].text = decoded[d++];
  int64_t totalBytes = 0;
  for (const Document &d : docs)
    totalBytes += d.text.size();

  // Work items: documents, long ones cut where the tokenizer allows, so
  // that threads share them. Workers take items in order.
  struct Item {
    std::string_view text;
    size_t doc;
  };
  std::vector<Item> items;
  constexpr size_t kChunk = 1 << 20;
  for (size_t d = 0; d < docs.size(); ++d) {
    std::string_view rest = docs[d].text;
    while (rest.size() > 2 * kChunk) {
      size_t cut = tok->splitPoint(rest, kChunk);
      if (cut == std::string_view::npos || cut >= rest.size())
        break;
      items.push_back({rest.substr(0, cut), d});
      rest.remove_prefix(cut);
    }
    items.push_back({rest, d});
  }
  std::vector<std::vector<int32_t>> ids(items.size());
  std::atomic<size_t> next{0};
  std::atomic<int64_t> doneBytes{0};
  std::string firstError;
  std::atomic<bool> failed{false};
  std::mutex errorLock;
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < items.size();) {
      try {
        ids[i] = tok->encode(items[i].text);
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> g(errorLock);
        if (!failed.exchange(true))
          firstError = docs[items[i].doc].where + ": " + e.what();
      }
      doneBytes += items[i].text.size();
    }
  };
  int threads = std::max(1, cpuThreads());
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(work);
  {
    ProgressOptions options;
    options.unit = "bytes";
    std::unique_ptr<ProgressBar> bar;
    if (!args.has("quiet") && !args.has("json"))
      bar = std::make_unique<ProgressBar>(std::max<int64_t>(totalBytes, 1), 0, options);
    std::thread progress([&] {
      while (bar && next < items.size() && !failed) {
        double secs = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start).count();
        char rate[32];
        std::snprintf(rate, sizeof rate, "%.1f", doneBytes / 1e6 / std::max(secs, 1e-9));
        bar->setField("MB/s", rate);
        bar->update(doneBytes);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    work();
    for (std::thread &t : pool)
      t.join();
    progress.join();
    if (bar && !failed) {
      bar->update(totalBytes);
      bar->finish();
    }
  }
  if (failed)
    throw RuntimeError(firstError);

  std::vector<int32_t> all;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i == 0 || items[i].doc != items[i - 1].doc)
      all.push_back(tok->documentSeparator());
    all.insert(all.end(), ids[i].begin(), ids[i].end());
  }
  writeBinFile(out, all, tok->vocabSize());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double mbps = totalBytes / 1e6 / std::max(secs, 1e-9);
  if (args.has("json"))
    std::printf("{\"tokenizer\": %s, \"documents\": %zu, \"tokens\": %zu, "
                "\"bytes\": %lld, \"seconds\": %.3f, \"mb_per_s\": %.2f, "
                "\"threads\": %d, \"out\": %s}\n",
                dumpJson(Json(tok->name())).c_str(), docs.size(), all.size(),
                (long long)totalBytes, secs, mbps, threads, dumpJson(Json(out)).c_str());
  else if (!args.has("quiet"))
    std::fprintf(stderr, "fbt: %zu documents, %zu tokens from %.1f MB in %.2f s "
                         "(%.1f MB/s, %d threads) -> %s\n",
                 docs.size(), all.size(), totalBytes / 1e6, secs, mbps, threads,
                 out.c_str());
  return 0;
}

} // namespace fbt
