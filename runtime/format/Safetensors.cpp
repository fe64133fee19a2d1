//===- Safetensors.cpp - Reading and writing .safetensors files -----------===//

#include "runtime/format/Safetensors.h"

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/LittleEndian.h"
#include "runtime/base/Json.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "fbt's runtime reads and writes little-endian data in place"
#endif

namespace fbt {

//===----------------------------------------------------------------------===//
// Dtypes and shapes
//===----------------------------------------------------------------------===//

namespace {
// The reference implementation's bound: a header this large is corrupt (or
// hostile), and reading it would only waste memory.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
} // namespace

int64_t shapeElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw RuntimeError("negative dimension in shape " + shapeString(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw RuntimeError("shape " + shapeString(shape) +
                         " has more than 2^63 elements");
    n *= d;
  }
  return n;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

Tensor::Tensor(std::string n, DType d, std::vector<int64_t> s)
    : name(std::move(n)), dtype(d), shape(std::move(s)) {
  bytes.assign(static_cast<size_t>(numElements()) * dtypeSize(dtype), 0);
}

Tensor Tensor::fromF32(std::string name, std::vector<int64_t> shape,
                       const std::vector<float> &values) {
  Tensor t(std::move(name), DType::F32, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numElements())
    throw RuntimeError("tensor '" + t.name +
                       "': " + std::to_string(values.size()) +
                       " values for shape " + shapeString(t.shape));
  if (!values.empty())
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

namespace {
template <typename T> bool holds(DType dtype);
template <> bool holds<float>(DType d) { return d == DType::F32; }
template <> bool holds<int32_t>(DType d) { return d == DType::I32; }
template <> bool holds<int64_t>(DType d) { return d == DType::I64; }
template <> bool holds<uint8_t>(DType d) { return d == DType::U8; }
template <> bool holds<uint16_t>(DType d) {
  return d == DType::BF16 || d == DType::F16;
}

template <typename T> void checkAccess(const Tensor &t) {
  if (!holds<T>(t.dtype))
    throw RuntimeError("tensor '" + t.name + "' is " + dtypeName(t.dtype) +
                       ", not accessible as a " + std::to_string(sizeof(T)) +
                       "-byte element of another dtype");
  if (t.bytes.size() != static_cast<size_t>(t.numElements()) * sizeof(T))
    throw RuntimeError("tensor '" + t.name + "' holds " +
                       std::to_string(t.bytes.size()) + " bytes, but " +
                       dtypeName(t.dtype) + " " + shapeString(t.shape) +
                       " needs " + std::to_string(t.numElements() * sizeof(T)));
}
} // namespace

template <typename T> T *Tensor::data() {
  checkAccess<T>(*this);
  return reinterpret_cast<T *>(bytes.data());
}

template <typename T> const T *Tensor::data() const {
  checkAccess<T>(*this);
  return reinterpret_cast<const T *>(bytes.data());
}

template float *Tensor::data<float>();
template const float *Tensor::data<float>() const;
template int32_t *Tensor::data<int32_t>();
template const int32_t *Tensor::data<int32_t>() const;
template int64_t *Tensor::data<int64_t>();
template const int64_t *Tensor::data<int64_t>() const;
template uint8_t *Tensor::data<uint8_t>();
template const uint8_t *Tensor::data<uint8_t>() const;
template uint16_t *Tensor::data<uint16_t>();
template const uint16_t *Tensor::data<uint16_t>() const;

std::vector<float> Tensor::toF32() const {
  size_t n = static_cast<size_t>(numElements());
  std::vector<float> out(n);
  switch (dtype) {
  case DType::F32:
    if (n > 0)
      std::memcpy(out.data(), data<float>(), n * sizeof(float));
    return out;
  case DType::BF16: {
    const uint16_t *p = data<uint16_t>();
    for (size_t i = 0; i < n; ++i)
      out[i] = bf16ToFloat(p[i]);
    return out;
  }
  case DType::F16: {
    const uint16_t *p = data<uint16_t>();
    for (size_t i = 0; i < n; ++i)
      out[i] = f16ToF32(p[i]);
    return out;
  }
  default:
    throw RuntimeError("tensor '" + name + "' is " + dtypeName(dtype) +
                       ", not a floating-point dtype");
  }
}

const Tensor *SafetensorsFile::find(std::string_view name) const {
  for (const Tensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

const Tensor &SafetensorsFile::at(std::string_view name) const {
  if (const Tensor *t = find(name))
    return *t;
  std::string names;
  for (size_t i = 0; i < tensors.size() && i < 8; ++i)
    names += (i ? ", " : "") + tensors[i].name;
  if (tensors.size() > 8)
    names += ", ...";
  throw RuntimeError((source.empty() ? "" : source + ": ") +
                     "no tensor named '" + std::string(name) +
                     "' (have: " + (names.empty() ? "none" : names) + ")");
}

//===----------------------------------------------------------------------===//
// bf16 / f16
//===----------------------------------------------------------------------===//

static uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

static float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float f16ToF32(uint16_t bits) {
  float sign = (bits & 0x8000) ? -1.0f : 1.0f;
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  if (exponent == 0) // zero and subnormals: mantissa * 2^-24, exact
    return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31)
    return mantissa ? std::numeric_limits<float>::quiet_NaN()
                    : sign * std::numeric_limits<float>::infinity();
  return sign * std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
}

uint16_t f32ToF16(float value) {
  uint32_t u = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  u &= 0x7FFFFFFFu;
  if (u >= 0x7F800000u) // inf, NaN
    return sign | (u > 0x7F800000u ? 0x7E00 : 0x7C00);
  if (u >= 0x477FF000u) // >= 65520 rounds up to infinity
    return sign | 0x7C00;
  if (u < 0x38800000u) { // below 2^-14: an f16 subnormal (or zero)
    // Scaling by 2^24 is exact; nearbyint rounds half to even.
    float scaled = bitsFloat(u) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t r = u - 0x38000000u; // rebias the exponent from 127 to 15
  r += 0xFFFu + ((r >> 13) & 1u);
  return sign | static_cast<uint16_t>(r >> 13);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries; // sorted by offset
  std::map<std::string, std::string> metadata;
};

std::string spanString(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

/// An error about the file: its source, then what.
using Fail = std::function<RuntimeError(const std::string &what)>;

/// "__metadata__": an object of strings.
void readMetadata(const Json &v, const Fail &fail, std::map<std::string, std::string> &into) {
  if (!v.is_object())
    throw fail(std::string("header: __metadata__: expected an object of strings, got ") +
               jsonKindName(v));
  for (const auto &m : asObject(v)) {
    if (!m.second.is_string())
      throw fail("header: __metadata__: '" + m.first + "': expected a string, got " +
                 jsonKindName(m.second));
    into[m.first] = asString(m.second);
  }
}

/// A tensor's dtype and shape (`where` names it in errors).
void readTypeAndShape(const Json &dtype, const Json &shape, const std::string &where,
                      const Fail &fail, Entry &e) {
  if (!dtype.is_string())
    throw fail(where + "dtype: expected a string, got " + jsonKindName(dtype));
  std::optional<DType> dt = parseDType(asString(dtype));
  if (!dt)
    throw fail(where + "unsupported dtype '" + asString(dtype) +
               "' (supported: F32, BF16, F16, I32, I64, U8, I8)");
  e.dtype = *dt;
  if (!shape.is_array())
    throw fail(where + "shape: expected an array of dimensions, got " + jsonKindName(shape));
  for (const Json &d : asArray(shape)) {
    if (!isInteger(d) || asInt(d) < 0)
      throw fail(where + "shape: expected non-negative integers, got " + dumpJson(shape));
    e.shape.push_back(asInt(d));
  }
}

/// A tensor's data_offsets: [begin, end] within the data, holding exactly
/// its dtype and shape.
void readSpan(const Json &offsets, uint64_t dataBytes, const std::string &where,
              const Fail &fail, Entry &e) {
  if (!offsets.is_array() || offsets.size() != 2 || !isInteger(jsonAt(offsets, 0)) ||
      !isInteger(jsonAt(offsets, 1)) || asInt(jsonAt(offsets, 0)) < 0 ||
      asInt(jsonAt(offsets, 1)) < 0)
    throw fail(where +
               "data_offsets: expected [begin, end], two "
               "non-negative integers, got " +
               dumpJson(offsets));
  e.begin = static_cast<uint64_t>(asInt(jsonAt(offsets, 0)));
  e.end = static_cast<uint64_t>(asInt(jsonAt(offsets, 1)));
  if (e.begin > e.end)
    throw fail(where + "data_offsets " + spanString(e.begin, e.end) + ": begin is after end");
  if (e.end > dataBytes)
    throw fail(where + "data_offsets " + spanString(e.begin, e.end) +
               " run past the end of the data (" + std::to_string(dataBytes) + " bytes)");
  // The span is within the file, so a shape whose byte size disagrees
  // with it (or overflows) is caught here without multiplying past 2^63.
  uint64_t elements = 1;
  bool tooBig = false;
  for (int64_t d : e.shape) {
    uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && elements > dataBytes / ud)
      tooBig = true;
    elements = tooBig ? 0 : elements * ud;
  }
  uint64_t needed = elements * dtypeSize(e.dtype);
  if (tooBig || needed != e.end - e.begin)
    throw fail(where + "data_offsets " + spanString(e.begin, e.end) + " hold " +
               std::to_string(e.end - e.begin) + " bytes but " + dtypeName(e.dtype) + " " +
               shapeString(e.shape) + " needs " +
               (tooBig ? std::string("more than the whole file") : std::to_string(needed)));
}

/// One tensor's entry: an object of dtype, shape and data_offsets.
Entry readEntry(const std::string &name, const Json &v, uint64_t dataBytes, const Fail &fail) {
  // The writer's rule too: a checkpoint read is one that can be written.
  if (name.empty())
    throw fail("header: a tensor with an empty name");
  std::string where = "tensor '" + name + "': ";
  if (!v.is_object())
    throw fail(where + "expected an object with dtype, shape and data_offsets, got " +
               jsonKindName(v));
  for (const auto &m : asObject(v))
    if (m.first != "dtype" && m.first != "shape" && m.first != "data_offsets")
      throw fail(where + "unknown key '" + m.first + "' (expected dtype, shape, data_offsets)");
  const Json *dtype = jsonFind(v, "dtype");
  const Json *shape = jsonFind(v, "shape");
  const Json *offsets = jsonFind(v, "data_offsets");
  if (!dtype || !shape || !offsets)
    throw fail(where + "missing '" +
               (!dtype   ? "dtype"
                : !shape ? "shape"
                         : "data_offsets") +
               "'");
  Entry e;
  e.name = name;
  readTypeAndShape(*dtype, *shape, where, fail, e);
  readSpan(*offsets, dataBytes, where, fail, e);
  return e;
}

/// The spans must tile [0, dataBytes) exactly: overlapping tensors would
/// alias, and bytes that belong to no tensor are how polyglot or corrupt
/// files hide. Sorts `entries` by offset.
void checkTiling(std::vector<Entry> &entries, uint64_t dataBytes, const Fail &fail) {
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    if (a.begin != b.begin)
      return a.begin < b.begin;
    if (a.end != b.end)
      return a.end < b.end;
    return a.name < b.name; // names are unique: a total order
  });
  uint64_t cursor = 0;
  const Entry *prev = nullptr;
  for (const Entry &e : entries) {
    if (e.begin < cursor)
      throw fail("tensors '" + prev->name + "' " + spanString(prev->begin, prev->end) +
                 " and '" + e.name + "' " + spanString(e.begin, e.end) + " overlap");
    if (e.begin > cursor)
      throw fail("data bytes [" + std::to_string(cursor) + ", " + std::to_string(e.begin) +
                 ") before tensor '" + e.name + "' belong to no tensor");
    cursor = e.end;
    prev = &e;
  }
  if (cursor != dataBytes)
    throw fail(std::to_string(dataBytes - cursor) +
               " trailing bytes after the last tensor's data (the tensors "
               "end at data offset " +
               std::to_string(cursor) + ", the data holds " + std::to_string(dataBytes) +
               " bytes)");
}

/// Validates the JSON header against a data section of `dataBytes` bytes.
Header parseHeader(std::string_view json, uint64_t dataBytes, const std::string &source) {
  Fail fail = [&](const std::string &what) { return RuntimeError(source + ": " + what); };
  Json root;
  try {
    root = parseJson(json);
  } catch (const RuntimeError &e) {
    throw fail(std::string("header is not valid JSON: ") + e.what());
  }
  // The caller checked the header starts with '{', so root is an object.
  Header header;
  for (const auto &[name, v] : asObject(root)) {
    if (name == "__metadata__")
      readMetadata(v, fail, header.metadata);
    else
      header.entries.push_back(readEntry(name, v, dataBytes, fail));
  }
  checkTiling(header.entries, dataBytes, fail);
  return header;
}

/// Reads `n` bytes at `offset` into `out`; throws when short.
using ReadAt = std::function<void(uint64_t offset, size_t n, void *out)>;

/// The bytes of the tensors `wanted` accepts are read (all when it is
/// empty); the others get the header's facts alone (name, type, shape),
/// validated all the same.
SafetensorsFile parseWith(uint64_t fileBytes, const ReadAt &readAt,
                          const std::string &source,
                          const TensorFilter &wanted = {}) {
  if (fileBytes < 8)
    throw RuntimeError(source + ": file too small (" +
                       std::to_string(fileBytes) +
                       " bytes); a safetensors file starts with an 8-byte "
                       "header length");
  uint8_t prefix[8];
  readAt(0, 8, prefix);
  uint64_t headerBytes = readLittleEndian<uint64_t>(prefix);
  if (headerBytes > fileBytes - 8)
    throw RuntimeError(source + ": header length " +
                       std::to_string(headerBytes) +
                       " runs past the end of "
                       "the file (" +
                       std::to_string(fileBytes) +
                       " bytes; truncated or not a safetensors file)");
  if (headerBytes > kMaxHeaderBytes)
    throw RuntimeError(source + ": header length " +
                       std::to_string(headerBytes) + " is over the limit of " +
                       std::to_string(kMaxHeaderBytes) + " bytes");

  std::string json(static_cast<size_t>(headerBytes), '\0');
  readAt(8, json.size(), json.data());
  // As the reference implementation requires; also tells a file that is not
  // safetensors at all from a corrupt one.
  if (json.empty() || json[0] != '{')
    throw RuntimeError(source + ": header does not start with '{' (not a "
                                "safetensors file?)");
  uint64_t dataStart = 8 + headerBytes;
  Header header = parseHeader(json, fileBytes - dataStart, source);

  SafetensorsFile file;
  file.source = source;
  file.metadata = std::move(header.metadata);
  file.tensors.reserve(header.entries.size());
  for (Entry &e : header.entries) {
    Tensor t;
    t.name = std::move(e.name);
    t.dtype = e.dtype;
    t.shape = std::move(e.shape);
    if (!wanted || wanted(t.name)) {
      t.bytes.resize(static_cast<size_t>(e.end - e.begin));
      readAt(dataStart + e.begin, t.bytes.size(), t.bytes.data());
    }
    file.tensors.push_back(std::move(t));
  }
  return file;
}

} // namespace

SafetensorsFile parseSafetensors(std::string_view image,
                                 const std::string &sourceName) {
  return parseWith(
      image.size(),
      [&](uint64_t offset, size_t n, void *out) {
        if (n > 0) // empty tensors have no buffer to copy into
          std::memcpy(out, image.data() + offset, n);
      },
      sourceName);
}

namespace {
SafetensorsFile readFileWith(const std::string &path, const TensorFilter &wanted) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw RuntimeError(systemErrorMessage(path + ": cannot open"));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    throw RuntimeError(systemErrorMessage(path + ": cannot stat"));
  if (!S_ISREG(st.st_mode))
    throw RuntimeError(path + ": not a regular file");

  // Tensors are read straight into their own buffers: a checkpoint is never
  // held twice in memory.
  auto readAt = [&](uint64_t offset, size_t n, void *out) {
    char *p = static_cast<char *>(out);
    while (n > 0) {
      ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0)
        throw RuntimeError(systemErrorMessage(path + ": cannot read"));
      if (got == 0)
        throw RuntimeError(path + ": file shrank while being read");
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
  };
  return parseWith(static_cast<uint64_t>(st.st_size), readAt, path, wanted);
}
} // namespace

SafetensorsFile readSafetensors(const std::string &path) { return readFileWith(path, {}); }

SafetensorsFile readSafetensorsHeader(const std::string &path) {
  return readFileWith(path, [](std::string_view) { return false; });
}

SafetensorsFile readSafetensorsSome(const std::string &path,
                                    const TensorFilter &wanted) {
  if (!wanted)
    return readSafetensors(path);
  return readFileWith(path, wanted);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// The order tensors are laid out in: wider dtypes first, otherwise as given.
/// The data starts 8-aligned and element sizes are powers of two, so every
/// tensor then starts at a multiple of its element size, as readers that map
/// the file and use it in place need (the reference writer does the same).
static std::vector<size_t> layoutOrder(const std::vector<Tensor> &tensors) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    size_t sa = dtypeSize(tensors[a].dtype), sb = dtypeSize(tensors[b].dtype);
    return sa != sb ? sa > sb : a < b;
  });
  return order;
}

