// error_report.h - how every command reports a failure: a line on stderr for people and,
// with --json, an {"error", "message"} object on stdout for scripts.
#ifndef DXPU_TOOLS_DXPU_ERROR_REPORT_H_
#define DXPU_TOOLS_DXPU_ERROR_REPORT_H_

#include <ostream>
#include <string_view>

#include "result.h"

namespace dxpu::cli {

// Writes "dxpu <command>: <name>: <message>[ (<detail>)]" to err and, if json, the object
// {"error": name, "message": message} to out. Returns exit_code.
int ReportError(std::string_view command, const Error& error, bool json, std::ostream& out,
                std::ostream& err, int exit_code, std::string_view detail = {});

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_ERROR_REPORT_H_
