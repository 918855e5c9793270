// error_report.cc - failure reports on stderr and, with --json, on stdout.
#include "error_report.h"

#include <nlohmann/json.hpp>

namespace dxpu::cli {

int ReportError(std::string_view command, const Error& error, bool json, std::ostream& out,
                std::ostream& err, int exit_code, std::string_view detail) {
  err << "dxpu " << command << ": " << error.name << ": " << error.message;
  if (!detail.empty()) err << " (" << detail << ")";
  err << '\n';
  if (json) {
    // Messages can quote arguments that are not UTF-8: replace those bytes, never throw.
    out << nlohmann::ordered_json{{"error", error.name}, {"message", error.message}}.dump(
               -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
        << '\n';
  }
  return exit_code;
}

}  // namespace dxpu::cli
