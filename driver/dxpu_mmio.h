/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_mmio.h - transparent MMIO: the CPU's loads and stores to every kernel mapping of a BAR
 * of a device on dxpu's bus reach that device over the fabric (docs/kernel-module.md,
 * "Transparent MMIO").
 */
#ifndef DXPU_DRIVER_DXPU_MMIO_H
#define DXPU_DRIVER_DXPU_MMIO_H

#include <linux/types.h>

struct dxpu_domain;

/*
 * From now on every ioremap of a range inside d's memory windows is intercepted. Process
 * context, before any device can appear on d's bus. Fails (with the reason logged) when the
 * kernel offers no way to do it correctly: no kmmio, no ftrace hook, or kmmio in use by
 * another (the mmiotrace tracer).
 */
int dxpu_mmio_init(struct dxpu_domain *d);
/* After every device left d's bus: no mapping intercepted any more, the hooks gone. */
void dxpu_mmio_exit(void);
/* "reads N writes N read_errors N write_errors N refused N" into buf (PAGE_SIZE). */
ssize_t dxpu_mmio_show_counters(char *buf);

#endif /* DXPU_DRIVER_DXPU_MMIO_H */
