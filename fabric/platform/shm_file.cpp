#include "fabric/platform/shm_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace ethx::shm {
namespace {

std::string normalized_name(const std::string& name) {
  if (name.empty() || name == "/") throw std::runtime_error("shared memory: empty name");
  return name.front() == '/' ? name : "/" + name;
}

// std::strerror is not thread-safe; the category message is.
std::string error_text(int error_number) {
  return std::generic_category().message(error_number);
}

std::string describe_bytes(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  char text[64];
  if (bytes >= kMiB && bytes % kMiB == 0) {
    std::snprintf(text, sizeof text, "%zu MiB", bytes / kMiB);
  } else if (bytes >= kMiB) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  } else {
    std::snprintf(text, sizeof text, "%zu bytes", bytes);
  }
  return text;
}

[[noreturn]] void fail(const std::string& name, const std::string& what, int error_number) {
  throw std::runtime_error("shared memory " + name + ": " + what + " (" + error_text(error_number) +
                           ")");
}

[[noreturn]] void abandon_created(int fd, const std::string& name, const std::string& what,
                                  int error_number) {
  ::close(fd);
  ::shm_unlink(name.c_str());
  fail(name, what, error_number);
}

std::byte* map_shared(int fd, std::size_t bytes) {
  void* address = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return address == MAP_FAILED ? nullptr : static_cast<std::byte*>(address);
}

}  // namespace

SharedMemoryFile SharedMemoryFile::create(const std::string& name, std::size_t bytes) {
  const std::string shm_name = normalized_name(name);
  if (bytes == 0) throw std::runtime_error("shared memory " + shm_name + ": size must not be 0");

  const int fd = ::shm_open(shm_name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    const int error_number = errno;
    if (error_number == EEXIST) {
      throw std::runtime_error("shared memory " + shm_name + " already exists (/dev/shm" +
                               shm_name +
                               "): another ethx-switch is running with this name, or a crashed "
                               "one left it behind; remove it if no switch is running");
    }
    fail(shm_name, "cannot create", error_number);
  }
  // From here on a failure must not leave a half-made file behind.
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error_number = errno;  // before building the message can clobber it
    abandon_created(fd, shm_name, "cannot resize to " + describe_bytes(bytes), error_number);
  }
  // ftruncate on tmpfs only makes a sparse file; without reserving the pages, running out of
  // /dev/shm would surface much later as SIGBUS inside whichever process touched the page.
  if (const int error_number = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
      error_number != 0) {
    ::close(fd);
    ::shm_unlink(shm_name.c_str());
    throw std::runtime_error("shared memory " + shm_name + ": cannot allocate " +
                             describe_bytes(bytes) + " in /dev/shm (" + error_text(error_number) +
                             "); free space or lower fabric.gpus / fabric.hbm_bytes");
  }
  std::byte* data = map_shared(fd, bytes);
  if (data == nullptr) {
    const int error_number = errno;
    abandon_created(fd, shm_name, "cannot map " + describe_bytes(bytes), error_number);
  }
  ::close(fd);  // the mapping keeps the file alive
  return SharedMemoryFile(shm_name, data, bytes, /*owns_name=*/true);
}

SharedMemoryFile SharedMemoryFile::open(const std::string& name) {
  const std::string shm_name = normalized_name(name);
  const int fd = ::shm_open(shm_name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    const int error_number = errno;
    if (error_number == ENOENT) {
      fail(shm_name, "does not exist (is ethx-switch running with this name?)", error_number);
    }
    fail(shm_name, "cannot open", error_number);
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int error_number = errno;
    ::close(fd);
    fail(shm_name, "cannot stat", error_number);
  }
  const auto bytes = static_cast<std::size_t>(status.st_size);
  if (bytes == 0) {
    ::close(fd);
    throw std::runtime_error("shared memory " + shm_name +
                             " is empty (its creator may still be setting it up)");
  }
  std::byte* data = map_shared(fd, bytes);
  const int error_number = errno;
  ::close(fd);
  if (data == nullptr) fail(shm_name, "cannot map " + describe_bytes(bytes), error_number);
  return SharedMemoryFile(shm_name, data, bytes, /*owns_name=*/false);
}

bool SharedMemoryFile::exists(const std::string& name) {
  const std::string shm_name = normalized_name(name);
  const int fd = ::shm_open(shm_name.c_str(), O_RDONLY, 0);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  return errno != ENOENT;  // e.g. EACCES: it is there, just not ours
}

void SharedMemoryFile::remove(const std::string& name) {
  const std::string shm_name = normalized_name(name);
  if (::shm_unlink(shm_name.c_str()) != 0) {
    const int error_number = errno;
    if (error_number != ENOENT) fail(shm_name, "cannot remove", error_number);
  }
}

SharedMemoryFile::SharedMemoryFile(std::string name, std::byte* data, std::size_t size_bytes,
                                   bool owns_name)
    : name_(std::move(name)), data_(data), size_bytes_(size_bytes), owns_name_(owns_name) {}

SharedMemoryFile::SharedMemoryFile(SharedMemoryFile&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)),
      owns_name_(std::exchange(other.owns_name_, false)) {}

SharedMemoryFile& SharedMemoryFile::operator=(SharedMemoryFile&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    owns_name_ = std::exchange(other.owns_name_, false);
  }
  return *this;
}

SharedMemoryFile::~SharedMemoryFile() {
  release();
}

void SharedMemoryFile::unlink_now() {
  if (!owns_name_) return;
  owns_name_ = false;
  remove(name_);
}

void SharedMemoryFile::release() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_bytes_);
  if (owns_name_) ::shm_unlink(name_.c_str());
  data_ = nullptr;
  size_bytes_ = 0;
  owns_name_ = false;
}

}  // namespace ethx::shm
