// pool_model.cc - the names of the pool model's enumerations (as the store and the REST API
// write them), allocation and GPU names, and the rule for box and host names.
#include "manager/pool_model.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <system_error>

namespace dxpu::manager {
namespace {

constexpr std::array kPolicies = {Policy::kPack, Policy::kSpread, Policy::kPrefer};
constexpr std::array kAllocationStates = {AllocationState::kAttaching, AllocationState::kActive,
                                          AllocationState::kReleasing, AllocationState::kReleased,
                                          AllocationState::kFailed};
constexpr std::array kLeaseSteps = {LeaseStep::kReserved, LeaseStep::kAssigned,
                                    LeaseStep::kAttached, LeaseStep::kDetaching,
                                    LeaseStep::kScrubbing};

constexpr std::string_view kAllocationPrefix = "alloc-";
constexpr size_t kMaxNameLength = 63;

// The enumerator of `all` whose name (by name_of) is `name`.
template <typename Enum, size_t N, typename NameOf>
std::optional<Enum> EnumeratorNamed(const std::array<Enum, N>& all, std::string_view name,
                                    NameOf name_of) {
  for (const Enum e : all) {
    if (name_of(e) == name) return e;
  }
  return std::nullopt;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '.' || c == '_' ||
         c == '-';
}

}  // namespace

// Each name function returns "" for a value outside its enumeration (a cast gone wrong); no
// Named function accepts "".

std::string_view PolicyName(Policy p) {
  switch (p) {
    case Policy::kPack:
      return "pack";
    case Policy::kSpread:
      return "spread";
    case Policy::kPrefer:
      return "prefer";
  }
  return "";
}

std::optional<Policy> PolicyNamed(std::string_view name) {
  return EnumeratorNamed(kPolicies, name, PolicyName);
}

std::string_view AllocationStateName(AllocationState s) {
  switch (s) {
    case AllocationState::kAttaching:
      return "attaching";
    case AllocationState::kActive:
      return "active";
    case AllocationState::kReleasing:
      return "releasing";
    case AllocationState::kReleased:
      return "released";
    case AllocationState::kFailed:
      return "failed";
  }
  return "";
}

std::optional<AllocationState> AllocationStateNamed(std::string_view name) {
  return EnumeratorNamed(kAllocationStates, name, AllocationStateName);
}

std::string_view LeaseStepName(LeaseStep s) {
  switch (s) {
    case LeaseStep::kReserved:
      return "reserved";
    case LeaseStep::kAssigned:
      return "assigned";
    case LeaseStep::kAttached:
      return "attached";
    case LeaseStep::kDetaching:
      return "detaching";
    case LeaseStep::kScrubbing:
      return "scrubbing";
  }
  return "";
}

std::optional<LeaseStep> LeaseStepNamed(std::string_view name) {
  return EnumeratorNamed(kLeaseSteps, name, LeaseStepName);
}

std::string AllocationName(uint64_t id) { return fmt::format("{}{}", kAllocationPrefix, id); }

std::optional<uint64_t> AllocationIdNamed(std::string_view name) {
  if (!name.starts_with(kAllocationPrefix)) return std::nullopt;
  const std::string_view digits = name.substr(kAllocationPrefix.size());
  // Decimal digits only (no sign, no spaces), and no leading zero: one spelling per id.
  if (digits.empty() || digits.front() == '0' || !std::ranges::all_of(digits, IsDigit)) {
    return std::nullopt;
  }
  uint64_t id = 0;
  const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (err != std::errc() || end != digits.data() + digits.size()) return std::nullopt;  // overflow
  return id;
}

std::string GpuName(std::string_view box, uint16_t device) {
  return fmt::format("{}/{}", box, device);
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (name.front() == '.' || name.front() == '-') return false;
  return std::ranges::all_of(name, IsNameChar);
}

}  // namespace dxpu::manager
