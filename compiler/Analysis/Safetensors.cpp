//===- Safetensors.cpp - Read and write weight files ----------------------===//
//
// Format: an 8-byte little-endian header length N, N bytes of JSON mapping
// each tensor name to {dtype, shape, data_offsets: [begin, end)} relative to
// the data section, then the data, little-endian and C order. Every offset
// and size is checked before use, so a truncated or hostile file is an
// error, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/Safetensors.h"
#include "compiler/Support/FileIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace torsor;

namespace {
/// An error that names the file.
llvm::Error fail(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (path + ": " + message).str());
}

/// Bytes per element of a supported dtype, 0 otherwise.
size_t elementSize(llvm::StringRef dtype) {
  return dtype == "F32" ? 4 : dtype == "F64" ? 8 : 0;
}
} // namespace

std::string torsor::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

llvm::Expected<WeightFile> torsor::readSafetensors(llvm::StringRef path) {
  // Regular files only: a device or FIFO would be read without a bound.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      !llvm::sys::fs::is_regular_file(status))
    return fail(path, "cannot read: not a regular file (a device or FIFO "
                      "would be read without end); give a .safetensors file");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, "cannot read: " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 8)
    return fail(path, "too short for a safetensors header");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | static_cast<uint8_t>(bytes[i]);
  if (headerSize > bytes.size() - 8)
    return fail(path, "header length " + llvm::Twine(headerSize) +
                          " exceeds the file size");
  auto json = llvm::json::parse(bytes.substr(8, headerSize));
  if (!json)
    return fail(path, "header is not JSON: " + toString(json.takeError()));
  auto *root = json->getAsObject();
  if (!root)
    return fail(path, "header is not a JSON object");
  llvm::StringRef data = bytes.substr(8 + headerSize);
  WeightFile file;
  for (auto &entry : *root) {
    llvm::StringRef name = entry.first;
    if (name == "__metadata__")
      continue;
    auto *info = entry.second.getAsObject();
    auto dtype = info ? info->getString("dtype") : std::nullopt;
    auto *shape = info ? info->getArray("shape") : nullptr;
    auto *offsets = info ? info->getArray("data_offsets") : nullptr;
    if (!dtype || !shape || !offsets || offsets->size() != 2)
      return fail(path,
                  "tensor '" + name + "' lacks dtype, shape or data_offsets");
    size_t size = elementSize(*dtype);
    if (!size)
      return fail(path, "tensor '" + name + "' has dtype " + *dtype +
                            "; only F32 and F64 are supported here");
    WeightTensor tensor;
    tensor.dtype = dtype->str();
    uint64_t count = 1;
    for (const auto &dim : *shape) {
      auto extent = dim.getAsInteger();
      if (!extent || *extent < 0 || *extent > (int64_t(1) << 40))
        return fail(path, "tensor '" + name + "' has a bad shape");
      tensor.shape.push_back(*extent);
      count *= static_cast<uint64_t>(*extent);
      if (count > (uint64_t(1) << 40))
        return fail(path, "tensor '" + name + "' is too large");
    }
    auto begin = (*offsets)[0].getAsInteger();
    auto end = (*offsets)[1].getAsInteger();
    if (!begin || !end || *begin < 0 || *end < *begin ||
        static_cast<uint64_t>(*end) > data.size() ||
        static_cast<uint64_t>(*end - *begin) != count * size)
      return fail(path, "tensor '" + name +
                            "' has data_offsets that do not fit its shape "
                            "or the file");
    const char *src = data.data() + *begin;
    tensor.data.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      if (size == 4) {
        float f;
        std::memcpy(&f, src + 4 * i, 4);
        tensor.data[i] = f;
      } else {
        std::memcpy(&tensor.data[i], src + 8 * i, 8);
      }
    }
    file.order.push_back(name.str());
    file.tensors[name] = std::move(tensor);
  }
  // JSON objects are unordered; keep a stable, readable order.
  std::sort(file.order.begin(), file.order.end());
  return file;
}

llvm::Error torsor::writeSafetensors(llvm::StringRef path,
                                     const WeightFile &file) {
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const std::string &name : file.order) {
    const WeightTensor &t = file.tensors.find(name)->second;
    uint64_t bytes = t.data.size() * elementSize(t.dtype);
    llvm::json::Array shape;
    for (int64_t d : t.shape)
      shape.push_back(d);
    header[name] = llvm::json::Object{
        {"dtype", t.dtype},
        {"shape", std::move(shape)},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  while (text.size() % 8)
    text += ' '; // the data section starts 8-byte aligned
  // Built in memory, then written by the compiler's file rules (links
  // resolved, staged beside the target, complete or absent).
  std::string bytesOut;
  llvm::raw_string_ostream os(bytesOut);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    os << static_cast<char>((n >> (8 * i)) & 0xff);
  os << text;
  for (const std::string &name : file.order) {
    const WeightTensor &t = file.tensors.find(name)->second;
    for (double v : t.data) {
      char bytes[8];
      if (t.dtype == "F32") {
        float f = static_cast<float>(v);
        std::memcpy(bytes, &f, 4);
        os.write(bytes, 4);
      } else {
        std::memcpy(bytes, &v, 8);
        os.write(bytes, 8);
      }
    }
  }
  os.flush();
  return writeFileSafely(path, bytesOut, /*allowSpecial=*/false,
                         "a weights file");
}
