// What a QEMU binary was built with, asked of the binary itself (`-device help`), once per
// binary: a QEMU from an older qemu-device/build-qemu.sh (a shared cache) lacks virtio-9p, and
// its VMs must still boot, without the shared root.
#pragma once

#include <string>

namespace ethx {

// Whether `qemu -device help` lists `device` (e.g. "virtio-9p-pci"). The listing is kept per
// path, size and modification time for the life of the process; a binary that cannot run
// lists nothing.
bool qemu_has_device(const std::string& qemu, const std::string& device);

// virtio-9p (configure --enable-virtfs): what -virtfs, the guests' shared root, needs.
bool qemu_supports_virtfs(const std::string& qemu);

}  // namespace ethx
