#!/usr/bin/env python3
"""Unpack a .deb's files into a folder, as `dpkg -x FILE.deb DIR` does.

Used by tests/gpu/run_on_device.sh only where dpkg-deb is missing (a machine
image that is not Debian-based). A .deb is an ar archive holding
debian-binary, control.tar.* and data.tar.*; the files are in data.tar.*
(xz, gz, bz2 or uncompressed; Debian 12's are xz).
"""
import io
import os
import sys
import tarfile


def ar_members(blob):
    """Yield (name, bytes) for each member of an ar archive."""
    if not blob.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    pos = 8
    while pos + 60 <= len(blob):
        header = blob[pos:pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        if header[58:60] != b"`\n":
            raise ValueError("bad ar member header at offset %d" % pos)
        pos += 60
        yield name, blob[pos:pos + size]
        pos += size + (size & 1)  # members are 2-byte aligned


def main(argv):
    if len(argv) != 3:
        print("usage: unpack_deb.py FILE.deb DIR", file=sys.stderr)
        return 2
    deb, dest = argv[1], argv[2]
    if os.path.abspath(dest) in ("/", "/usr"):
        print("unpack_deb.py: refusing to unpack into %s" % dest, file=sys.stderr)
        return 2
    with open(deb, "rb") as f:
        blob = f.read()
    for name, data in ar_members(blob):
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                print("unpack_deb.py: %s: zstd data is not supported here" % deb, file=sys.stderr)
                return 1
            os.makedirs(dest, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                # The 'tar' filter keeps symlinks (the .so links) but refuses paths leaving DIR.
                if hasattr(tarfile, "tar_filter"):
                    tar.extractall(dest, filter="tar")
                else:
                    tar.extractall(dest)
            return 0
    print("unpack_deb.py: %s has no data.tar member" % deb, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
