// SPDX-License-Identifier: GPL-2.0
/*
 * dxpu_gpu.c - dxpu's PCI driver for the remote devices on its own bus (only they bind it:
 * driver_override). Probe enables memory decoding and bus mastering (both forwarded to the
 * device), programs every MSI-X vector to the host's MSI range with the vector number as
 * data, and creates /dev/dxpuN. The character device's user API is include/dxpu/dxpu_ioctl.h;
 * other kernel code reaches a device's BARs through dxpu_mmio_read/write.
 */
#include <linux/etherdevice.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "dxpu.h"
#include "dxpu_fabric.h"
#include "dxpu_gpu.h"
#include "dxpu_msi.h"

struct dxpu_file {
	struct dxpu_gpu *gpu;
	u64 seen_interrupts, seen_dma_writes;
	u64 seen_vector[DXPU_MAX_VECTORS];
};

static struct dxpu_fabric *dxpu_gpu_fabric;

/* The bound devices: the client operations look a device up here, inside a bridge's lock. */
static DEFINE_SPINLOCK(dxpu_gpus_lock);
static LIST_HEAD(dxpu_gpus);

static void dxpu_gpu_release(struct kref *ref)
{
	struct dxpu_gpu *gpu = container_of(ref, struct dxpu_gpu, ref);

	pci_dev_put(gpu->pdev);
	kfree(gpu);
}

static void dxpu_gpu_put(struct dxpu_gpu *gpu)
{
	kref_put(&gpu->ref, dxpu_gpu_release);
}

/* ---- what the fabric tells (client operations: a bridge's lock held, any context) ---- */

/* The device at requester behind b, or NULL. Caller holds dxpu_gpus_lock. */
static struct dxpu_gpu *dxpu_gpu_find(struct dxpu_bridge *b, u16 requester)
{
	struct dxpu_gpu *gpu;

	list_for_each_entry(gpu, &dxpu_gpus, node)
		if (gpu->bridge == b && gpu->remote_bdf == requester)
			return gpu;
	return NULL;
}

/* A device wrote to the MSI range: an interrupt, its vector the data (dxpu_gpu_setup_msix). */
static void dxpu_gpu_interrupt(void *ctx, struct dxpu_bridge *b, u16 requester, u32 data)
{
	struct dxpu_gpu *gpu;
	unsigned long flags;

	spin_lock_irqsave(&dxpu_gpus_lock, flags);
	gpu = dxpu_gpu_find(b, requester);
	if (gpu) {
		atomic64_inc(&gpu->vector_count[data % DXPU_MAX_VECTORS]);
		/* The vector before the total: pairs with dxpu_read's smp_rmb */
		smp_mb__after_atomic();
		atomic64_inc(&gpu->interrupts);
		wake_up_interruptible(&gpu->wq);
	}
	spin_unlock_irqrestore(&dxpu_gpus_lock, flags);
}

/* A device wrote host memory: its pollers wake. */
static void dxpu_gpu_dma_written(void *ctx, struct dxpu_bridge *b, u16 requester)
{
	struct dxpu_gpu *gpu;
	unsigned long flags;

	spin_lock_irqsave(&dxpu_gpus_lock, flags);
	gpu = dxpu_gpu_find(b, requester);
	if (gpu) {
		atomic64_inc(&gpu->dma_writes);
		wake_up_interruptible(&gpu->wq);
	}
	spin_unlock_irqrestore(&dxpu_gpus_lock, flags);
}

/* b's session went down: every device behind it is lost (the slots remove them later). */
static void dxpu_gpu_link_down(void *ctx, struct dxpu_bridge *b)
{
	struct dxpu_gpu *gpu;
	unsigned long flags;

	spin_lock_irqsave(&dxpu_gpus_lock, flags);
	list_for_each_entry(gpu, &dxpu_gpus, node) {
		if (gpu->bridge != b)
			continue;
		WRITE_ONCE(gpu->lost, true);
		wake_up_interruptible(&gpu->wq);
	}
	spin_unlock_irqrestore(&dxpu_gpus_lock, flags);
}

static const struct dxpu_fabric_client_ops dxpu_gpu_client_ops = {
	.interrupt = dxpu_gpu_interrupt,
	.dma_written = dxpu_gpu_dma_written,
	.link_down = dxpu_gpu_link_down,
};

