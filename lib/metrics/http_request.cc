// http_request.cc - the head of an HTTP/1.x request, read incrementally (RFC 9112).
#include "metrics/http_request.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>

namespace dxpu::metrics {
namespace {

// tchar of RFC 9110: the characters of a method or a header name.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

// A header value's characters: visible ASCII, space, tab and bytes >= 0x80 (obs-text).
bool IsFieldValueChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 0x20 && u != 0x7f);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view TrimWhitespace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view HttpRequest::path() const {
  const std::string_view t = target;
  return t.substr(0, t.find('?'));
}

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

HttpRequestReader::State HttpRequestReader::Fail(int status, std::string why) {
  error_status_ = status;
  error_ = std::move(why);
  state_ = State::kError;
  return state_;
}

HttpRequestReader::State HttpRequestReader::Feed(std::string_view bytes) {
  if (state_ != State::kIncomplete) return state_;
  const size_t room = max_head_bytes_ - buf_.size();
  buf_.append(bytes.substr(0, room));
  for (; scanned_ < buf_.size(); ++scanned_) {
    if (buf_[scanned_] != '\n') continue;
    const size_t end = scanned_;
    const size_t len = end - line_start_;
    const bool empty = len == 0 || (len == 1 && buf_[line_start_] == '\r');
    line_start_ = end + 1;
    if (!empty) {
      seen_line_ = true;
    } else if (!seen_line_) {
      head_start_ = line_start_;  // an empty line before the request line is ignored
    } else {
      return Parse(end);
    }
  }
  if (bytes.size() > room || buf_.size() >= max_head_bytes_) {
    return Fail(431, fmt::format("request head over {} bytes", max_head_bytes_));
  }
  return state_;
}

HttpRequestReader::State HttpRequestReader::Parse(size_t end) {
  std::string_view head(buf_);
  head = head.substr(head_start_, end - head_start_);
  bool first = true;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the blank line that ends the head
    if (first ? !ParseRequestLine(line) : !ParseHeader(line)) return state_;
    first = false;
  }
  size_t hosts = 0;
  for (const auto& [name, value] : request_.headers) {
    if (EqualsIgnoreCase(name, "host")) ++hosts;
  }
  if (hosts > 1 || (hosts == 0 && request_.version == "HTTP/1.1")) {
    return Fail(400, hosts > 1 ? "more than one Host header" : "no Host header");
  }
  state_ = State::kComplete;
  return state_;
}

bool HttpRequestReader::ParseRequestLine(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    Fail(400, "request line is not method, target and version");
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) {
    Fail(400, "method is not a token");
    return false;
  }
  if (target.empty() ||
      !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
    Fail(400, "target is empty or has characters that are not allowed");
    return false;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    const bool http = version.size() == 8 && version.starts_with("HTTP/") &&
                      std::isdigit(static_cast<unsigned char>(version[5])) != 0 &&
                      version[6] == '.' &&
                      std::isdigit(static_cast<unsigned char>(version[7])) != 0;
    Fail(http ? 505 : 400, http ? "HTTP version not supported" : "not an HTTP version");
    return false;
  }
  request_.method = method;
  request_.target = target;
  request_.version = version;
  return true;
}

bool HttpRequestReader::ParseHeader(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    Fail(400, "folded header line");
    return false;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
    Fail(400, "header line is not name: value");
    return false;
  }
  const std::string_view value = TrimWhitespace(line.substr(colon + 1));
  if (!std::all_of(value.begin(), value.end(), IsFieldValueChar)) {
    Fail(400, "header value has control characters");
    return false;
  }
  request_.headers.emplace_back(line.substr(0, colon), value);
  return true;
}

}  // namespace dxpu::metrics
