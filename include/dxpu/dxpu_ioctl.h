/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * dxpu_ioctl.h - the user API of dxpu.ko's character devices (docs/kernel-module.md).
 *
 * Each remote device attached through a dxpu hot-plug slot and bound to dxpu's PCI driver has
 * a character device /dev/dxpuN (N: the slot's number). Opening it gives a process:
 *
 *   DXPU_IOC_INFO       what the device is and where it lives (IDs, BARs, bridge, remote BDF).
 *   DXPU_IOC_MMIO       a batch of register reads and writes to its BARs, carried over the
 *                       fabric in order (a read waits for its completion; writes are posted).
 *   DXPU_IOC_DMA_ALLOC  host memory the module allocates, zeroed, at a bus address (IOVA) of
 *                       its choosing, registered as a DMA window of the device; mmap() it at
 *                       the returned offset to use it. The device's DMA is served only inside
 *                       its windows; anything else is refused (a read: UR) and counted.
 *   DXPU_IOC_DMA_SHARE  an existing buffer (by IOVA) also a window of this file's device, at
 *                       the same IOVA (a runtime's buffers are every device's).
 *   DXPU_IOC_DMA_FREE   the buffer's windows removed and the buffer freed once unmapped.
 *   read()/poll()       events: MSI-X interrupts the device raised (its MSI-X table is
 *                       programmed by the module, vector v with data v) and the device's
 *                       writes into host memory. read() returns a struct dxpu_event when
 *                       something happened since the last read (blocking unless O_NONBLOCK);
 *                       poll() reports POLLIN then, and POLLHUP once the device is lost.
 *
 * When the device is lost (its bridge's session went down, or the slot was powered off under
 * an open file) every call answers ENODEV, and poll() reports POLLHUP; close the file.
 * All fields are little-endian host order; every struct is 8-byte aligned with explicit
 * padding, the same size for 32- and 64-bit userspace; reserved fields must be zero.
 */
#ifndef DXPU_UAPI_DXPU_IOCTL_H
#define DXPU_UAPI_DXPU_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define DXPU_IOCTL_MAGIC 0xD7

#define DXPU_BARS 6
#define DXPU_MAX_VECTORS 64 /* MSI-X vectors counted per device */

/* DXPU_IOC_INFO */
#define DXPU_INFO_F_LOST 0x1u /* the device is lost: every other call answers ENODEV */

struct dxpu_device_info {
	__u16 vendor_id;
	__u16 device_id;
	__u16 subsystem_vendor_id;
	__u16 subsystem_id;
	__u32 class_code;	   /* base class, subclass, prog-if: 0x030200 */
	__u32 flags;		   /* DXPU_INFO_F_* */
	__u64 bar_addr[DXPU_BARS]; /* bus address (0 for none, and for a 64-bit BAR's upper half) */
	__u64 bar_size[DXPU_BARS];
	__u8 bridge_mac[6];
	__u16 remote_bdf; /* the BDF the bridge presents the device to this host at */
	__u16 msix_vectors;
	__u16 slot; /* N in /dev/dxpuN and /sys/bus/pci/slots/dxpuN */
	__u32 reserved;
	char pci_name[16]; /* "10000:00:00.0", NUL-terminated */
};

/* DXPU_IOC_MMIO: ops run in order; the first that fails stops the batch. */
#define DXPU_MMIO_MAX_BATCH 256

#define DXPU_MMIO_READ 0
#define DXPU_MMIO_WRITE 1

/* status of one op (out) */
#define DXPU_MMIO_OK 0
#define DXPU_MMIO_UR 1 /* the device (or the bridge) answered Unsupported Request */
#define DXPU_MMIO_CA 2 /* Completer Abort */
/*
 * Reserved: a read with no completion within the request timeout (1 s) ends all-ones with
 * DXPU_MMIO_UR today, as the host's transaction layer ends it.
 */
#define DXPU_MMIO_TIMEOUT 3

struct dxpu_mmio_op {
	__u8 bar;    /* 0..5, a memory BAR the device implements */
	__u8 dir;    /* DXPU_MMIO_READ or DXPU_MMIO_WRITE */
	__u8 width;  /* 1, 2, 4 or 8 bytes, naturally aligned, inside the BAR */
	__u8 status; /* out: DXPU_MMIO_* */
	__u32 reserved;
	__u64 offset; /* from the BAR's start */
	__u64 value;  /* in for a write, out for a read (low width bytes) */
};

struct dxpu_mmio_batch {
	__u64 ops;   /* user pointer to count struct dxpu_mmio_op */
	__u32 count; /* 1..DXPU_MMIO_MAX_BATCH */
	__u32 done;  /* out: ops that completed with DXPU_MMIO_OK */
};

/* DXPU_IOC_DMA_ALLOC */
#define DXPU_DMA_MAX_SIZE 0x40000000ull /* one buffer: at most 1 GiB */

struct dxpu_dma_alloc {
	__u64 size;	   /* in: bytes, 1..DXPU_DMA_MAX_SIZE, rounded up to pages */
	__u64 iova;	   /* out: the bus address the device uses for its first byte */
	__u64 mmap_offset; /* out: the offset to mmap() this file at (size bytes) */
};

/* DXPU_IOC_DMA_SHARE and DXPU_IOC_DMA_FREE take the buffer's IOVA. */
struct dxpu_dma_ref {
	__u64 iova;
};

/* read(): at least sizeof(struct dxpu_event) bytes. Counts since the file was opened. */
struct dxpu_event {
	__u64 interrupts;  /* MSI-X interrupts, every vector */
	__u64 dma_writes;  /* the device's writes into host memory */
	__u64 vector_mask; /* bit v: vector v fired since the last read (v < 64) */
	__u64 lost;	   /* 1 once the device is lost */
};

#define DXPU_IOC_INFO _IOR(DXPU_IOCTL_MAGIC, 0x00, struct dxpu_device_info)
#define DXPU_IOC_MMIO _IOWR(DXPU_IOCTL_MAGIC, 0x01, struct dxpu_mmio_batch)
#define DXPU_IOC_DMA_ALLOC _IOWR(DXPU_IOCTL_MAGIC, 0x02, struct dxpu_dma_alloc)
#define DXPU_IOC_DMA_SHARE _IOW(DXPU_IOCTL_MAGIC, 0x03, struct dxpu_dma_ref)
#define DXPU_IOC_DMA_FREE _IOW(DXPU_IOCTL_MAGIC, 0x04, struct dxpu_dma_ref)

#endif /* DXPU_UAPI_DXPU_IOCTL_H */