static struct dxpu_fabric_client dxpu_gpu_client = { .ops = &dxpu_gpu_client_ops };

static void dxpu_gpu_list(struct dxpu_gpu *gpu, bool add)
{
	unsigned long flags;

	spin_lock_irqsave(&dxpu_gpus_lock, flags);
	if (add)
		list_add_tail(&gpu->node, &dxpu_gpus);
	else
		list_del(&gpu->node);
	spin_unlock_irqrestore(&dxpu_gpus_lock, flags);
}

/* ---- MMIO ---- */

/*
 * Takes gpu->lock for MMIO on the device, after its configuration writes (a request does not
 * pass them); -ENODEV, unlocked, once it is lost.
 */
static int dxpu_gpu_mmio_lock(struct dxpu_gpu *gpu)
{
	mutex_lock(&gpu->lock);
	if (READ_ONCE(gpu->lost)) {
		mutex_unlock(&gpu->lock);
		return -ENODEV;
	}
	dxpu_slot_cfg_flush(gpu->slot);
	return 0;
}

/* The bus address of [offset, offset + len) in a memory BAR, or 0 when it is not inside one. */
static u64 dxpu_bar_addr(struct pci_dev *pdev, int bar, u64 offset, u32 len)
{
	if (bar < 0 || bar >= PCI_STD_NUM_BARS || !(pci_resource_flags(pdev, bar) & IORESOURCE_MEM))
		return 0;
	if (!len || offset >= pci_resource_len(pdev, bar) ||
	    len > pci_resource_len(pdev, bar) - offset)
		return 0;
	return pci_bus_address(pdev, bar) + offset;
}

static u8 dxpu_mmio_status(u8 cpl_status)
{
	switch (cpl_status) {
	case DXPU_TLP_CPL_SC:
		return DXPU_MMIO_OK;
	case DXPU_TLP_CPL_CA:
		return DXPU_MMIO_CA;
	default:
		return DXPU_MMIO_UR;
	}
}

/**
 * dxpu_mmio_read - read from a dxpu device's BAR over the fabric
 * @pdev: a device bound to dxpu's driver
 * @bar: a memory BAR it implements
 * @offset: from the BAR's start
 * @buf: receives @len bytes (all-ones where the device did not answer)
 * @len: 1..4096, not crossing a 4 KiB boundary of the bus address
 *
 * Sleeps until the completion arrives or the request times out (1 s).
 * Return: 0; -EIO when the device answered UR or CA or did not answer; -EINVAL for a range
 * outside the BAR; -ENODEV once the device is lost; -ENOLINK or -EBUSY from the session.
 */
int dxpu_mmio_read(struct pci_dev *pdev, int bar, u64 offset, void *buf, u32 len)
{
	struct dxpu_gpu *gpu = pci_get_drvdata(pdev);
	u64 addr = dxpu_bar_addr(pdev, bar, offset, len);
	u8 status;
	int err;

	if (!gpu || !addr)
		return -EINVAL;
	err = dxpu_gpu_mmio_lock(gpu);
	if (err)
		return err;
	err = dxpu_bridge_mem_read(gpu->bridge, addr, buf, len, &status);
	mutex_unlock(&gpu->lock);
	if (!err && status != DXPU_TLP_CPL_SC)
		err = -EIO;
	return err;
}
EXPORT_SYMBOL_GPL(dxpu_mmio_read);

/**
 * dxpu_mmio_write - post a write to a dxpu device's BAR over the fabric
 * @pdev: a device bound to dxpu's driver
 * @bar: a memory BAR it implements
 * @offset: from the BAR's start
 * @buf: @len bytes
 * @len: as for dxpu_mmio_read
 *
 * Returns once the write is queued on the session; writes to a device arrive in order, and a
 * later read of it does not pass them.
 * Return: 0, or the errors of dxpu_mmio_read but -EIO.
 */
