/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dxpu_gpu.h - dxpu's PCI driver for the remote devices on its own bus: each bound device has
 * a character device /dev/dxpuN (include/dxpu/dxpu_ioctl.h), MMIO through the fabric, DMA
 * buffers registered as its windows, MSI-X counted and delivered to pollers.
 *
 * This layer is the top of the module's: it calls the fabric (dxpu_fabric.h) and the slots
 * (dxpu.h); the fabric calls it back only through the client operations it registers
 * (interrupts, DMA written, a session down). The fabric's peer table is the slots' (dxpu_slot.c).
 *
 * Locking (docs/kernel-module.md, "Lock order"): gpu->lock (a mutex) is held while a call issues
 * MMIO to the device, never while copying to or from user memory, and never taken under mmap_lock;
 * removal sets lost first (a batch stops at its next op) and then takes it once, so the op in
 * flight ends before removal goes on and none starts after. DMA buffers have their own mutex
 * (dxpu_dma.c), a leaf taken under mmap_lock by mmap and alone elsewhere; they check lost under it.
 * The list of bound devices changes under dxpu_gpus_lock (a spinlock), which the client operations
 * take inside a bridge's lock to find a device.
 */
#ifndef DXPU_DRIVER_DXPU_GPU_H
#define DXPU_DRIVER_DXPU_GPU_H

#include <linux/if_ether.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/wait.h>

#include <dxpu/dxpu_ioctl.h>
#include <dxpu/dxpu_kapi.h>

struct dxpu_bridge;
struct dxpu_slot;
struct dxpu_fabric;

struct dxpu_gpu {
	struct kref ref;	    /* the driver's binding and each open file */
	struct pci_dev *pdev;	    /* a reference, until the last file closes */
	struct dxpu_slot *slot;	    /* its configuration writes are flushed before its MMIO */
	struct dxpu_bridge *bridge; /* a reference until removal */
	u8 bridge_mac[ETH_ALEN];
	u16 remote_bdf;
	u16 slot_nr;
	struct list_head node; /* in the list of bound devices, under dxpu_gpus_lock */
	struct miscdevice misc;
	char name[16];
	struct mutex lock; /* MMIO against removal */
	bool lost;
	u16 msix_vectors;
	wait_queue_head_t wq;  /* events: interrupts, DMA writes, loss */
	atomic64_t interrupts; /* MSI-X interrupts */
	atomic64_t dma_writes; /* the device's writes into host memory */
	atomic64_t vector_count[DXPU_MAX_VECTORS];
};

/* The PCI driver, a client of f: registered at load, before any slot can be powered. */
int dxpu_gpu_driver_register(struct dxpu_fabric *f, u64 dma_space);
void dxpu_gpu_driver_unregister(void);

/* ---- the IOVA space and DMA buffers (dxpu_dma.c) ---- */

/* A range of the IOVA space: the character device's buffers and the DMA API's mappings. */
struct dxpu_iova {
	struct list_head node; /* in the space's list, in IOVA order */
	u64 start;	       /* page-aligned */
	u64 size;	       /* a multiple of the page size */
};

/* The IOVA space: dma_space bytes of the host's DMA range. */
int dxpu_dma_init(u64 dma_space);
/* The space's last IOVA: a DMA mask must reach it. */
u64 dxpu_iova_last(void);
/*
 * r at the lowest free IOVA with room for size bytes (rounded up to pages) whose last byte is
 * at most limit (a DMA mask), a guard page from its neighbours. -ENOSPC: no such room. Any
 * context but NMI (a spinlock, interrupts off).
 */
int dxpu_iova_alloc(struct dxpu_iova *r, u64 size, u64 limit);
void dxpu_iova_free(struct dxpu_iova *r);
/*
 * Allocates a buffer of size bytes at the lowest free IOVA and makes it a DMA window of gpu;
 * owner identifies who may free it (a file). -ENODEV once gpu is lost, -ENOSPC when no space
 * of that size is free.
 */
int dxpu_dma_alloc(struct dxpu_gpu *gpu, const void *owner, u64 size, u64 *iova);
/* The buffer at iova also a window of gpu (-ENODEV once gpu is lost). */
int dxpu_dma_share(struct dxpu_gpu *gpu, u64 iova);
/* The buffer at iova, if owner allocated it: its windows removed, freed once unmapped. */
int dxpu_dma_free(const void *owner, u64 iova);
/* Every buffer owner allocated, freed (the file closes). */
void dxpu_dma_free_owner(const void *owner);
/* Every window on gpu removed (it goes away). */
void dxpu_dma_forget_gpu(struct dxpu_gpu *gpu);
/* Maps the buffer whose IOVA is the vma's offset, if gpu has a window on it. Takes only the
 * buffers' mutex (the caller holds mmap_lock).
 */
int dxpu_dma_mmap(struct dxpu_gpu *gpu, struct vm_area_struct *vma);
void dxpu_dma_exit(void);

/* ---- the DMA API for the devices on dxpu's bus (dxpu_dma_ops.c) ---- */

/*
 * A device added to dxpu's bus (BUS_NOTIFY_ADD_DEVICE, before any driver can probe it) gets
 * dxpu's dma_map_ops, serving it in its slot's bridge; at its deletion (BUS_NOTIFY_DEL_DEVICE,
 * after its driver let go) what it left mapped goes, windows first. Process context.
 */
void dxpu_dma_ops_attach(struct pci_dev *pdev);
void dxpu_dma_ops_detach(struct pci_dev *pdev);

#endif /* DXPU_DRIVER_DXPU_GPU_H */
