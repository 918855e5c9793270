/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * dxgpu_ioctl.h - the user API of dxgpu.ko, the PCI driver of the model GPU (docs/dxgpu.md,
 * docs/dxgpu-driver.md). One character device per bound GPU, /dev/dxgpuN (N in bind order),
 * for a runtime (libdxgpu's kernel port):
 *
 *   DXGPU_IOC_INFO        what the device is: IDs, BARs, memory, vectors, PCI name, lost.
 *   DXGPU_IOC_REGS        up to DXGPU_REGS_MAX 32-bit BAR0 register reads and writes, run in
 *                         order by the CPU (readl/writel on the driver's mapping).
 *   DXGPU_IOC_BUF_ALLOC   pinned host memory the device may DMA: the driver allocates it,
 *                         maps it for the device (the DMA API) and gives its IOVA and where
 *                         to mmap() it on this file.
 *   DXGPU_IOC_BUF_IMPORT  a buffer allocated through another /dev/dxgpuN made DMA-able by this
 *                         device too, at an IOVA of this device's own.
 *   DXGPU_IOC_BUF_FREE    this file's buffer (allocated or imported) unmapped from its device;
 *                         the memory lives until the last file and mapping let go of it.
 *   read() / poll()       a struct dxgpu_event once the device interrupted (the semaphore
 *                         release with the interrupt flag, an INTERRUPT command, a channel
 *                         error) since the last read; POLLHUP once the device is gone.
 *
 * The driver owns INTR_ENABLE and INTR_STATUS (its interrupt handler acknowledges them):
 * DXGPU_IOC_REGS refuses writes to them (EPERM). Once the device is removed every call but
 * INFO (which sets DXGPU_INFO_F_LOST) answers ENODEV.
 */
#ifndef DXGPU_IOCTL_H
#define DXGPU_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define DXGPU_IOCTL_MAGIC 0xD8
#define DXGPU_BARS 6
#define DXGPU_REGS_MAX 256
#define DXGPU_BUF_MAX_SIZE (256ull << 20) /* 256 MiB a buffer, one range of IOVAs */

/* bar_flags */
#define DXGPU_BAR_MEM64 0x1u
#define DXGPU_BAR_PREFETCH 0x2u

/* info.flags */
#define DXGPU_INFO_F_LOST 0x1u

struct dxgpu_info {
	__u16 vendor_id;
	__u16 device_id;
	__u32 class_code;   /* base class, subclass, interface: 0x030200 */
	__u16 msix_vectors; /* the vectors the driver has */
	__u16 flags;	    /* DXGPU_INFO_F_* */
	__u32 reserved;
	__u64 memory_bytes;	    /* device memory (the MEM_SIZE register at probe) */
	__u64 bar_addr[DXGPU_BARS]; /* bus addresses (where peers reach them); 0: none */
	__u64 bar_size[DXGPU_BARS];
	__u32 bar_flags[DXGPU_BARS]; /* DXGPU_BAR_* */
	char pci_name[32];	     /* "10000:00:00.0" */
};

/* op.flags */
#define DXGPU_REG_WRITE 0x1u

struct dxgpu_reg_op {
	__u32 offset; /* in BAR0, 4-byte aligned */
	__u32 value;  /* written, or read (out) */
	__u32 flags;  /* DXGPU_REG_* */
	__u32 reserved;
};

struct dxgpu_regs {
	__u64 ops;   /* user pointer to count struct dxgpu_reg_op */
	__u32 count; /* 1..DXGPU_REGS_MAX */
	__u32 done;  /* out: ops run (all, unless an error stopped the batch) */
};

struct dxgpu_buf_alloc {
	__u64 size;	   /* in: bytes, 1..DXGPU_BUF_MAX_SIZE; out: rounded up to pages */
	__u64 handle;	   /* out: names the buffer (FREE, and IMPORT from another file) */
	__u64 iova;	   /* out: this device's DMA address of its first byte */
	__u64 mmap_offset; /* out: mmap() this file at this offset for the buffer's pages */
};

struct dxgpu_buf_import {
	__s32 fd; /* in: a /dev/dxgpuN file the buffer was allocated through */
	__u32 reserved;
	__u64 handle; /* in: its handle there; out: its handle on this file */
	__u64 iova;   /* out: this device's DMA address of it */
};

/* read(): at least sizeof(struct dxgpu_event) bytes. Counts since the file was opened. */
struct dxgpu_event {
	__u64 interrupts; /* handled interrupts of the device */
	__u64 vectors;	  /* bit v: vector v (< 64) interrupted since the last read */
	__u32 flags;	  /* DXGPU_INFO_F_LOST */
	__u32 reserved;
};

#define DXGPU_IOC_INFO _IOR(DXGPU_IOCTL_MAGIC, 0x00, struct dxgpu_info)
#define DXGPU_IOC_REGS _IOWR(DXGPU_IOCTL_MAGIC, 0x01, struct dxgpu_regs)
#define DXGPU_IOC_BUF_ALLOC _IOWR(DXGPU_IOCTL_MAGIC, 0x02, struct dxgpu_buf_alloc)
#define DXGPU_IOC_BUF_IMPORT _IOWR(DXGPU_IOCTL_MAGIC, 0x03, struct dxgpu_buf_import)
#define DXGPU_IOC_BUF_FREE _IOW(DXGPU_IOCTL_MAGIC, 0x04, __u64)

#endif /* DXGPU_IOCTL_H */