int dxpu_mmio_write(struct pci_dev *pdev, int bar, u64 offset, const void *buf, u32 len)
{
	struct dxpu_gpu *gpu = pci_get_drvdata(pdev);
	u64 addr = dxpu_bar_addr(pdev, bar, offset, len);
	int err;

	if (!gpu || !addr)
		return -EINVAL;
	err = dxpu_gpu_mmio_lock(gpu);
	if (err)
		return err;
	err = dxpu_bridge_mem_write(gpu->bridge, addr, buf, len);
	mutex_unlock(&gpu->lock);
	return err;
}
EXPORT_SYMBOL_GPL(dxpu_mmio_write);

/* One op of a batch. Caller holds gpu->lock (dxpu_gpu_mmio_lock). */
static int dxpu_mmio_op(struct dxpu_gpu *gpu, struct dxpu_mmio_op *op)
{
	u64 addr = dxpu_bar_addr(gpu->pdev, op->bar, op->offset, op->width);
	__le64 data;
	u8 status;
	int err;

	if (op->reserved || op->dir > DXPU_MMIO_WRITE || !addr ||
	    (op->width != 1 && op->width != 2 && op->width != 4 && op->width != 8) ||
	    (op->offset & (op->width - 1)))
		return -EINVAL;
	if (op->dir == DXPU_MMIO_WRITE) {
		data = cpu_to_le64(op->value);
		err = dxpu_bridge_mem_write(gpu->bridge, addr, &data, op->width);
		op->status = DXPU_MMIO_OK;
		return err;
	}
	data = 0;
	err = dxpu_bridge_mem_read(gpu->bridge, addr, &data, op->width, &status);
	if (err)
		return err;
	op->value = le64_to_cpu(data);
	op->status = dxpu_mmio_status(status);
	return op->status == DXPU_MMIO_OK ? 0 : -EIO;
}

/*
 * The ops in order until one fails; *done: how many completed. The device lost on the way
 * stops the batch at its next op (removal waits only for the op in flight). Takes gpu->lock.
 */
static int dxpu_gpu_run_batch(struct dxpu_gpu *gpu, struct dxpu_mmio_op *ops, u32 count, u32 *done)
{
	int err = dxpu_gpu_mmio_lock(gpu);
	u32 i;

	*done = 0;
	if (err)
		return err;
	for (i = 0; i < count; i++) {
		err = READ_ONCE(gpu->lost) ? -ENODEV : dxpu_mmio_op(gpu, &ops[i]);
		if (err)
			break;
	}
	mutex_unlock(&gpu->lock);
	*done = i;
	return err;
}

/* The batch is copied in and out with no lock held: a fault there may take mmap_lock. */
static long dxpu_ioctl_mmio(struct dxpu_gpu *gpu, struct dxpu_mmio_batch __user *ubatch)
{
	struct dxpu_mmio_batch batch;
	struct dxpu_mmio_op *ops;
	int err;

	if (copy_from_user(&batch, ubatch, sizeof(batch)))
		return -EFAULT;
	if (!batch.count || batch.count > DXPU_MMIO_MAX_BATCH)
		return -EINVAL;
	ops = memdup_user(u64_to_user_ptr(batch.ops), sizeof(*ops) * batch.count);
	if (IS_ERR(ops))
		return PTR_ERR(ops);
	err = dxpu_gpu_run_batch(gpu, ops, batch.count, &batch.done);
	if (copy_to_user(u64_to_user_ptr(batch.ops), ops, sizeof(*ops) * batch.count) ||
	    put_user(batch.done, &ubatch->done))
		err = -EFAULT;
	kfree(ops);
	return err;
}

/* ---- the character device ---- */

