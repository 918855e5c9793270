// pool_bridge_config.h - the configuration of a dxpu-bridge for the manager's process tests:
// UDP fabric and management on loopback, two model GPUs (01:00.0, 02:00.0, 16 MiB each), and
// the management keys it trusts (the manager's, an operator's: management_keys.h).
#ifndef DXPU_TESTS_MANAGER_POOL_BRIDGE_CONFIG_H_
#define DXPU_TESTS_MANAGER_POOL_BRIDGE_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dxpu::test {

inline std::string PoolBridgeConfig(uint64_t node, uint16_t udp, uint16_t mgmt,
                                    const std::vector<std::string>& trusted_keys) {
  using nlohmann::json;
  return json{
      {"node_id", fmt::format("{:#x}", node)},
      {"links", json::array({{{"type", "udp"}, {"listen", fmt::format("127.0.0.1:{}", udp)}}})},
      {"management",
       {{"listen", fmt::format("127.0.0.1:{}", mgmt)}, {"trusted_keys", trusted_keys}}},
      {"devices",
       json::array({{{"profile", "dxgpu"}, {"box_bdf", "01:00.0"}, {"memory", "16MiB"}},
                    {{"profile", "dxgpu"}, {"box_bdf", "02:00.0"}, {"memory", "16MiB"}}})},
      {"limits", {{"link_down", "1s"}}},
      {"log", {{"level", "info"}, {"format", "text"}}}}
      .dump(2);
}

}  // namespace dxpu::test

#endif  // DXPU_TESTS_MANAGER_POOL_BRIDGE_CONFIG_H_
