#!/usr/bin/env python3
"""Describes the cubins embedded in a torsorc --target=nvptx shared object.

Finds every ELF image inside the .so whose machine is EM_CUDA (190) and
prints, one line each, what lit checks: the SM the image was assembled for
(from e_flags), the tool that produced it (the toolkit note ptxas writes,
.note.nv.tkinfo), whether the kernel info section (.nv.info) is there, and
how many kernels (.text.<name> sections) it holds. Standard library only.

    cubin: arch=sm_90 tool=ptxas nv.info=yes kernels=12
"""
import struct
import sys

EM_CUDA = 190


def sections(image):
    """(name, bytes) of every section of a little-endian ELF64 image."""
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)
    headers = []
    for i in range(shnum):
        name, _, _, _, offset, size = struct.unpack_from(
            "<IIQQQQ", image, shoff + i * shentsize)
        headers.append((name, offset, size))
    _, stroff, strsize = headers[shstrndx]
    strtab = image[stroff:stroff + strsize]
    for name, offset, size in headers:
        end = strtab.index(b"\0", name)
        yield strtab[name:end].decode(), image[offset:offset + size]


def image_size(data, start):
    """Length of the ELF64 image at `start`: its section table is last."""
    shoff, = struct.unpack_from("<Q", data, start + 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, start + 0x3A)
    return shoff + shentsize * shnum


def main():
    data = open(sys.argv[1], "rb").read()
    found = 0
    at = data.find(b"\x7fELF", 1)
    while at != -1:
        ok = (len(data) >= at + 64 and data[at + 4] == 2 and
              struct.unpack_from("<H", data, at + 18)[0] == EM_CUDA)
        if ok:
            image = data[at:at + image_size(data, at)]
            flags, = struct.unpack_from("<I", image, 0x30)
            # CUDA 12.8+ ELF ABI (version 8): the SM number is bits 8-15;
            # older ABIs kept it in bits 0-7.
            sm = (flags >> 8) & 0xFF if image[8] >= 8 else flags & 0xFF
            named = dict(sections(image))
            note = named.get(".note.nv.tkinfo", b"")
            tool = "ptxas" if b"ptxas" in note else "unknown"
            kernels = sum(1 for n in named if n.startswith(".text."))
            print("cubin: arch=sm_%d tool=%s nv.info=%s kernels=%d" %
                  (sm, tool, "yes" if ".nv.info" in named else "no", kernels))
            found += 1
        at = data.find(b"\x7fELF", at + 4)
    if not found:
        print("cubin: none embedded in %s" % sys.argv[1])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
