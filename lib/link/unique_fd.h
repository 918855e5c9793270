// unique_fd.h - sole owner of a file descriptor; closes it on destruction.
#ifndef DXPU_LIB_LINK_UNIQUE_FD_H_
#define DXPU_LIB_LINK_UNIQUE_FD_H_

namespace dxpu::link {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Gives up ownership without closing.
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Closes the owned descriptor (if any) and takes ownership of fd.
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_UNIQUE_FD_H_
