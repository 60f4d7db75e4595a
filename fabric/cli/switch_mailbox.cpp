#include "fabric/cli/switch_mailbox.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace ethx {

MailboxLock::MailboxLock(const RunDirectory& directory) {
  const std::string path = directory.path() + "/switch-command.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int error = errno;
      ::close(fd_);
      throw std::system_error(error, std::generic_category(), "flock " + path);
    }
  }
}

MailboxLock::~MailboxLock() {
  ::close(fd_);
}

const RecordedProcess* switch_process(const RunState& state) {
  for (const RecordedProcess& process : state.processes) {
    if (process.role == "switch") return &process;
  }
  return nullptr;
}

}  // namespace ethx