static long dxpu_ioctl_info(struct dxpu_gpu *gpu, void __user *arg)
{
	struct pci_dev *pdev = gpu->pdev;
	struct dxpu_device_info info = {};
	int i;

	info.vendor_id = pdev->vendor;
	info.device_id = pdev->device;
	info.subsystem_vendor_id = pdev->subsystem_vendor;
	info.subsystem_id = pdev->subsystem_device;
	info.class_code = pdev->class;
	info.flags = READ_ONCE(gpu->lost) ? DXPU_INFO_F_LOST : 0;
	for (i = 0; i < DXPU_BARS; i++) {
		if (!(pci_resource_flags(pdev, i) & IORESOURCE_MEM))
			continue;
		info.bar_addr[i] = pci_bus_address(pdev, i);
		info.bar_size[i] = pci_resource_len(pdev, i);
	}
	memcpy(info.bridge_mac, gpu->bridge_mac, ETH_ALEN);
	info.remote_bdf = gpu->remote_bdf;
	info.msix_vectors = gpu->msix_vectors;
	info.slot = gpu->slot_nr;
	strscpy(info.pci_name, pci_name(pdev), sizeof(info.pci_name));
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long dxpu_ioctl_dma(struct file *file, unsigned int cmd, void __user *arg)
{
	struct dxpu_file *df = file->private_data;
	struct dxpu_dma_alloc req;
	struct dxpu_dma_ref ref;
	int err;

	if (cmd == DXPU_IOC_DMA_ALLOC) {
		if (copy_from_user(&req, arg, sizeof(req)))
			return -EFAULT;
		err = dxpu_dma_alloc(df->gpu, df, req.size, &req.iova);
		if (err)
			return err;
		req.size = PAGE_ALIGN(req.size);
		req.mmap_offset = req.iova;
		if (copy_to_user(arg, &req, sizeof(req))) {
			dxpu_dma_free(df, req.iova);
			return -EFAULT;
		}
		return 0;
	}
	if (copy_from_user(&ref, arg, sizeof(ref)))
		return -EFAULT;
	if (cmd == DXPU_IOC_DMA_SHARE)
		return dxpu_dma_share(df->gpu, ref.iova);
	return dxpu_dma_free(df, ref.iova);
}

/*
 * No lock is held across a copy to or from user memory (a fault takes mmap_lock, under which
 * mmap runs): MMIO takes gpu->lock inside, the DMA calls their own mutex; INFO reads what
 * probe set (the pci_dev is referenced until the last file closes).
 */
static long dxpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct dxpu_file *df = file->private_data;
	struct dxpu_gpu *gpu = df->gpu;
	void __user *uarg = (void __user *)arg;

	if (READ_ONCE(gpu->lost) && cmd != DXPU_IOC_INFO && cmd != DXPU_IOC_DMA_FREE)
		return -ENODEV;
	switch (cmd) {
	case DXPU_IOC_INFO:
		return dxpu_ioctl_info(gpu, uarg);
	case DXPU_IOC_MMIO:
		return dxpu_ioctl_mmio(gpu, uarg);
	case DXPU_IOC_DMA_ALLOC:
	case DXPU_IOC_DMA_SHARE:
	case DXPU_IOC_DMA_FREE:
		return dxpu_ioctl_dma(file, cmd, uarg);
	default:
		return -ENOTTY;
	}
}

/* Whether something happened since this file last read. */
static bool dxpu_file_pending(struct dxpu_file *df)
{
	struct dxpu_gpu *gpu = df->gpu;

	return READ_ONCE(gpu->lost) || atomic64_read(&gpu->interrupts) != df->seen_interrupts ||
	       atomic64_read(&gpu->dma_writes) != df->seen_dma_writes;
}

static ssize_t dxpu_read(struct file *file, char __user *ubuf, size_t len, loff_t *ppos)
{
	struct dxpu_file *df = file->private_data;
	struct dxpu_gpu *gpu = df->gpu;
	struct dxpu_event ev = {};
	int i, err;

	if (len < sizeof(ev))
		return -EINVAL;
	if (!dxpu_file_pending(df)) {
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		err = wait_event_interruptible(gpu->wq, dxpu_file_pending(df));
		if (err)
			return err;
	}
	ev.interrupts = atomic64_read(&gpu->interrupts);
	smp_rmb(); /* pairs with dxpu_gpu_interrupt: the vectors behind that total are visible */
	ev.dma_writes = atomic64_read(&gpu->dma_writes);
	ev.lost = READ_ONCE(gpu->lost);
	for (i = 0; i < DXPU_MAX_VECTORS; i++) {
		u64 n = atomic64_read(&gpu->vector_count[i]);

		if (n != df->seen_vector[i])
			ev.vector_mask |= 1ull << i;
		df->seen_vector[i] = n;
	}
	df->seen_interrupts = ev.interrupts;
	df->seen_dma_writes = ev.dma_writes;
	return copy_to_user(ubuf, &ev, sizeof(ev)) ? -EFAULT : sizeof(ev);
}

