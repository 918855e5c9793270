// leader_redirect.cc - following the pool manager's leader (leader_redirect.h).
#include "manager/leader_redirect.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace dxpu::manager {

std::vector<std::string> SplitUrls(std::string_view list) {
  std::vector<std::string> urls;
  size_t from = 0;
  while (from <= list.size()) {
    const size_t comma = std::min(list.find(',', from), list.size());
    if (comma > from) urls.emplace_back(list.substr(from, comma - from));
    from = comma + 1;
  }
  return urls;
}

std::string LeaderNamedBy(int status, const std::string& body) {
  if (status != 503) return "";
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("error", "") != "not-leader") return "";
  const auto leader = j.find("leader");
  if (leader == j.end() || !leader->is_object()) return "";
  const auto url = leader->find("url");
  if (url == leader->end() || !url->is_string()) return "";
  return url->get<std::string>();
}

void ManagerUrls::Follow(const std::string& leader) {
  const auto it = std::find(urls_.begin(), urls_.end(), leader);
  if (it != urls_.end()) {
    current_ = static_cast<size_t>(it - urls_.begin());
    return;
  }
  urls_.push_back(leader);
  current_ = urls_.size() - 1;
}

}  // namespace dxpu::manager
