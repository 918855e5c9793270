// link_waiter.h - a thread's sleep until frames arrive on links: an epoll set of the links'
// descriptors (Link::fd) and of any eventfds that wake it, waited on with a timeout in
// nanoseconds.
//
// Several threads may receive from the same links, each with a waiter of its own (the host
// proxy's worker, and a caller that waits for an answer and receives it itself). A link added
// with AddLink is registered exclusively (EPOLLEXCLUSIVE), so that a frame wakes only one of
// the threads sleeping on it: the one whose waiter added the link first among those asleep
// now. A thread that wants a link's frames before another does registers it first; the other
// hears of a frame only while the first is not asleep, and must not expect to hear of one the
// first was woken for (the first receives it, or hands over).
#ifndef DXPU_LIB_LINK_LINK_WAITER_H_
#define DXPU_LIB_LINK_LINK_WAITER_H_

#include <cstdint>
#include <system_error>

#include "link/link.h"
#include "link/unique_fd.h"

namespace dxpu::link {

class LinkWaiter {
 public:
  static OpenResult<LinkWaiter> Create();

  LinkWaiter(const LinkWaiter&) = delete;
  LinkWaiter& operator=(const LinkWaiter&) = delete;
  LinkWaiter(LinkWaiter&&) = delete;
  LinkWaiter& operator=(LinkWaiter&&) = delete;
  ~LinkWaiter() = default;

  // A link's descriptor, registered exclusively (see above). Added again after RemoveLink, it
  // comes after the waiters that have it now; if a frame waits, the next Wait sees it.
  std::error_code AddLink(const Link& link);
  // Stops watching a link (a thread asleep in Wait is not woken by its frames any more).
  std::error_code RemoveLink(const Link& link);
  // Any other descriptor that ends a Wait while readable (an eventfd someone writes to wake
  // this thread); every thread waiting on it wakes.
  std::error_code AddFd(int fd);

  // Sleeps until a registered descriptor is readable or timeout_ns passed (0: only looks).
  // True when one is readable; false on timeout (or a signal). Does not read anything.
  bool Wait(uint64_t timeout_ns);

 private:
  explicit LinkWaiter(UniqueFd epoll) : epoll_(std::move(epoll)) {}
  std::error_code Add(int fd, uint32_t events);

  UniqueFd epoll_;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_LINK_WAITER_H_
