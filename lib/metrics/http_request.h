// http_request.h - reads the head of an HTTP/1.x request (request line and header fields,
// RFC 9112) from bytes as they arrive, sans-IO, within a size limit. Enough for a server that
// answers GET and HEAD and closes the connection after each response: a body is not read.
#ifndef DXPU_LIB_METRICS_HTTP_REQUEST_H_
#define DXPU_LIB_METRICS_HTTP_REQUEST_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dxpu::metrics {

struct HttpRequest {
  std::string method;                                        // "GET"
  std::string target;                                        // "/metrics?x=1", as sent
  std::string version;                                       // "HTTP/1.1" or "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent, values trimmed

  // The target without its query.
  std::string_view path() const;
  // The value of the first header of this name (case-insensitive), if any.
  const std::string* header(std::string_view name) const;
};

class HttpRequestReader {
 public:
  enum class State { kIncomplete, kComplete, kError };

  // max_head_bytes: the most the request line and header fields may take, blank line included.
  explicit HttpRequestReader(size_t max_head_bytes = 8192) : max_head_bytes_(max_head_bytes) {}

  // Takes the next bytes of the connection. Once the state is kComplete or kError it stays so
  // and further bytes are ignored (a body, or a pipelined request, is not read).
  State Feed(std::string_view bytes);

  State state() const { return state_; }
  // kComplete: the request.
  const HttpRequest& request() const { return request_; }
  // kError: the status to answer with: 400 (malformed), 431 (head over the limit) or 505
  // (an HTTP version other than 1.x); and why, for the log.
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }

 private:
  State Fail(int status, std::string why);
  // Parses the head's lines, buf_[head_start_, end): request line, then header fields.
  State Parse(size_t end);
  bool ParseRequestLine(std::string_view line);
  bool ParseHeader(std::string_view line);

  size_t max_head_bytes_;
  std::string buf_;
  size_t scanned_ = 0;      // bytes of buf_ searched for line ends
  size_t line_start_ = 0;   // where the current line begins
  size_t head_start_ = 0;   // after the empty lines a request may begin with
  bool seen_line_ = false;  // the request line has begun
  State state_ = State::kIncomplete;
  HttpRequest request_;
  int error_status_ = 0;
  std::string error_;
};

}  // namespace dxpu::metrics

#endif  // DXPU_LIB_METRICS_HTTP_REQUEST_H_