static __poll_t dxpu_poll(struct file *file, poll_table *wait)
{
	struct dxpu_file *df = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &df->gpu->wq, wait);
	if (dxpu_file_pending(df))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(df->gpu->lost))
		mask |= EPOLLHUP | EPOLLERR;
	return mask;
}

/* Under mmap_lock: takes no lock of the device's (dxpu_dma_mmap checks lost under its own). */
static int dxpu_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct dxpu_file *df = file->private_data;

	return dxpu_dma_mmap(df->gpu, vma);
}

static int dxpu_open(struct inode *inode, struct file *file)
{
	struct dxpu_gpu *gpu = container_of(file->private_data, struct dxpu_gpu, misc);
	struct dxpu_file *df = kzalloc(sizeof(*df), GFP_KERNEL);
	int i;

	if (!df)
		return -ENOMEM;
	/* The driver's reference stands: removal deregisters the file before it lets go. */
	if (READ_ONCE(gpu->lost)) {
		kfree(df);
		return -ENODEV;
	}
	kref_get(&gpu->ref);
	df->gpu = gpu;
	df->seen_interrupts = atomic64_read(&gpu->interrupts);
	df->seen_dma_writes = atomic64_read(&gpu->dma_writes);
	for (i = 0; i < DXPU_MAX_VECTORS; i++)
		df->seen_vector[i] = atomic64_read(&gpu->vector_count[i]);
	file->private_data = df;
	return 0;
}

static int dxpu_release(struct inode *inode, struct file *file)
{
	struct dxpu_file *df = file->private_data;

	dxpu_dma_free_owner(df);
	dxpu_gpu_put(df->gpu);
	kfree(df);
	return 0;
}

static const struct file_operations dxpu_fops = {
	.owner = THIS_MODULE,
	.open = dxpu_open,
	.release = dxpu_release,
	.read = dxpu_read,
	.poll = dxpu_poll,
	.mmap = dxpu_mmap,
	.unlocked_ioctl = dxpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* ---- the PCI driver ---- */

/* Every MSI-X vector to the MSI range with data = its number, unmasked; MSI-X on. */
static int dxpu_gpu_setup_msix(struct dxpu_gpu *gpu)
{
	struct pci_dev *pdev = gpu->pdev;
	int cap = pci_find_capability(pdev, PCI_CAP_ID_MSIX);
	__le32 entry[4];
	u32 table;
	u16 flags, v;
	int err;

	if (!cap)
		return 0;
	pci_read_config_word(pdev, cap + PCI_MSIX_FLAGS, &flags);
	pci_read_config_dword(pdev, cap + PCI_MSIX_TABLE, &table);
	gpu->msix_vectors = (flags & PCI_MSIX_FLAGS_QSIZE) + 1;
	for (v = 0; v < gpu->msix_vectors; v++) {
		entry[0] = cpu_to_le32(DXPU_MSI_ADDRESS);
		entry[1] = 0;
		entry[2] = cpu_to_le32(v);
		entry[3] = 0; /* unmasked */
		err = dxpu_bridge_mem_write(gpu->bridge,
					    pci_bus_address(pdev, table & PCI_MSIX_TABLE_BIR) +
						    (table & PCI_MSIX_TABLE_OFFSET) +
						    PCI_MSIX_ENTRY_SIZE * v,
					    entry, sizeof(entry));
		if (err)
			return err;
	}
	flags = (flags & ~PCI_MSIX_FLAGS_MASKALL) | PCI_MSIX_FLAGS_ENABLE;
	pci_write_config_word(pdev, cap + PCI_MSIX_FLAGS, flags);
	return 0;
}

/* What the device's slot says of it: where it is behind which bridge. */
static void dxpu_gpu_set_slot(struct dxpu_gpu *gpu, struct dxpu_slot *slot, struct dxpu_bridge *b)
{
	gpu->slot = slot;
	gpu->bridge = b;
	ether_addr_copy(gpu->bridge_mac, slot->mac);
	gpu->remote_bdf = slot->remote_bdf;
	gpu->slot_nr = slot->nr;
}

/* /dev/dxpuN */
static int dxpu_gpu_register_file(struct dxpu_gpu *gpu)
{
	snprintf(gpu->name, sizeof(gpu->name), "dxpu%u", gpu->slot_nr);
	gpu->misc.minor = MISC_DYNAMIC_MINOR;
	gpu->misc.name = gpu->name;
	gpu->misc.fops = &dxpu_fops;
	gpu->misc.parent = &gpu->pdev->dev;
	gpu->misc.mode = 0600;
	return misc_register(&gpu->misc);
}

/*
 * The slot is read under cfg_lock (dxpu_slot_get): a device a rescan found while its slot
 * powers off is not bound. The gpu holds the pci_dev and the bridge.
 */
static int dxpu_gpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct dxpu_bridge *bridge;
	struct dxpu_slot *slot = dxpu_slot_get(pdev, &bridge);
	struct dxpu_gpu *gpu;
	int err;

	if (!slot)
		return -ENODEV;
	gpu = kzalloc(sizeof(*gpu), GFP_KERNEL);
	if (!gpu) {
		dxpu_bridge_put(bridge);
		return -ENOMEM;
	}
	kref_init(&gpu->ref);
	mutex_init(&gpu->lock);
	init_waitqueue_head(&gpu->wq);
	gpu->pdev = pci_dev_get(pdev);
	dxpu_gpu_set_slot(gpu, slot, bridge);
	err = pci_enable_device_mem(pdev);
	if (err)
		goto put;
	pci_set_master(pdev);
	dxpu_slot_cfg_flush(slot); /* memory decoding on before the MSI-X table is written */
	err = dxpu_gpu_setup_msix(gpu);
	if (err)
		goto disable;
	dxpu_gpu_list(gpu, true);
	err = dxpu_gpu_register_file(gpu);
	if (err)
		goto unlist;
	pci_set_drvdata(pdev, gpu);
	pci_info(pdev, "/dev/%s: %u MSI-X vectors\n", gpu->name, gpu->msix_vectors);
	return 0;
unlist:
	dxpu_gpu_list(gpu, false);
disable:
	pci_clear_master(pdev);
	pci_disable_device(pdev);
put:
	dxpu_bridge_put(gpu->bridge);
	dxpu_gpu_put(gpu);
	return err;
}

