// leader_redirect.h - how a client of the pool manager follows its leader: it knows one or
// more managers' URLs ("http://a:17490,http://b:17490"); a standby replica answers 503
// "not-leader" naming the leader's URL ({"leader": {"url"}}), which the client then asks; a
// manager that does not answer, or a standby that knows no leader, sends it to the next URL.
// Only a request that was not taken is sent again: one refused as not-leader, or one whose
// connection could not be made.
#ifndef DXPU_MANAGER_LEADER_REDIRECT_H_
#define DXPU_MANAGER_LEADER_REDIRECT_H_

#include <string>
#include <string_view>
#include <vector>

namespace dxpu::manager {

// "a,b,c" into its URLs, in order; empty parts are dropped.
std::vector<std::string> SplitUrls(std::string_view list);

// The leader's URL a standby named in a 503 answer, or "" (another answer, none named, or a
// body that is not the manager's JSON).
std::string LeaderNamedBy(int status, const std::string& body);

// The managers a client knows, and which it asks now.
class ManagerUrls {
 public:
  explicit ManagerUrls(std::string_view list) : urls_(SplitUrls(list)) {}
  const std::string& Current() const { return current_ < urls_.size() ? urls_[current_] : none_; }
  // The current one did not answer, or knows no leader: the next one.
  void Next() {
    if (!urls_.empty()) current_ = (current_ + 1) % urls_.size();
  }
  // A standby named the leader: it is asked from now on (added to the list if it is not in it).
  void Follow(const std::string& leader);
  size_t size() const { return urls_.size(); }

 private:
  std::vector<std::string> urls_;
  size_t current_ = 0;
  std::string none_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_LEADER_REDIRECT_H_
