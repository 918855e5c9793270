// link_waiter.cc - sleeping until frames arrive on links (link_waiter.h).
#include "link/link_waiter.h"

#include <sys/epoll.h>
#include <ctime>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <string>

#include "link/os_error.h"

namespace dxpu::link {

OpenResult<LinkWaiter> LinkWaiter::Create() {
  OpenResult<LinkWaiter> r;
  UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll.valid()) {
    r.error = LastOsError("link waiter: epoll_create1");
    return r;
  }
  r.link.reset(new LinkWaiter(std::move(epoll)));  // private constructor
  return r;
}

std::error_code LinkWaiter::Add(int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
    return LastOsError("link waiter: epoll_ctl add " + std::to_string(fd));
  return {};
}

std::error_code LinkWaiter::AddLink(const Link& link) {
  return Add(link.fd(), EPOLLIN | EPOLLEXCLUSIVE);
}

std::error_code LinkWaiter::RemoveLink(const Link& link) {
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, link.fd(), nullptr) != 0)
    return LastOsError("link waiter: epoll_ctl del " + std::to_string(link.fd()));
  return {};
}

std::error_code LinkWaiter::AddFd(int fd) { return Add(fd, EPOLLIN); }

bool LinkWaiter::Wait(uint64_t timeout_ns) {
  std::array<epoll_event, 8> events{};
  constexpr auto kMax = static_cast<int>(events.size());
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  // Nanoseconds (Linux 5.11): an MMIO read's answer takes microseconds.
  const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                    static_cast<long>(timeout_ns % 1'000'000'000)};
  int n = epoll_pwait2(epoll_.get(), events.data(), kMax, &ts, nullptr);
  if (n >= 0 || errno != ENOSYS) return n > 0;
#endif
  // Milliseconds, rounded up: waking early would only mean sleeping again.
  const uint64_t ms = (timeout_ns + 999'999) / 1'000'000;
  const int n_ms = epoll_wait(epoll_.get(), events.data(), kMax,
                              static_cast<int>(std::min<uint64_t>(ms, INT_MAX)));
  return n_ms > 0;
}

}  // namespace dxpu::link
