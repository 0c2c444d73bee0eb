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

/// Reads one header entry `name` into `out`, checking it against the
/// `dataSize` bytes that follow the header.
Status parseEntry(const std::string &bytes, size_t dataStart, uint64_t dataSize,
                  const std::string &path, const std::string &name,
                  const json::Value &entry, HostTensor &out) {
  std::string at = format("%s: tensor '%s' (header %s): ", path.c_str(),
                          name.c_str(), entry.where().c_str());
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
  int32_t dtype;
  std::optional<HalfFormat> half;
  if (!dtypeFromTag(dtypeV->string, dtype, half))
    return ioError(at + "unsupported dtype '" + dtypeV->string +
                   "'; supported: F32, F64, I64, and F16 and BF16 (widened "
                   "to the model's float type)");
  size_t storedSize = half ? 2 : dtypeSize(dtype);
  std::vector<int64_t> shape;
  for (const json::Value &d : shapeV->elements) {
    if (d.kind != json::Value::Number || !d.isInteger || d.integer < 0)
      return ioError(at + "shape entries must be non-negative integers");
    shape.push_back(d.integer);
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
  int64_t n = numElements(shape);
  uint64_t need = 0;
  if (n < 0 ||
      __builtin_mul_overflow(static_cast<uint64_t>(n), storedSize, &need))
    return ioError(at + "shape is too large");
  if (need != static_cast<uint64_t>(offs[1] - offs[0]))
    return ioError(format("%sshape %s %s needs %llu bytes but data_offsets "
                          "span %lld",
                          at.c_str(), shapeToString(shape).c_str(),
                          half ? dtypeV->string.c_str() : dtypeName(dtype),
                          (unsigned long long)need,
                          (long long)(offs[1] - offs[0])));
  Status s = HostTensor::create(dtype, shape, out);
  if (!s.ok())
    return s.withPrefix(at);
  const char *src = bytes.data() + dataStart + offs[0];
  if (half)
    widenHalf(reinterpret_cast<const unsigned char *>(src), *half, out);
  else if (need)
    std::memcpy(out.data(), src, need);
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
  json::Value header;
  Status s = json::parse(bytes.substr(8, headerLen), header);
  if (!s.ok())
    return s.withPrefix(path + ": header: ");
  if (header.kind != json::Value::Object)
    return ioError(path + ": header must be a JSON object");
  size_t dataStart = 8 + headerLen;
  uint64_t dataSize = bytes.size() - dataStart;
  for (const auto &member : header.members) {
    if (member.first == "__metadata__")
      continue;
    out.emplace_back(member.first, HostTensor());
    s = parseEntry(bytes, dataStart, dataSize, path, member.first,
                   member.second, out.back().second);
    if (!s.ok())
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
