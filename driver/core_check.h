/* SPDX-License-Identifier: GPL-2.0 */
/* core_check.h - the parts of dxpu_core_check.ko's self-test. */
#ifndef DXPU_CORE_CHECK_H
#define DXPU_CORE_CHECK_H

/* lib/core's handshake and sealed frames on the kernel's crypto: 0 or -EINVAL (logged). */
int dxpu_core_check_noise(void);

#endif /* DXPU_CORE_CHECK_H */
