// audit_log.h - the manager's audit log (issue 32): one JSON line per request that changes the
// pool or was refused doing so: when, who (the client certificate's identity, or "anonymous"
// on plain HTTP), from where, what (method, path, the request's fields that matter), and the
// result (HTTP status and error name). Appended with one write(2) per line (O_APPEND), so lines
// of concurrent requests never interleave; the file is created 0600.
#ifndef DXPU_MANAGER_AUDIT_LOG_H_
#define DXPU_MANAGER_AUDIT_LOG_H_

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace dxpu::manager {

struct AuditEntry {
  std::string who;   // the identity
  std::string from;  // "IP:PORT"
  std::string what;  // "POST /v1/boxes"
  nlohmann::json detail = nlohmann::json::object();
  int status = 0;
  std::string result;  // "ok" or the error's name
};

class AuditLog {
 public:
  // Opens `path` for appending; null with *error saying why.
  static std::unique_ptr<AuditLog> Open(const std::string& path, std::string* error);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends the entry with the time now; false (and a log line) if it could not be written.
  bool Record(const AuditEntry& entry);
  const std::string& path() const { return path_; }

 private:
  AuditLog(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_AUDIT_LOG_H_
