//===- DefaultCorpus.cpp - The built-in training text ---------------------===//
//
// Five kinds of documents, drawn in fixed proportions until the corpus
// reaches its target size:
//   stories        template stories about named animals (35%)
//   word problems  small-number arithmetic in sentences, answers correct (20%)
//   arithmetic     one fact per line: "12+7=19", "9*8=72", "503-27=476" (20%)
//   facts          everyday facts and number comparisons, some as Q/A (15%)
//   counting       counting up, down and by steps; days, months, letters (10%)
// Every choice is rng::uniformInt under a fixed seed, with the document index
// and a per-document counter as the counter, so a document's text does not
// depend on how many draws any other document made.
//
//===----------------------------------------------------------------------===//

#include "runtime/text/DefaultCorpus.h"

#include "runtime/base/Random.h"
#include "runtime/text/ArithmeticFacts.h"

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace fbt {

namespace {

constexpr uint64_t kCorpusSeed = 0xFB7C0DE5;
/// The parts' sizes: the training part as it always was (the first 230 KiB),
/// then validation and test parts large enough that a tiny model's held-out
/// loss has a standard error near 0.005 nats (docs/experiments/README.md).
constexpr size_t kTrainBytes = 230 * 1024;
constexpr size_t kHeldOutBytes = 448 * 1024;

/// Draws for one document.
class Dice {
public:
  explicit Dice(uint64_t document) : document_(document) {}

  /// Uniform in [0, n).
  uint64_t below(uint64_t n) {
    return rng::uniformInt(kCorpusSeed, rng::streams::kCorpus,
                           (document_ << 20) + counter_++, n);
  }
  /// Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo + 1)));
  }
  template <size_t N> const char *pick(const char *const (&words)[N]) {
    return words[below(N)];
  }

private:
  uint64_t document_;
  uint64_t counter_ = 0;
};

/// Replaces each "{key}" in `text` with its value.
std::string fill(std::string text,
                 const std::vector<std::pair<std::string, std::string>> &vars) {
  for (const auto &kv : vars) {
    std::string key = "{" + kv.first + "}";
    for (size_t at = text.find(key); at != std::string::npos;
         at = text.find(key, at + kv.second.size()))
      text.replace(at, key.size(), kv.second);
  }
  return text;
}

std::string num(int64_t v) { return std::to_string(v); }

//===----------------------------------------------------------------------===//
// Word lists
//===----------------------------------------------------------------------===//

const char *const kNames[] = {"Mia",  "Leo",  "Sam",  "Ava",  "Ben",  "Zoe",
                              "Max",  "Ivy",  "Tom",  "Lily", "Finn", "Ruby",
                              "Omar", "Nina", "Hugo", "Rosa", "Eli",  "Pia",
                              "Jack", "Ella", "Noah", "Maya", "Alex", "Kira"};
const char *const kAnimals[] = {
    "cat",   "dog",  "fox",  "rabbit", "owl",  "bear",     "duck",     "mouse",
    "horse", "frog", "goat", "turtle", "deer", "hedgehog", "squirrel", "pig"};
// kAnimals, in the plural, index for index.
const char *const kAnimalsPlural[] = {
    "cats",  "dogs",      "foxes",     "rabbits", "owls",  "bears",
    "ducks", "mice",      "horses",    "frogs",   "goats", "turtles",
    "deer",  "hedgehogs", "squirrels", "pigs"};
static_assert(sizeof kAnimals == sizeof kAnimalsPlural);
const char *const kAdjectives[] = {"little", "brave",  "curious", "sleepy",
                                   "kind",   "clever", "tiny",    "happy",
                                   "quiet",  "busy",   "gentle",  "young"};
const char *const kPlaces[] = {"small house",   "big forest", "green valley",
                               "quiet village", "sunny farm", "old mill",
                               "tall tree",     "cozy den",   "little town"};
const char *const kLandmarks[] = {"river",    "hill", "lake", "bridge",
                                  "meadow",   "sea",  "road", "garden",
                                  "mountain", "pond"};
// What an animal does each morning: {past tense, plain form}.
const char *const kRoutines[][2] = {
    {"walked to the {L}", "walk to the {L}"},
    {"ate a warm breakfast", "eat a warm breakfast"},
    {"sang a happy song", "sing a happy song"},
    {"looked at the sky", "look at the sky"},
    {"helped the neighbors", "help the neighbors"},
    {"read a good book", "read a good book"},
    {"watered the flowers", "water the flowers"},
    {"swept the floor", "sweep the floor"},
    {"went for a swim in the {L}", "go for a swim in the {L}"},
    {"counted the clouds", "count the clouds"}};
const char *const kObjects[] = {"red ball",    "shiny key",    "blue box",
                                "paper map",   "small bell",   "yellow kite",
                                "wooden boat", "golden leaf",  "green hat",
                                "silver coin", "soft blanket", "big seed"};
const char *const kWheres[] = {
    "under a rock",      "behind the door",
    "in the tall grass", "near the {L}",
    "on the path",       "inside a hollow log",
    "by the window",     "at the bottom of a basket"};
const char *const kQuotes[] = {
    "What a nice day",    "I will keep it safe",     "Look what I found",
    "This is a surprise", "I should show my friend", "Where did this come from",
    "How wonderful"};
const char *const kReplies[] = {
    "That is beautiful!",  "Let us find out more.",
    "You are very lucky.", "I have never seen one!",
    "We can share it.",    "Thank you for showing me."};
const char *const kActivities[] = {
    "played until the sun went down", "shared a big lunch",
    "built a little house",           "went for a long walk",
    "told stories by the fire",       "looked for more treasures",
    "planted the {O} in the garden",  "sat by the {L} and talked"};
const char *const kEndings[] = {"everyone was happy",
                                "{N} went home and slept well",
                                "{N} and {F} became best friends",
                                "the {O} stayed with {N} for a long time",
                                "{N} learned that sharing makes friends glad"};
const char *const kWeather[] = {"sunny",  "rainy", "windy", "snowy",
                                "cloudy", "warm",  "cold"};
const char *const kFeelings[] = {"happy",  "sad",    "tired", "excited",
                                 "hungry", "scared", "proud"};
const char *const kItems[] = {"apples",  "books",    "coins",   "cookies",
                              "shells",  "stickers", "pencils", "marbles",
                              "flowers", "cards",    "eggs",    "stones"};

//===----------------------------------------------------------------------===//
// Documents
//===----------------------------------------------------------------------===//

std::string story(Dice &d) {
  std::string name = d.pick(kNames), friendName = d.pick(kNames);
  while (friendName == name)
    friendName = d.pick(kNames);
  std::vector<std::pair<std::string, std::string>> vars = {
      {"N", name},
      {"F", friendName},
      {"A", d.pick(kAnimals)},
      {"FA", d.pick(kAnimals)},
      {"ADJ", d.pick(kAdjectives)},
      {"P", d.pick(kPlaces)},
      {"R", kRoutines[d.below(std::size(kRoutines))][0]},
      {"R2", kRoutines[d.below(std::size(kRoutines))][1]},
      {"O", d.pick(kObjects)},
      {"W", d.pick(kWheres)},
      {"Q", d.pick(kQuotes)},
      {"RE", d.pick(kReplies)},
      {"ACT", d.pick(kActivities)},
      {"END", d.pick(kEndings)},
      {"WX", d.pick(kWeather)},
      {"FEEL", d.pick(kFeelings)},
      // Last: the lists above may mention {L}, {N}, {F} and {O}.
      {"L", d.pick(kLandmarks)},
  };
  // Substitute twice so keys inside chosen phrases are filled too.
  static const char *const kTemplates[] = {
      "Once upon a time, there was a {ADJ} {A} named {N}. {N} lived in a {P} "
      "near the {L}. Every morning, {N} {R}. One day, {N} found a {O} {W}. "
      "\"{Q}!\" said {N}. {N} took the {O} to {F}, the {FA}. {F} said, "
      "\"{RE}\" Together they {ACT}. In the end, {END}.",

      "It was a {WX} day in the {P}. {N} the {A} felt {FEEL}. {N} went to "
      "see {F} the {FA} by the {L}. \"Hello, {F}!\" said {N}. \"Hello, {N}!\" "
      "said {F}. {N} showed {F} a {O}. {F} said, \"{RE}\" Then they {ACT}. "
      "When the day was over, {END}.",

      "{N} was a {ADJ} {A}. {N} liked to {R2}. One {WX} morning, {N} could "
      "not find the {O}. {N} looked {W}. {N} looked by the {L}. At last, {F} "
      "the {FA} came to help. \"Is this your {O}?\" asked {F}. \"Yes! Thank "
      "you!\" said {N}. After that, {END}.",
  };
  std::string text = d.pick(kTemplates);
  text = fill(fill(text, vars), vars);
  // Sentences start with a capital letter even when a phrase begins one.
  for (size_t i = 2; i < text.size(); ++i)
    if (text[i - 2] == '.' && text[i - 1] == ' ' && text[i] >= 'a' &&
        text[i] <= 'z')
      text[i] = static_cast<char>(text[i] - 'a' + 'A');
  return text;
}

std::string wordProblem(Dice &d) {
  std::string out;
  int64_t count = d.range(3, 5);
  for (int64_t k = 0; k < count; ++k) {
    std::string n = d.pick(kNames), m = d.pick(kNames);
    while (m == n)
      m = d.pick(kNames);
    std::string item = d.pick(kItems);
    int64_t a = d.range(2, 20), b = d.range(1, 12);
    std::string line;
    switch (d.below(5)) {
    case 0:
      line = fill("{N} has {a} {I}. {M} gives {N} {b} more. How many {I} does "
                  "{N} have now? {N} has {c} {I}.",
                  {{"N", n},
                   {"M", m},
                   {"I", item},
                   {"a", num(a)},
                   {"b", num(b)},
                   {"c", num(a + b)}});
      break;
    case 1: {
      if (b > a)
        std::swap(a, b);
      line = fill("{N} had {a} {I}. {N} gave {b} {I} to {M}. Now {N} has {c} "
                  "{I} left.",
                  {{"N", n},
                   {"M", m},
                   {"I", item},
                   {"a", num(a)},
                   {"b", num(b)},
                   {"c", num(a - b)}});
      break;
    }
    case 2: {
      int64_t bags = d.range(2, 9), each = d.range(2, 9);
      line = fill("{N} has {a} bags with {b} {I} in each bag. That is {a} "
                  "times {b}, so {N} has {c} {I}.",
                  {{"N", n},
                   {"I", item},
                   {"a", num(bags)},
                   {"b", num(each)},
                   {"c", num(bags * each)}});
      break;
    }
    case 3: {
      std::string animals = kAnimalsPlural[d.below(std::size(kAnimalsPlural))];
      line = fill("There are {a} {A} in the {P}. Then {b} more {A} come. "
                  "Now there are {c} {A} in the {P}.",
                  {{"A", animals},
                   {"P", d.pick(kPlaces)},
                   {"a", num(a)},
                   {"b", num(b)},
                   {"c", num(a + b)}});
      break;
    }
    default: {
      int64_t c = d.range(1, 9);
      line = fill("{N} has {a} {I}, {M} has {b} and {K} has {c}. Together "
                  "they have {a} plus {b} plus {c}, which is {s} {I}.",
                  {{"N", n},
                   {"M", m},
                   {"K", d.pick(kNames)},
                   {"I", item},
                   {"a", num(a)},
                   {"b", num(b)},
                   {"c", num(c)},
                   {"s", num(a + b + c)}});
    }
    }
    out += (k ? "\n" : "") + line;
  }
  return out;
}

std::string arithmetic(Dice &d) {
  std::string out;
  int64_t lines = d.range(8, 16);
  for (int64_t k = 0; k < lines; ++k) {
    auto [question, answer] =
        arithmeticFact([&](int64_t lo, int64_t hi) { return d.range(lo, hi); });
    out += (k ? "\n" : "") + question + answer;
  }
  return out;
}

std::string facts(Dice &d) {
  static const char *const kFacts[] = {
      "A cat has four legs.",
      "A bird has two legs.",
      "A spider has eight legs.",
      "The sky is blue.",
      "Grass is green.",
      "Snow is white.",
      "Fire is hot.",
      "Ice is cold.",
      "Fish live in water.",
      "Birds can fly.",
      "The sun rises in the east.",
      "The sun sets in the west.",
      "A week has seven days.",
      "A year has twelve months.",
      "A day has twenty four hours.",
      "An hour has sixty minutes.",
      "Cows give milk.",
      "Bees make honey.",
      "Rain falls from clouds.",
      "The moon shines at night.",
      "Two and two make four.",
      "Ten is more than five.",
      "A triangle has three sides.",
      "A square has four sides.",
      "Plants need water and light.",
      "Ducks can swim.",
  };
  static const char *const kQuestions[][2] = {
      {"What color is the sky?", "The sky is blue."},
      {"What color is grass?", "Grass is green."},
      {"How many legs does a cat have?", "A cat has four legs."},
      {"How many days are in a week?", "There are seven days in a week."},
      {"Where do fish live?", "Fish live in water."},
      {"What do bees make?", "Bees make honey."},
      {"Is ice hot or cold?", "Ice is cold."},
      {"How many sides does a square have?", "A square has four sides."},
      {"When does the moon shine?", "The moon shines at night."},
      {"What do plants need?", "Plants need water and light."},
  };
  std::string out;
  int64_t lines = d.range(4, 8);
  for (int64_t k = 0; k < lines; ++k) {
    std::string line;
    int64_t a = d.range(0, 99), b = d.range(0, 99);
    switch (d.below(5)) {
    case 0:
    case 1:
      line = d.pick(kFacts);
      break;
    case 2: {
      const auto &qa = kQuestions[d.below(std::size(kQuestions))];
      line = std::string("Q: ") + qa[0] + " A: " + qa[1];
      break;
    }
    case 3:
      if (a == b)
        line = num(a) + " is equal to " + num(b) + ".";
      else
        line = num(a) + " is " + (a > b ? "more" : "less") + " than " + num(b) +
               ".";
      break;
    default:
      line = "The number after " + num(a) + " is " + num(a + 1) +
             ". The number before " + num(a + 1) + " is " + num(a) + ".";
    }
    out += (k ? "\n" : "") + line;
  }
  return out;
}

std::string counting(Dice &d) {
  static const char *const kDays[] = {"Monday",   "Tuesday", "Wednesday",
                                      "Thursday", "Friday",  "Saturday",
                                      "Sunday"};
  static const char *const kMonths[] = {
      "January", "February", "March",     "April",   "May",      "June",
      "July",    "August",   "September", "October", "November", "December"};
  std::string out;
  switch (d.below(6)) {
  case 0: { // count up
    int64_t start = d.range(0, 80), len = d.range(6, 15);
    out = "Count from " + num(start) + ": ";
    for (int64_t i = 0; i < len; ++i)
      out += (i ? ", " : "") + num(start + i);
    return out + ".";
  }
  case 1: { // count down
    int64_t start = d.range(8, 30);
    out = "Count down from " + num(start) + ": ";
    for (int64_t i = start; i >= 0; --i)
      out += (i != start ? ", " : "") + num(i);
    return out + ".";
  }
  case 2: { // skip counting
    int64_t step = d.range(2, 10), len = d.range(5, 10);
    out = "Count by " + num(step) + "s: ";
    for (int64_t i = 1; i <= len; ++i)
      out += (i > 1 ? ", " : "") + num(step * i);
    return out + ".";
  }
  case 3: { // days, from any day, wrapping around
    int64_t first = d.range(0, 6);
    out =
        "The days of the week, starting on " + std::string(kDays[first]) + ": ";
    for (int64_t i = 0; i < 7; ++i)
      out += (i ? ", " : "") + std::string(kDays[(first + i) % 7]);
    return out + ".";
  }
  case 4: { // months
    int64_t first = d.range(0, 11);
    out = "After " + std::string(kMonths[first]) + " comes " +
          kMonths[(first + 1) % 12] + ". The months in order are: ";
    for (int64_t i = 0; i < 12; ++i)
      out += (i ? ", " : "") + std::string(kMonths[i]);
    return out + ".";
  }
  default: { // letters from any point of the alphabet
    int64_t first = d.range(0, 15), len = d.range(6, 26 - first);
    out = "Letters from " + std::string(1, char('a' + first)) + ": ";
    for (int64_t i = 0; i < len; ++i)
      out += (i ? " " : "") + std::string(1, char('a' + first + i));
    return out + ".";
  }
  }
}

struct Corpus {
  std::string text;
  size_t validationStart = 0, testStart = 0; ///< byte offsets of the parts
};

Corpus buildCorpus() {
  Corpus c;
  std::string &text = c.text;
  text.reserve(kTrainBytes + 2 * kHeldOutBytes + 8192);
  const size_t ends[3] = {kTrainBytes, kTrainBytes + kHeldOutBytes,
                          kTrainBytes + 2 * kHeldOutBytes};
  uint64_t doc = 0;
  for (int part = 0; part < 3; ++part) {
    if (part == 1)
      c.validationStart = text.size();
    if (part == 2)
      c.testStart = text.size();
    for (; text.size() < ends[part]; ++doc) {
      Dice d(doc);
      uint64_t kind = d.below(100);
      std::string body = kind < 35   ? story(d)
                         : kind < 55 ? wordProblem(d)
                         : kind < 75 ? arithmetic(d)
                         : kind < 90 ? facts(d)
                                     : counting(d);
      text += body;
      text += kDefaultCorpusSeparator;
    }
  }
  text.pop_back(); // the text ends in one newline
  return c;
}

const Corpus &corpus() {
  static const Corpus c = buildCorpus(); // thread-safe init
  return c;
}

TokenStream tokenizePart(size_t begin, size_t end) {
  std::string_view text(corpus().text);
  return TokenStream(tokenizeText(text.substr(begin, end - begin), kDefaultCorpusSeparator),
                     "<default corpus>");
}

} // namespace

const char *defaultCorpus() { return corpus().text.c_str(); }

size_t defaultCorpusSize() { return corpus().text.size(); }

TokenStream loadDefaultCorpus() {
  return TokenStream(
      tokenizeText(std::string_view(defaultCorpus(), defaultCorpusSize()),
                   kDefaultCorpusSeparator),
      "<default corpus>");
}

DataSplits defaultCorpusSplits() {
  const Corpus &c = corpus();
  DataSplits s;
  s.train = tokenizePart(0, c.validationStart);
  s.validation = tokenizePart(c.validationStart, c.testStart);
  s.test = tokenizePart(c.testStart, c.text.size());
  s.documents[0] = int64_t(documentStarts(s.train, kByteBosToken).size());
  s.documents[1] = int64_t(documentStarts(s.validation, kByteBosToken).size());
  s.documents[2] = int64_t(documentStarts(s.test, kByteBosToken).size());
  return s;
}

} // namespace fbt
