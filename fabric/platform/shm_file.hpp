// A named POSIX shared-memory file mapped into this process: the medium ethx-switch and the
// node processes share their frame rings through.
#pragma once

#include <cstddef>
#include <string>

namespace ethx::shm {

// Move-only owner of one mapping. The creator also owns the name and unlinks it when it goes
// away, so a clean shutdown leaves nothing in /dev/shm; an opener only unmaps.
class SharedMemoryFile {
 public:
  // Creates `name` exclusively (fails if it exists), sizes it to `bytes` and reserves every page
  // now, so a full /dev/shm is reported here instead of as SIGBUS on first touch.
  // Names without a leading '/' get one.
  static SharedMemoryFile create(const std::string& name, std::size_t bytes);
  // Maps an existing file whole; its size comes from the file itself.
  static SharedMemoryFile open(const std::string& name);
  static bool exists(const std::string& name);
  // Unlinks `name`; a missing name is not an error (for cleanup tools and tests).
  static void remove(const std::string& name);

  SharedMemoryFile(SharedMemoryFile&& other) noexcept;
  SharedMemoryFile& operator=(SharedMemoryFile&& other) noexcept;
  SharedMemoryFile(const SharedMemoryFile&) = delete;
  SharedMemoryFile& operator=(const SharedMemoryFile&) = delete;
  ~SharedMemoryFile();

  std::byte* data() const { return data_; }
  std::size_t size_bytes() const { return size_bytes_; }
  const std::string& name() const { return name_; }
  bool owns_name() const { return owns_name_; }
  // Removes the name early (e.g. once every peer has attached); the mapping stays valid.
  void unlink_now();
  // Hands the name to someone else (`ethx up`: the run record; `ethx down` removes it): the
  // destructor then only unmaps.
  void keep_name() { owns_name_ = false; }

 private:
  SharedMemoryFile(std::string name, std::byte* data, std::size_t size_bytes, bool owns_name);
  void release() noexcept;

  std::string name_;
  std::byte* data_ = nullptr;
  std::size_t size_bytes_ = 0;
  bool owns_name_ = false;
};

}  // namespace ethx::shm
