// audit_log.cc - the manager's audit log (audit_log.h).
#include "manager/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "lib/util/errno_text.h"

namespace dxpu::manager {

namespace {

// "2026-12-08T01:02:03.456Z" and the nanoseconds since the epoch.
std::pair<std::string, uint64_t> Now() {
  const auto now = std::chrono::system_clock::now();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch());
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  return {fmt::format("{}.{:03}Z", text, (ns.count() / 1'000'000) % 1000),
          static_cast<uint64_t>(ns.count())};
}

}  // namespace

std::unique_ptr<AuditLog> AuditLog::Open(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = fmt::format("cannot open the audit log {}: {}", path, util::ErrnoText(errno));
    return nullptr;
  }
  return std::unique_ptr<AuditLog>(new AuditLog(fd, path));
}

AuditLog::~AuditLog() { ::close(fd_); }

bool AuditLog::Record(const AuditEntry& entry) {
  const auto [time, time_ns] = Now();
  const nlohmann::json line = {{"time", time},           {"time_ns", time_ns},
                               {"who", entry.who},       {"from", entry.from},
                               {"what", entry.what},     {"detail", entry.detail},
                               {"status", entry.status}, {"result", entry.result}};
  // Invalid UTF-8 from a client is replaced, never a reason to lose the line.
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const ssize_t n = ::write(fd_, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) {
    spdlog::error("audit log {}: {}", path_, n < 0 ? util::ErrnoText(errno) : "a short write");
    return false;
  }
  return true;
}

}  // namespace dxpu::manager
