// attack_scene.h - the scene every attack starts from: the bridge (bridge_under_attack.h) with
// GPU 0 lent to the victim, the victim connected through a relay that captures its frames
// (udp_relay.h) and running its checked workload (victim_host.h). After the attack the test
// checks the victim as the issue asks: its results all correct, its session never dropped (at
// either end), nothing the attacker sent acted on.
#ifndef DXPU_TESTS_ATTACK_ATTACK_SCENE_H_
#define DXPU_TESTS_ATTACK_ATTACK_SCENE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "bridge_under_attack.h"
#include "udp_relay.h"
#include "victim_host.h"

namespace dxpu::test::attack {

class AttackScene : public ::testing::Test {
 protected:
  explicit AttackScene(BridgeUnderAttackOptions options = {}) : bridge_(std::move(options)) {}
  void SetUp() override;
  void TearDown() override;

  // The victim's frames to the bridge that are sealed (all but its HELLO), as captured.
  std::vector<Frame> VictimSealedFrames() const;
  // ... and the bridge's to the victim.
  std::vector<Frame> BridgeSealedFrames() const;

  // The victim after the attack: more rounds complete, every result right, its session up at
  // its end, the bridge with exactly the sessions opened, closed and GPUs quarantined the test
  // itself caused (the victim's one session opened), GPU 0's owner connected.
  void ExpectVictimUnharmed(double sessions_opened = 1, double sessions_closed = 0,
                            double quarantined = 0);

  BridgeUnderAttack bridge_;
  std::unique_ptr<UdpRelay> relay_;
  std::unique_ptr<VictimHost> victim_;
};

}  // namespace dxpu::test::attack

#endif  // DXPU_TESTS_ATTACK_ATTACK_SCENE_H_
