// demo_pool.h - the demo's multi-host scene (docs/demo.md, docs/manager.md): two GPU boxes
// (dxpu-bridge daemons in threads, 4 GPUs each, over UDP), the pool manager (its SQLite store,
// its REST API on loopback) and three host agents attaching through the userspace host proxy,
// all the real code in one process. Driven through the REST API as `dxpu pool` would: h1
// takes 3 GPUs spread over both boxes, h2 takes 4, h3 is refused (1 left), h1 gives its 3
// back (reset and scrubbed by their bridges), h3 takes them; the pool is audited against the
// bridges and the agents after each step.
#ifndef DXPU_TOOLS_DXPU_DEMO_POOL_H_
#define DXPU_TOOLS_DXPU_DEMO_POOL_H_

#include <filesystem>
#include <string>
#include <vector>

namespace dxpu::cli {

struct PoolSceneStep {
  std::string what;     // "h1 takes 3 GPUs (spread)"
  std::string outcome;  // "active in 212 ms: box-a/0 box-b/0 box-a/1"
  bool ok = false;      // it did what the scene expects (a refusal included) and the audit held
};

struct PoolScene {
  std::vector<PoolSceneStep> steps;
  std::string error;  // why the scene could not run at all
  bool ok() const;
};

PoolScene RunPoolScene(const std::filesystem::path& dir);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_POOL_H_