/*
 * The device is lost first: every call on it answers ENODEV from now, a batch in flight stops
 * at its next op, and the op in flight is waited for (bounded by its request's deadline). The
 * slot's power-off runs this outside pci_lock_rescan_remove() (dxpu_slot.c).
 */
static void dxpu_gpu_remove(struct pci_dev *pdev)
{
	struct dxpu_gpu *gpu = pci_get_drvdata(pdev);

	WRITE_ONCE(gpu->lost, true);
	wake_up_interruptible(&gpu->wq);
	misc_deregister(&gpu->misc);
	mutex_lock(&gpu->lock); /* the op in flight ends; none starts after */
	mutex_unlock(&gpu->lock);
	dxpu_gpu_list(gpu, false);
	dxpu_dma_forget_gpu(gpu);
	pci_clear_master(pdev);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	dxpu_bridge_put(gpu->bridge);
	gpu->bridge = NULL;
	dxpu_gpu_put(gpu);
}

static struct pci_driver dxpu_gpu_driver = {
	.name = KBUILD_MODNAME,
	.id_table = NULL, /* binds only what driver_override names it for */
	.probe = dxpu_gpu_probe,
	.remove = dxpu_gpu_remove,
};

int dxpu_gpu_driver_register(struct dxpu_fabric *f, u64 dma_space)
{
	int err;

	err = dxpu_dma_init(dma_space);
	if (err)
		return err;
	dxpu_gpu_fabric = f;
	dxpu_fabric_register_client(f, &dxpu_gpu_client);
	err = pci_register_driver(&dxpu_gpu_driver);
	if (err)
		dxpu_fabric_unregister_client(f, &dxpu_gpu_client);
	return err;
}

void dxpu_gpu_driver_unregister(void)
{
	pci_unregister_driver(&dxpu_gpu_driver);
	dxpu_fabric_unregister_client(dxpu_gpu_fabric, &dxpu_gpu_client);
	dxpu_dma_exit();
}
