//===- SafeTensors.cpp - .safetensors reader and writer -------------------===//
//
// Implements SafeTensors.h on top of the strict JSON parser. Offsets in the
// header are relative to the first byte after the header; each tensor's byte
// range must lie inside the file and match its shape and dtype exactly.
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"
#include "Half.h"

#include "Json.h"
#include "Npy.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace torsor::rt {

namespace {

/// Maps a safetensors dtype tag to ours; F16 and BF16 load as f32 (Half.h)
/// and set `half`.
bool dtypeFromTag(const std::string &tag, int32_t &dtype,
                  std::optional<HalfFormat> &half) {
  half.reset();
  if (tag == "F16" || tag == "BF16") {
    dtype = TORSOR_DTYPE_F32;
    half = tag == "F16" ? HalfFormat::F16 : HalfFormat::BF16;
  } else if (tag == "F32")
    dtype = TORSOR_DTYPE_F32;
  else if (tag == "F64")
    dtype = TORSOR_DTYPE_F64;
  else if (tag == "I64")
    dtype = TORSOR_DTYPE_I64;
  else
    return false;
  return true;
}

/// One header entry, checked but not yet read: the data it will copy and
/// the tensor it becomes.
struct Entry {
  std::string name;
  std::string at; ///< "path: tensor 'name' (header L:C): " for messages
  int32_t dtype = TORSOR_DTYPE_F32;
  std::optional<HalfFormat> half;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; ///< data_offsets
};

/// Checks header entry `name` against the `dataSize` bytes that follow the
/// header, without allocating anything.
Status parseEntry(uint64_t dataSize, const std::string &path,
                  const std::string &name, const json::Value &entry,
                  Entry &out) {
  out.name = name;
  out.at = format("%s: tensor '%s' (header %s): ", path.c_str(), name.c_str(),
                  entry.where().c_str());
  const std::string &at = out.at;
  if (entry.kind != json::Value::Object)
    return ioError(at + "expected an object");
  const json::Value *dtypeV = entry.get("dtype");
  const json::Value *shapeV = entry.get("shape");
  const json::Value *offsV = entry.get("data_offsets");
  if (!dtypeV || dtypeV->kind != json::Value::String)
    return ioError(at + "missing string field 'dtype'");
  if (!shapeV || shapeV->kind != json::Value::Array)
    return ioError(at + "missing array field 'shape'");
  if (!offsV || offsV->kind != json::Value::Array ||
      offsV->elements.size() != 2)
    return ioError(at + "missing field 'data_offsets' ([begin, end])");
  if (!dtypeFromTag(dtypeV->string, out.dtype, out.half))
    return ioError(at + "unsupported dtype '" + dtypeV->string +
                   "'; supported: F32, F64, I64, and F16 and BF16 (widened "
                   "to the model's float type)");
  size_t storedSize = out.half ? 2 : dtypeSize(out.dtype);
  for (const json::Value &d : shapeV->elements) {
    if (d.kind != json::Value::Number || !d.isInteger || d.integer < 0)
      return ioError(at + "shape entries must be non-negative integers");
    out.shape.push_back(d.integer);
  }
  int64_t offs[2];
  for (int i = 0; i < 2; ++i) {
    const json::Value &o = offsV->elements[i];
    if (o.kind != json::Value::Number || !o.isInteger || o.integer < 0)
      return ioError(at + "data_offsets must be non-negative integers");
    offs[i] = o.integer;
  }
  if (offs[1] < offs[0] || static_cast<uint64_t>(offs[1]) > dataSize)
    return ioError(format("%sdata_offsets [%lld, %lld] outside the %llu data "
                          "bytes of the file (truncated?)",
                          at.c_str(), (long long)offs[0], (long long)offs[1],
                          (unsigned long long)dataSize));
  out.begin = static_cast<uint64_t>(offs[0]);
  out.end = static_cast<uint64_t>(offs[1]);
  int64_t n = numElements(out.shape);
  uint64_t need = 0;
  if (n < 0 ||
      __builtin_mul_overflow(static_cast<uint64_t>(n), storedSize, &need))
    return ioError(at + "shape is too large");
  if (need != out.end - out.begin)
    return ioError(format(
        "%sshape %s %s needs %llu bytes but data_offsets "
        "span %llu",
        at.c_str(), shapeToString(out.shape).c_str(),
        out.half ? dtypeV->string.c_str() : dtypeName(out.dtype),
        (unsigned long long)need, (unsigned long long)(out.end - out.begin)));
  return Status();
}

/// The tensors' byte ranges must tile the data exactly, as the format
/// requires: sorted by offset, each starts where the previous ended, and the
/// last ends at the end of the file. Overlaps would alias two tensors (and
/// let a small file claim huge allocations); gaps and trailing bytes are
/// data nobody reads, usually a sign of a corrupt or hand-edited file.
Status checkTiling(std::vector<const Entry *> entries, uint64_t dataSize,
                   const std::string &path) {
  std::sort(entries.begin(), entries.end(), [](const Entry *a, const Entry *b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  const Entry *prev = nullptr;
  for (const Entry *e : entries) {
    if (e->begin < cursor)
      return ioError(format(
          "%s: tensors '%s' (data bytes [%llu, %llu)) and "
          "'%s' (data bytes [%llu, %llu)) overlap",
          path.c_str(), prev->name.c_str(), (unsigned long long)prev->begin,
          (unsigned long long)prev->end, e->name.c_str(),
          (unsigned long long)e->begin, (unsigned long long)e->end));
    if (e->begin > cursor)
      return ioError(
          format("%s: data bytes [%llu, %llu) before tensor '%s' belong to no "
                 "tensor (a gap in data_offsets)",
                 path.c_str(), (unsigned long long)cursor,
                 (unsigned long long)e->begin, e->name.c_str()));
    cursor = e->end;
    prev = e;
  }
  if (cursor != dataSize)
    return ioError(format("%s: the last %llu data bytes belong to no tensor "
                          "(data_offsets end at %llu, the file has %llu data "
                          "bytes)",
                          path.c_str(), (unsigned long long)(dataSize - cursor),
                          (unsigned long long)cursor,
                          (unsigned long long)dataSize));
  return Status();
}

/// Allocates the tensor of a checked entry and copies its data.
Status readEntry(const std::string &bytes, size_t dataStart, const Entry &e,
                 HostTensor &out) {
  Status s = HostTensor::create(e.dtype, e.shape, out);
  if (!s.ok())
    return s.withPrefix(e.at);
  const char *src = bytes.data() + dataStart + e.begin;
  if (e.half)
    widenHalf(reinterpret_cast<const unsigned char *>(src), *e.half, out);
  else if (e.end > e.begin)
    std::memcpy(out.data(), src, e.end - e.begin);
  return Status();
}

} // namespace

Status parseSafeTensors(const std::string &bytes, const std::string &path,
                        TensorBundle &out) {
  out.clear();
  // Other weight formats users try first: name them and the way out.
  const char *other = nullptr;
  if (bytes.compare(0, 4, "PK\x03\x04") == 0)
    other = "a zip archive (a NumPy .npz or a PyTorch .pt/.pth file)";
  else if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80 &&
           !(bytes.size() >= 8 &&
             bytes.compare(2, 6, std::string(6, '\0')) == 0))
    // A pickle starts with 0x80 and its protocol; a .safetensors header of
    // 128 + 256·k bytes starts with 0x80 too, but then its length's upper
    // bytes are zero.
    other = "a Python pickle (a legacy PyTorch .pt/.pth file)";
  else if (bytes.compare(0, 6, "\x93NUMPY") == 0)
    other = "a single NumPy .npy array";
  if (other)
    return invalidArg(
        path + ": this is " + other +
        ", not a .safetensors file; save the weights with safetensors "
        "(safetensors.numpy.save_file or safetensors.torch.save_file), or "
        "bind single arrays with --param NAME=FILE.npy");
  if (bytes.size() < 8)
    return ioError(path + ": not a .safetensors file (shorter than its "
                          "8-byte header length)");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = headerLen << 8 | static_cast<unsigned char>(bytes[i]);
  if (headerLen > bytes.size() - 8)
    return ioError(format("%s: header length %llu exceeds the file size "
                          "(%zu bytes); not a .safetensors file or truncated",
                          path.c_str(), (unsigned long long)headerLen,
                          bytes.size()));
  if (headerLen > kMaxSafeTensorsHeader)
    return ioError(format("%s: header of %llu bytes is larger than the %llu "
                          "bytes this reader accepts (the safetensors format "
                          "allows 100 MB; real headers are a few KB per 100 "
                          "tensors)",
                          path.c_str(), (unsigned long long)headerLen,
                          (unsigned long long)kMaxSafeTensorsHeader));
  json::Value header;
  Status s = json::parse(bytes.substr(8, headerLen), header);
  if (!s.ok())
    return s.withPrefix(path + ": header: ");
  if (header.kind != json::Value::Object)
    return ioError(path + ": header must be a JSON object");
  size_t dataStart = 8 + headerLen;
  uint64_t dataSize = bytes.size() - dataStart;
  // Check every entry and the layout before allocating anything.
  std::vector<Entry> entries;
  entries.reserve(header.members.size());
  for (const auto &member : header.members) {
    if (member.first == "__metadata__")
      continue;
    entries.emplace_back();
    s = parseEntry(dataSize, path, member.first, member.second, entries.back());
    if (!s.ok())
      return s;
  }
  std::vector<const Entry *> sorted;
  for (const Entry &e : entries)
    sorted.push_back(&e);
  if (!(s = checkTiling(std::move(sorted), dataSize, path)).ok())
    return s;
  out.reserve(entries.size());
  for (const Entry &e : entries) {
    out.emplace_back(e.name, HostTensor());
    if (!(s = readEntry(bytes, dataStart, e, out.back().second)).ok())
      return s;
  }
  return Status();
}

Status readSafeTensors(const std::string &path, TensorBundle &out) {
  std::string bytes;
  Status s = readFile(path, bytes);
  if (!s.ok())
    return s;
  return parseSafeTensors(bytes, path, out);
}

/// Escapes a tensor name as a JSON string literal.
static std::string jsonQuote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += static_cast<char>(c);
    else if (c < 0x20)
      out += format("\\u%04x", c);
    else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string serializeSafeTensors(const TensorBundle &bundle) {
  static const char *const kTag[] = {"F32", "F64", "I64"};
  std::string header = "{";
  uint64_t offset = 0;
  for (const auto &[name, tensor] : bundle) {
    if (header.size() > 1)
      header += ',';
    header += jsonQuote(name) + ":{\"dtype\":\"" + kTag[tensor.dtype()] +
              "\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape().size(); ++i)
      header += (i ? "," : "") + std::to_string(tensor.shape()[i]);
    header +=
        format("],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
               (unsigned long long)(offset + tensor.byteSize()));
    offset += tensor.byteSize();
  }
  header += '}';
  // Pad with spaces so the data starts 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  out += header;
  for (const auto &entry : bundle)
    out.append(static_cast<const char *>(entry.second.data()),
               entry.second.byteSize());
  return out;
}

Status writeSafeTensors(const std::string &path, const TensorBundle &bundle) {
  return writeFile(path, serializeSafeTensors(bundle));
}

} // namespace torsor::rt
