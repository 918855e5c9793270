// demo_report.h - the demo's results as text for people and as JSON for scripts.
#ifndef DXPU_TOOLS_DXPU_DEMO_REPORT_H_
#define DXPU_TOOLS_DXPU_DEMO_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "demo.h"

namespace dxpu::cli {

// The first line of the text, and the "stage" of the JSON: what this demo is and is not.
extern const char* const kDemoBanner;

std::string DemoText(const DemoResult& r);
nlohmann::ordered_json DemoJson(const DemoResult& r);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_REPORT_H_
