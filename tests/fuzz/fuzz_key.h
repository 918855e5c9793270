// fuzz_key.h - the firmware signing key of the fuzz targets and their corpus generator: one
// Ed25519 pair from a fixed seed, so the seed corpus's images and FW_BEGIN headers carry valid
// signatures in every run, and the targets can sign what the fuzzer changed with the same key.
#ifndef DXPU_TESTS_FUZZ_FUZZ_KEY_H_
#define DXPU_TESTS_FUZZ_FUZZ_KEY_H_

#include "bridge-fw/firmware/signing.h"

namespace dxpu::fuzz {

const firmware::KeyPair& FuzzKey();

}  // namespace dxpu::fuzz

#endif  // DXPU_TESTS_FUZZ_FUZZ_KEY_H_
