//===- ElfCheck.cpp - Sanity check of a model file before dlopen ----------===//
//
// Implements ElfCheck.h with <elf.h> alone. Only the headers are read (the
// ELF header, then the program header table); all offset arithmetic is
// checked for overflow, since the file is untrusted.
//
//===----------------------------------------------------------------------===//

#include "ElfCheck.h"

#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace torsor::rt {

namespace {

/// This machine's ELF e_machine.
constexpr uint16_t hostMachine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_NONE;
#endif
}

/// True when [offset, offset + count * entSize) lies inside `size` bytes.
bool inside(uint64_t offset, uint64_t count, uint64_t entSize, uint64_t size) {
  uint64_t bytes, end;
  return !__builtin_mul_overflow(count, entSize, &bytes) &&
         !__builtin_add_overflow(offset, bytes, &end) && end <= size;
}

/// Checks the ELF header and the program headers of a file of `size` bytes
/// whose first bytes are `head` and whose program header table is read by
/// `readPhdrs(offset, bytes, out)`.
template <typename ReadFn>
Status check(const unsigned char *head, size_t headSize, uint64_t size,
             const std::string &what, ReadFn readPhdrs) {
  if (headSize < sizeof(Elf64_Ehdr) || std::memcmp(head, ELFMAG, SELFMAG) != 0)
    return Status(TORSOR_ABI_ERROR,
                  what + " is not a shared library (no ELF header)");
  if (head[EI_CLASS] != ELFCLASS64 || head[EI_DATA] != ELFDATA2LSB)
    return Status(TORSOR_ABI_ERROR,
                  what + " is not a 64-bit little-endian ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, head, sizeof(eh));
  if (eh.e_type != ET_DYN)
    return Status(TORSOR_ABI_ERROR,
                  format("%s is an ELF file of type %u, not a shared library "
                         "(ET_DYN)",
                         what.c_str(), (unsigned)eh.e_type));
  if (hostMachine() != EM_NONE && eh.e_machine != hostMachine())
    return Status(TORSOR_ABI_ERROR,
                  format("%s is built for ELF machine %u, this host is %u",
                         what.c_str(), (unsigned)eh.e_machine,
                         (unsigned)hostMachine()));
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !inside(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr), size))
    return Status(TORSOR_ABI_ERROR,
                  format("%s is truncated or corrupt: its %u program headers "
                         "at offset %llu do not fit in its %llu bytes",
                         what.c_str(), (unsigned)eh.e_phnum,
                         (unsigned long long)eh.e_phoff,
                         (unsigned long long)size));
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  Status s = readPhdrs(eh.e_phoff, ph.size() * sizeof(Elf64_Phdr), ph.data());
  if (!s.ok())
    return s;
  for (size_t i = 0; i < ph.size(); ++i) {
    if (ph[i].p_type != PT_LOAD && ph[i].p_type != PT_DYNAMIC)
      continue;
    if (!inside(ph[i].p_offset, 1, ph[i].p_filesz, size))
      return Status(
          TORSOR_ABI_ERROR,
          format("%s is truncated: segment %zu needs file bytes [%llu, %llu) "
                 "but the file has %llu bytes",
                 what.c_str(), i, (unsigned long long)ph[i].p_offset,
                 (unsigned long long)(ph[i].p_offset + ph[i].p_filesz),
                 (unsigned long long)size));
  }
  // Section headers come last in the files lld writes; dlopen does not
  // read them, but a file cut inside them is truncated all the same.
  if (eh.e_shoff != 0 && !inside(eh.e_shoff, eh.e_shnum, eh.e_shentsize, size))
    return Status(TORSOR_ABI_ERROR,
                  format("%s is truncated: its section headers end past its "
                         "%llu bytes",
                         what.c_str(), (unsigned long long)size));
  return Status();
}

} // namespace

Status checkElfBytes(const unsigned char *bytes, size_t size,
                     const std::string &what) {
  return check(bytes, size, size, what,
               [&](uint64_t offset, size_t n, void *out) {
                 std::memcpy(out, bytes + offset, n); // inside() checked it
                 return Status();
               });
}

Status checkElfFile(const std::string &path, const std::string &what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ioError(
        format("cannot open %s: %s", what.c_str(), std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return ioError(what + " is not a regular file");
  }
  unsigned char head[sizeof(Elf64_Ehdr)] = {};
  ssize_t n = ::pread(fd, head, sizeof(head), 0);
  Status s =
      check(head, n < 0 ? 0 : static_cast<size_t>(n),
            static_cast<uint64_t>(st.st_size), what,
            [&](uint64_t offset, size_t bytes, void *out) {
              if (::pread(fd, out, bytes, static_cast<off_t>(offset)) !=
                  static_cast<ssize_t>(bytes))
                return ioError("cannot read the program headers of " + what);
              return Status();
            });
  ::close(fd);
  return s;
}

} // namespace torsor::rt