std::string
serializeSafetensorsHeader(const std::vector<Tensor> &tensors,
                           const std::map<std::string, std::string> &metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto &kv : metadata)
      meta[kv.first] = kv.second;
    header["__metadata__"] = std::move(meta);
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (size_t index : layoutOrder(tensors)) {
    const Tensor &t = tensors[index];
    if (t.name.empty() || t.name == "__metadata__")
      throw RuntimeError("cannot write a tensor named '" + t.name + "'");
    if (!names.insert(t.name).second)
      throw RuntimeError("tensor '" + t.name + "' appears twice");
    uint64_t needed =
        static_cast<uint64_t>(t.numElements()) * dtypeSize(t.dtype);
    if (t.bytes.size() != needed)
      throw RuntimeError("tensor '" + t.name + "' holds " +
                         std::to_string(t.bytes.size()) + " bytes, but " +
                         dtypeName(t.dtype) + " " + shapeString(t.shape) +
                         " needs " + std::to_string(needed));
    Json shape = Json::array();
    for (int64_t d : t.shape)
      shape.push_back(d);
    Json info = Json::object();
    info["dtype"] = dtypeName(t.dtype);
    info["shape"] = std::move(shape);
    info["data_offsets"] = Json::array({offset, offset + needed});
    header[t.name] = std::move(info);
    offset += needed;
  }
  std::string json = dumpJson(header);
  // Pad with spaces (valid JSON whitespace) so the data starts 8-aligned
  // and can be used in place by memory-mapping readers.
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out;
  appendLittleEndian<uint64_t>(out, json.size());
  return out + json;
}

void writeSafetensorsAtomic(
    const std::string &path, const std::vector<Tensor> &tensors,
    const std::map<std::string, std::string> &metadata) {
  std::string header;
  try {
    header = serializeSafetensorsHeader(tensors, metadata);
  } catch (const RuntimeError &e) {
    throw RuntimeError(path + ": " + e.what());
  }
  std::vector<std::string_view> pieces{header};
  for (size_t index : layoutOrder(tensors))
    pieces.emplace_back(
        reinterpret_cast<const char *>(tensors[index].bytes.data()),
        tensors[index].bytes.size());
  writeFileAtomic(path, pieces);
}

} // namespace fbt
