//===- CmdTokenize.cpp - fbt tokenize: text to a token file ----------------===//
//
//   fbt tokenize --tokenizer T FILE... -o OUT.bin [--field NAME] [--quiet]
//
// Each text file is one document; each line of a .jsonl file is one (its
// --field, "text" by default). Documents are encoded on every thread
// (--threads; runtime/text/ParallelEncode.h), in order, each preceded by the
// tokenizer's separator, and written with llm.c's header
// (runtime/text/TokenStream.h). Prints documents, tokens and MB/s; --json
// prints them as one object.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/base/Progress.h"
#include "runtime/hal/cpu/CpuThreads.h"
#include "runtime/text/JsonlData.h"
#include "runtime/text/ParallelEncode.h"
#include "runtime/text/TokenFiles.h"
#include "runtime/text/TokenStream.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace fbt {

namespace {
/// The documents of `path`, viewing `contents` (kept alive by the caller).
void documentsOf(const std::string &path, const std::string &contents,
                 const std::string &field, std::vector<std::string> &decoded,
                 std::vector<TextDocument> &docs) {
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

/// Every file's documents, viewing `contents` and `decoded` (the caller's).
std::vector<TextDocument> readDocuments(const CommandLine &args, std::vector<std::string> &contents,
                                        std::vector<std::string> &decoded) {
  std::string field = args.get("field", "text");
  std::vector<TextDocument> docs;
  for (const std::string &path : args.positional())
    contents.push_back(readFile(path));
  for (size_t f = 0; f < contents.size(); ++f)
    documentsOf(args.positional()[f], contents[f], field, decoded, docs);
  // The .jsonl texts are viewed once `decoded` has stopped growing.
  for (size_t i = 0, d = 0; i < docs.size(); ++i)
    if (docs[i].text.data() == nullptr)
      docs[i].text = decoded[d++];
  return docs;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
} // namespace

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

  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> contents, decoded;
  std::vector<TextDocument> docs = readDocuments(args, contents, decoded);
  int64_t totalBytes = 0;
  for (const TextDocument &d : docs)
    totalBytes += d.text.size();

  EncodeOptions options;
  options.threads = std::max(1, cpuThreads());
  std::unique_ptr<ProgressBar> bar;
  if (!args.has("quiet") && !args.has("json")) {
    ProgressOptions barOptions;
    barOptions.unit = "bytes";
    bar = std::make_unique<ProgressBar>(std::max<int64_t>(totalBytes, 1), 0, barOptions);
    options.progress = [&](int64_t done) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "%.1f", done / 1e6 / std::max(secondsSince(start), 1e-9));
      bar->setField("MB/s", rate);
      bar->update(done);
    };
  }
  std::vector<int32_t> all = encodeDocuments(*tok, docs, options);
  if (bar) {
    bar->update(totalBytes);
    bar->finish();
  }
  writeBinFile(out, all, tok->vocabSize());

  double secs = secondsSince(start);
  double mbps = totalBytes / 1e6 / std::max(secs, 1e-9);
  if (args.has("json"))
    std::printf("{\"tokenizer\": %s, \"documents\": %zu, \"tokens\": %zu, "
                "\"bytes\": %lld, \"seconds\": %.3f, \"mb_per_s\": %.2f, "
                "\"threads\": %d, \"out\": %s}\n",
                dumpJson(Json(tok->name())).c_str(), docs.size(), all.size(),
                (long long)totalBytes, secs, mbps, options.threads,
                dumpJson(Json(out)).c_str());
  else if (!args.has("quiet"))
    std::fprintf(stderr, "fbt: %zu documents, %zu tokens from %.1f MB in %.2f s "
                         "(%.1f MB/s, %d threads) -> %s\n",
                 docs.size(), all.size(), totalBytes / 1e6, secs, mbps, options.threads,
                 out.c_str());
  return 0;
}

} // namespace fbt
