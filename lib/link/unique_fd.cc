// unique_fd.cc - sole owner of a file descriptor.
#include "link/unique_fd.h"

#include <unistd.h>

namespace dxpu::link {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);  // A failed close still releases the descriptor on Linux.
  fd_ = fd;
}

}  // namespace dxpu::link
