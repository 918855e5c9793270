// power_on_image.h - a function's configuration space as it reads after power-on (and after
// a Function Level Reset): the type 0 header, the BARs, and every capability of the profile
// chained in the profile's order, each register with its access type.
#ifndef DXPU_LIB_GPU_POWER_ON_IMAGE_H_
#define DXPU_LIB_GPU_POWER_ON_IMAGE_H_

#include "gpu/device_profile.h"
#include "gpu/register_file.h"

namespace dxpu::gpu {

// `profile` must pass ValidateProfile.
RegisterFile BuildPowerOnImage(const DeviceProfile& profile);

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_POWER_ON_IMAGE_H_
