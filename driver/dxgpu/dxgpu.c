// SPDX-License-Identifier: GPL-2.0
/*
 * dxgpu.c - dxgpu.ko, the PCI driver of the model GPU (docs/dxgpu.md; docs/dxgpu-driver.md).
 *
 * An ordinary PCI driver: it knows nothing of DxPU (no dxpu header), and binds a model GPU
 * wherever it sits, on a local bus or on dxpu.ko's, through the kernel's own interfaces only:
 * pcim_iomap and readl/writel for BAR0, the DMA API for host memory the GPU reads and writes,
 * pci_alloc_irq_vectors and request_irq for its MSI-X interrupts. Each bound GPU gets a
 * character device /dev/dxgpuN whose user API (include/dxgpu/dxgpu_ioctl.h) is what a runtime
 * needs: register access, pinned DMA buffers (mmap()ed, shared between GPUs), and waiting for
 * the GPU's interrupts.
 *
 * Lifetimes: a struct dxgpu_dev is held by the binding and by each open file (kref), so a file
 * outlives its device's removal (every call then answers ENODEV, poll POLLHUP). A buffer's
 * memory (struct dxgpu_mem) is held by each file that has it (allocated or imported) and each
 * mapping of it; each file's reference also holds its device's DMA mapping of it, which removal
 * unmaps at once (the device may not reach host memory after its driver let go).
 *
 * Locking: dev->lock (a mutex) orders register batches against removal (which sets lost, then
 * takes it once); it is never held while copying to or from user memory. A file's buffers are
 * guarded by the file's mutex, taken under mmap_lock (mmap) and never held across user copies;
 * the device's list of files by dev->files_lock (a mutex, inside a file's mutex never: removal
 * takes it alone, then each file's). The interrupt handler takes no lock.
 */
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include <dxgpu/dxgpu_ioctl.h>

/* The register map (docs/dxgpu.md). */
#define DXGPU_REG_ID 0x0000
#define DXGPU_ID_VALUE 0x44584750u /* "DXGP" */
#define DXGPU_REG_MEM_SIZE_LO 0x0008
#define DXGPU_REG_MEM_SIZE_HI 0x000c
#define DXGPU_REG_INTR_STATUS 0x0040
#define DXGPU_REG_INTR_ENABLE 0x0044
#define DXGPU_INTR_ALL 0x3 /* bit 0 semaphore release or INTERRUPT, bit 1 channel error */

#define DXGPU_MAX_VECTORS 64
/* A buffer's mmap() offset: its handle times this (no less than the largest buffer). */
#define DXGPU_MMAP_SHIFT 28
static_assert(DXGPU_BUF_MAX_SIZE <= 1ull << DXGPU_MMAP_SHIFT);
/* A buffer's memory comes in physically contiguous chunks of at most MAX, at least MIN. */
#define DXGPU_CHUNK_MAX SZ_4M
#define DXGPU_CHUNK_MIN SZ_64K

static DEFINE_IDA(dxgpu_ida);

struct dxgpu_dev;

/* One vector's handler context. */
struct dxgpu_vector {
	struct dxgpu_dev *dev;
	unsigned int nr;
};

struct dxgpu_dev {
	struct kref ref;
	struct pci_dev *pdev; /* a reference, until the last file closes */
	void __iomem *regs;   /* BAR0, while bound */
	resource_size_t regs_len;
	struct dxgpu_info info; /* filled at probe; flags change */
	int id;
	char name[16];
	struct miscdevice misc;
	struct mutex lock; /* register batches against removal */
	bool lost;
	struct mutex files_lock; /* files */
	struct list_head files;
	wait_queue_head_t wq;
	atomic64_t interrupts;
	atomic64_t vector_count[DXGPU_MAX_VECTORS];
	struct dxgpu_vector vectors[DXGPU_MAX_VECTORS];
};

struct dxgpu_chunk {
	void *cpu;
	size_t size; /* whole pages */
};

/*
 * Pinned host memory, zeroed: chunks as large as the page allocator gives (up to
 * DXGPU_CHUNK_MAX), each physically contiguous. The device sees one range of IOVAs: its DMA
 * mapping must merge the chunks (an IOMMU's does; dxgpu_buf_map refuses a mapping that did not).
 */
struct dxgpu_mem {
	struct kref ref; /* each file's buffer, each mapping */
	size_t size;	 /* whole pages */
	unsigned int nr_chunks;
	struct dxgpu_chunk *chunks;
};

/* A file's buffer: the memory, and its device's DMA mapping of it (iova; until unmapped). */
struct dxgpu_buf {
	struct dxgpu_mem *mem;
	struct sg_table sgt; /* the chunks as the device's DMA mapping has them, while mapped */
	dma_addr_t iova;
	bool mapped;
};

struct dxgpu_file {
	struct dxgpu_dev *dev;
	struct list_head node; /* in dev->files */
	struct mutex lock;     /* bufs */
	struct xarray bufs;    /* handle -> struct dxgpu_buf */
	u64 seen_interrupts;
	u64 seen_vector[DXGPU_MAX_VECTORS];
};

static const struct file_operations dxgpu_fops;

static void dxgpu_dev_release(struct kref *ref)
{
	struct dxgpu_dev *dev = container_of(ref, struct dxgpu_dev, ref);

	ida_free(&dxgpu_ida, dev->id);
	pci_dev_put(dev->pdev);
	kfree(dev);
}

static void dxgpu_mem_free(struct dxgpu_mem *mem)
{
	unsigned int i;

	for (i = 0; i < mem->nr_chunks; i++)
		free_pages_exact(mem->chunks[i].cpu, mem->chunks[i].size);
	kvfree(mem->chunks);
	kfree(mem);
}

static void dxgpu_mem_release(struct kref *ref)
{
	dxgpu_mem_free(container_of(ref, struct dxgpu_mem, ref));
}

/*
 * size bytes (whole pages), zeroed, in chunks: DXGPU_CHUNK_MAX while the allocator has them
 * (without retrying hard), then halves down to DXGPU_CHUNK_MIN. NULL when even those run out.
 */
static struct dxgpu_mem *dxgpu_mem_alloc(size_t size)
{
	struct dxgpu_mem *mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	size_t chunk = DXGPU_CHUNK_MAX, done = 0;

	if (!mem)
		return NULL;
	kref_init(&mem->ref);
	mem->size = size;
	/* every chunk but the last is at least DXGPU_CHUNK_MIN */
	mem->chunks =
		kvcalloc(DIV_ROUND_UP(size, DXGPU_CHUNK_MIN), sizeof(*mem->chunks), GFP_KERNEL);
	while (mem->chunks && done < size) {
		size_t want = min(chunk, size - done);
		void *cpu = alloc_pages_exact(want, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
							    (want > PAGE_SIZE ? __GFP_NORETRY : 0));

		if (cpu) {
			mem->chunks[mem->nr_chunks++] = (struct dxgpu_chunk){ cpu, want };
			done += want;
		} else if (chunk > DXGPU_CHUNK_MIN) {
			chunk /= 2;
		} else {
			break;
		}
	}
	if (done == size)
		return mem;
	dxgpu_mem_free(mem);
	return NULL;
}

static void dxgpu_mem_put(struct dxgpu_mem *mem)
{
	kref_put(&mem->ref, dxgpu_mem_release);
}

/* ---- interrupts ---- */

/* Acknowledges what the GPU raised (INTR_STATUS is write-1-to-clear) and wakes the waiters. */
static irqreturn_t dxgpu_irq(int irq, void *data)
{
	struct dxgpu_vector *v = data;
	struct dxgpu_dev *dev = v->dev;
	u32 status = readl(dev->regs + DXGPU_REG_INTR_STATUS);

	/*
	 * What it says is acknowledged; all of it when the read failed (all ones: no answer in
	 * time). The GPU signals rising edges only: a status left set would silence it for good,
	 * and clearing one set since costs at most a spurious count (its own message came).
	 */
	if (status == ~0u)
		status = DXGPU_INTR_ALL;
	if (status & DXGPU_INTR_ALL)
		writel(status & DXGPU_INTR_ALL, dev->regs + DXGPU_REG_INTR_STATUS);
	atomic64_inc(&dev->vector_count[v->nr]);
	smp_mb__before_atomic(); /* the vector before the total: pairs with dxgpu_read */
	atomic64_inc(&dev->interrupts);
	wake_up_interruptible(&dev->wq);
	return IRQ_HANDLED;
}

/* Before the dxgpu_dev can go: a handler may run until its irq is freed. */
static void dxgpu_free_irqs(struct dxgpu_dev *dev)
{
	int i;

	for (i = 0; i < dev->info.msix_vectors; i++)
		devm_free_irq(&dev->pdev->dev, pci_irq_vector(dev->pdev, i), &dev->vectors[i]);
	dev->info.msix_vectors = 0;
}

static int dxgpu_setup_irqs(struct dxgpu_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int nvec, i, err;

	nvec = pci_msix_vec_count(pdev);
	if (nvec <= 0)
		return nvec ? nvec : -ENODEV;
	nvec = pci_alloc_irq_vectors(pdev, 1, min(nvec, DXGPU_MAX_VECTORS), PCI_IRQ_MSIX);
	if (nvec < 0)
		return nvec;
	for (i = 0; i < nvec; i++) {
		dev->vectors[i] = (struct dxgpu_vector){ .dev = dev, .nr = i };
		err = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, i), dxgpu_irq, 0, dev->name,
				       &dev->vectors[i]);
		if (err) {
			dxgpu_free_irqs(dev);
			return err;
		}
		dev->info.msix_vectors = i + 1;
	}
	writel(DXGPU_INTR_ALL, dev->regs + DXGPU_REG_INTR_STATUS); /* nothing stale */
	writel(DXGPU_INTR_ALL, dev->regs + DXGPU_REG_INTR_ENABLE);
	return 0;
}

/* ---- buffers ---- */

/*
 * mem's chunks mapped for the device as one DMA segment: its IOVA in buf. -ENOSPC when the DMA
 * layer refused, or gave more than one segment (no IOMMU to merge the chunks).
 */
static int dxgpu_buf_map(struct device *d, struct dxgpu_buf *buf, struct dxgpu_mem *mem)
{
	struct scatterlist *s;
	unsigned int i;
	int err;

	err = sg_alloc_table(&buf->sgt, mem->nr_chunks, GFP_KERNEL);
	if (err)
		return err;
	for_each_sgtable_sg(&buf->sgt, s, i)
		sg_set_buf(s, mem->chunks[i].cpu, mem->chunks[i].size);
	err = dma_map_sgtable(d, &buf->sgt, DMA_BIDIRECTIONAL, 0);
	if (!err && buf->sgt.nents != 1) {
		dev_warn_ratelimited(d,
				     "dxgpu: a %zu-byte buffer is %u DMA segments: not one range\n",
				     mem->size, buf->sgt.nents);
		dma_unmap_sgtable(d, &buf->sgt, DMA_BIDIRECTIONAL, 0);
		err = -ENOSPC;
	}
	if (err) {
		sg_free_table(&buf->sgt);
		return -ENOSPC;
	}
	buf->iova = sg_dma_address(buf->sgt.sgl);
	buf->mapped = true;
	return 0;
}

static void dxgpu_buf_unmap(struct device *d, struct dxgpu_buf *buf)
{
	if (!buf->mapped)
		return;
	dma_unmap_sgtable(d, &buf->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(&buf->sgt);
	buf->mapped = false;
}

/* Maps mem for dev's device and gives the file a handle for it. Takes a reference on mem. */
static int dxgpu_buf_add(struct dxgpu_file *f, struct dxgpu_mem *mem, u64 *handle, u64 *iova)
{
	struct device *d = &f->dev->pdev->dev;
	struct dxgpu_buf *buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	u32 id;
	int err;

	if (!buf)
		return -ENOMEM;
	err = dxgpu_buf_map(d, buf, mem);
	if (err) {
		kfree(buf);
		return err;
	}
	kref_get(&mem->ref);
	buf->mem = mem;
	mutex_lock(&f->lock);
	err = READ_ONCE(f->dev->lost)
		      ? -ENODEV
		      : xa_alloc(&f->bufs, &id, buf, XA_LIMIT(1, 1u << 20), GFP_KERNEL);
	mutex_unlock(&f->lock);
	if (err) {
		dxgpu_buf_unmap(d, buf);
		dxgpu_mem_put(mem);
		kfree(buf);
		return err;
	}
	*handle = id;
	*iova = buf->iova;
	return 0;
}

/* The buffer's mapping undone (if its device still has it) and its memory let go. */
static void dxgpu_buf_destroy(struct dxgpu_dev *dev, struct dxgpu_buf *buf)
{
	dxgpu_buf_unmap(&dev->pdev->dev, buf);
	dxgpu_mem_put(buf->mem);
	kfree(buf);
}

static long dxgpu_buf_alloc(struct dxgpu_file *f, void __user *arg)
{
	struct dxgpu_buf_alloc a;
	struct dxgpu_mem *mem;
	int err;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (!a.size || a.size > DXGPU_BUF_MAX_SIZE)
		return -EINVAL;
	mem = dxgpu_mem_alloc(PAGE_ALIGN(a.size));
	if (!mem)
		return -ENOMEM;
	err = dxgpu_buf_add(f, mem, &a.handle, &a.iova);
	dxgpu_mem_put(mem); /* the file's buffer holds it now, if it was added */
	if (err)
		return err;
	a.mmap_offset = a.handle << DXGPU_MMAP_SHIFT;
	a.size = PAGE_ALIGN(a.size);
	if (copy_to_user(arg, &a, sizeof(a))) {
		/* The caller cannot know the handle: the buffer goes again. */
		mutex_lock(&f->lock);
		dxgpu_buf_destroy(f->dev, xa_erase(&f->bufs, a.handle));
		mutex_unlock(&f->lock);
		return -EFAULT;
	}
	return 0;
}

/* The memory behind handle in another dxgpu file, with a reference; NULL if none. */
static struct dxgpu_mem *dxgpu_mem_of(struct file *file, u64 handle)
{
	struct dxgpu_file *other;
	struct dxgpu_buf *buf;
	struct dxgpu_mem *mem = NULL;

	if (file->f_op != &dxgpu_fops || handle > U32_MAX)
		return NULL;
	other = file->private_data;
	mutex_lock(&other->lock);
	buf = xa_load(&other->bufs, handle);
	if (buf) {
		mem = buf->mem;
		kref_get(&mem->ref);
	}
	mutex_unlock(&other->lock);
	return mem;
}

static long dxgpu_buf_import(struct dxgpu_file *f, void __user *arg)
{
	struct dxgpu_buf_import im;
	struct dxgpu_mem *mem;
	struct fd src;
	int err;

	if (copy_from_user(&im, arg, sizeof(im)))
		return -EFAULT;
	if (im.reserved)
		return -EINVAL;
	src = fdget(im.fd);
	if (!src.file)
		return -EBADF;
	mem = dxgpu_mem_of(src.file, im.handle);
	fdput(src);
	if (!mem)
		return -ENOENT;
	err = dxgpu_buf_add(f, mem, &im.handle, &im.iova);
	dxgpu_mem_put(mem);
	if (err)
		return err;
	if (copy_to_user(arg, &im, sizeof(im))) {
		mutex_lock(&f->lock);
		dxgpu_buf_destroy(f->dev, xa_erase(&f->bufs, im.handle));
		mutex_unlock(&f->lock);
		return -EFAULT;
	}
	return 0;
}

static long dxgpu_buf_free(struct dxgpu_file *f, void __user *arg)
{
	struct dxgpu_buf *buf = NULL;
	u64 handle;

	if (copy_from_user(&handle, arg, sizeof(handle)))
		return -EFAULT;
	mutex_lock(&f->lock);
	if (handle && handle <= U32_MAX)
		buf = xa_erase(&f->bufs, handle);
	if (buf)
		dxgpu_buf_destroy(f->dev, buf);
	mutex_unlock(&f->lock);
	return buf ? 0 : -ENOENT;
}

/* Every buffer of every file unmapped from the device (it goes away). */
static void dxgpu_unmap_all(struct dxgpu_dev *dev)
{
	struct dxgpu_file *f;
	struct dxgpu_buf *buf;
	unsigned long id;

	mutex_lock(&dev->files_lock);
	list_for_each_entry(f, &dev->files, node) {
		mutex_lock(&f->lock);
		xa_for_each(&f->bufs, id, buf)
			dxgpu_buf_unmap(&dev->pdev->dev, buf);
		mutex_unlock(&f->lock);
	}
	mutex_unlock(&dev->files_lock);
}

/* ---- registers ---- */

static bool dxgpu_reg_ok(struct dxgpu_dev *dev, const struct dxgpu_reg_op *op)
{
	return !(op->offset & 3) && op->offset <= dev->regs_len - 4 &&
	       !(op->flags & ~DXGPU_REG_WRITE) && !op->reserved;
}

/* The driver's own registers: its handler acknowledges the interrupts it enabled. */
static bool dxgpu_reg_owned(const struct dxgpu_reg_op *op)
{
	return (op->flags & DXGPU_REG_WRITE) &&
	       (op->offset == DXGPU_REG_INTR_STATUS || op->offset == DXGPU_REG_INTR_ENABLE);
}

/* Runs ops in order under dev->lock; how many ran, or an error for the first that did not. */
static int dxgpu_run_ops(struct dxgpu_dev *dev, struct dxgpu_reg_op *ops, u32 count, u32 *done)
{
	int err = 0;
	u32 i;

	mutex_lock(&dev->lock);
	for (i = 0; i < count; i++) {
		if (READ_ONCE(dev->lost)) { /* set by removal without the lock: seen here */
			err = -ENODEV;
			break;
		}
		if (!dxgpu_reg_ok(dev, &ops[i])) {
			err = -EINVAL;
			break;
		}
		if (dxgpu_reg_owned(&ops[i])) {
			err = -EPERM;
			break;
		}
		if (ops[i].flags & DXGPU_REG_WRITE)
			writel(ops[i].value, dev->regs + ops[i].offset);
		else
			ops[i].value = readl(dev->regs + ops[i].offset);
	}
	mutex_unlock(&dev->lock);
	*done = i;
	return err;
}

static long dxgpu_regs(struct dxgpu_file *f, void __user *arg)
{
	struct dxgpu_reg_op *ops;
	struct dxgpu_regs r;
	int err;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (!r.count || r.count > DXGPU_REGS_MAX)
		return -EINVAL;
	ops = memdup_user(u64_to_user_ptr(r.ops), sizeof(*ops) * r.count);
	if (IS_ERR(ops))
		return PTR_ERR(ops);
	err = dxgpu_run_ops(f->dev, ops, r.count, &r.done);
	if (copy_to_user(u64_to_user_ptr(r.ops), ops, sizeof(*ops) * r.done) ||
	    copy_to_user(arg, &r, sizeof(r)))
		err = -EFAULT;
	kfree(ops);
	return err;
}

/* ---- the file ---- */

static long dxgpu_info(struct dxgpu_file *f, void __user *arg)
{
	struct dxgpu_info info = f->dev->info;

	if (READ_ONCE(f->dev->lost))
		info.flags |= DXGPU_INFO_F_LOST;
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long dxgpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct dxgpu_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	if (cmd == DXGPU_IOC_INFO)
		return dxgpu_info(f, uarg);
	if (READ_ONCE(f->dev->lost))
		return -ENODEV;
	switch (cmd) {
	case DXGPU_IOC_REGS:
		return dxgpu_regs(f, uarg);
	case DXGPU_IOC_BUF_ALLOC:
		return dxgpu_buf_alloc(f, uarg);
	case DXGPU_IOC_BUF_IMPORT:
		return dxgpu_buf_import(f, uarg);
	case DXGPU_IOC_BUF_FREE:
		return dxgpu_buf_free(f, uarg);
	default:
		return -ENOTTY;
	}
}

static int dxgpu_open(struct inode *inode, struct file *file)
{
	struct dxgpu_dev *dev = container_of(file->private_data, struct dxgpu_dev, misc);
	struct dxgpu_file *f;
	int i;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	xa_init_flags(&f->bufs, XA_FLAGS_ALLOC1);
	kref_get(&dev->ref);
	f->dev = dev;
	f->seen_interrupts = atomic64_read(&dev->interrupts);
	for (i = 0; i < DXGPU_MAX_VECTORS; i++)
		f->seen_vector[i] = atomic64_read(&dev->vector_count[i]);
	mutex_lock(&dev->files_lock);
	list_add(&f->node, &dev->files);
	mutex_unlock(&dev->files_lock);
	file->private_data = f;
	return 0;
}

static int dxgpu_release(struct inode *inode, struct file *file)
{
	struct dxgpu_file *f = file->private_data;
	struct dxgpu_dev *dev = f->dev;
	struct dxgpu_buf *buf;
	unsigned long id;

	mutex_lock(&dev->files_lock);
	list_del(&f->node);
	mutex_unlock(&dev->files_lock);
	xa_for_each(&f->bufs, id, buf)
		dxgpu_buf_destroy(dev, buf);
	xa_destroy(&f->bufs);
	kfree(f);
	kref_put(&dev->ref, dxgpu_dev_release);
	return 0;
}

/* An interrupt since now was read, or the device is gone. */
static bool dxgpu_changed(struct dxgpu_dev *dev, u64 now)
{
	return atomic64_read(&dev->interrupts) != now || READ_ONCE(dev->lost);
}

static ssize_t dxgpu_read(struct file *file, char __user *ubuf, size_t len, loff_t *pos)
{
	struct dxgpu_file *f = file->private_data;
	struct dxgpu_dev *dev = f->dev;
	struct dxgpu_event ev = { 0 };
	u64 now;
	int i;

	if (len < sizeof(ev))
		return -EINVAL;
	for (;;) {
		now = atomic64_read(&dev->interrupts);
		if (now != f->seen_interrupts || READ_ONCE(dev->lost))
			break;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(dev->wq, dxgpu_changed(dev, now)))
			return -ERESTARTSYS;
	}
	smp_rmb(); /* the total before the vectors: pairs with dxgpu_irq */
	ev.interrupts = now;
	for (i = 0; i < DXGPU_MAX_VECTORS; i++) {
		u64 c = atomic64_read(&dev->vector_count[i]);

		if (c != f->seen_vector[i])
			ev.vectors |= 1ull << i;
		f->seen_vector[i] = c;
	}
	f->seen_interrupts = now;
	if (READ_ONCE(dev->lost))
		ev.flags |= DXGPU_INFO_F_LOST;
	return copy_to_user(ubuf, &ev, sizeof(ev)) ? -EFAULT : sizeof(ev);
}

static __poll_t dxgpu_poll(struct file *file, poll_table *wait)
{
	struct dxgpu_file *f = file->private_data;
	struct dxgpu_dev *dev = f->dev;
	__poll_t mask = 0;

	poll_wait(file, &dev->wq, wait);
	if (atomic64_read(&dev->interrupts) != f->seen_interrupts)
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(dev->lost))
		mask |= EPOLLHUP;
	return mask;
}

static void dxgpu_vm_open(struct vm_area_struct *vma)
{
	struct dxgpu_mem *mem = vma->vm_private_data;

	kref_get(&mem->ref);
}

static void dxgpu_vm_close(struct vm_area_struct *vma)
{
	dxgpu_mem_put(vma->vm_private_data);
}

static const struct vm_operations_struct dxgpu_vm_ops = {
	.open = dxgpu_vm_open,
	.close = dxgpu_vm_close,
};

/* The buffer whose handle the offset names, whole, shared (mmap_lock held: the file's lock). */
static int dxgpu_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct dxgpu_file *f = file->private_data;
	unsigned long handle = vma->vm_pgoff >> (DXGPU_MMAP_SHIFT - PAGE_SHIFT);
	unsigned long len = vma->vm_end - vma->vm_start;
	struct dxgpu_mem *mem = NULL;
	struct dxgpu_buf *buf;
	unsigned long at;
	unsigned int i;
	int err = 0;

	if (vma->vm_pgoff & ((1ul << (DXGPU_MMAP_SHIFT - PAGE_SHIFT)) - 1) ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	mutex_lock(&f->lock);
	buf = xa_load(&f->bufs, handle);
	if (buf && len == buf->mem->size) {
		mem = buf->mem;
		kref_get(&mem->ref);
	}
	mutex_unlock(&f->lock);
	if (!mem)
		return -EINVAL;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	for (i = 0, at = vma->vm_start; i < mem->nr_chunks && !err; i++) {
		err = remap_pfn_range(vma, at, virt_to_phys(mem->chunks[i].cpu) >> PAGE_SHIFT,
				      mem->chunks[i].size, vma->vm_page_prot);
		at += mem->chunks[i].size;
	}
	if (err) {
		dxgpu_mem_put(mem);
		return err;
	}
	vma->vm_private_data = mem;
	vma->vm_ops = &dxgpu_vm_ops;
	return 0;
}

static const struct file_operations dxgpu_fops = {
	.owner = THIS_MODULE,
	.open = dxgpu_open,
	.release = dxgpu_release,
	.read = dxgpu_read,
	.poll = dxgpu_poll,
	.mmap = dxgpu_mmap,
	.unlocked_ioctl = dxgpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* ---- the PCI driver ---- */

static void dxgpu_fill_info(struct dxgpu_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	struct dxgpu_info *info = &dev->info;
	int i;

	info->vendor_id = pdev->vendor;
	info->device_id = pdev->device;
	info->class_code = pdev->class;
	info->memory_bytes = readl(dev->regs + DXGPU_REG_MEM_SIZE_LO) |
			     (u64)readl(dev->regs + DXGPU_REG_MEM_SIZE_HI) << 32;
	for (i = 0; i < DXGPU_BARS; i++) {
		unsigned long flags = pci_resource_flags(pdev, i);

		if (!(flags & IORESOURCE_MEM) || !pci_resource_len(pdev, i))
			continue;
		info->bar_addr[i] = pci_bus_address(pdev, i);
		info->bar_size[i] = pci_resource_len(pdev, i);
		if (flags & IORESOURCE_MEM_64)
			info->bar_flags[i] |= DXGPU_BAR_MEM64;
		if (flags & IORESOURCE_PREFETCH)
			info->bar_flags[i] |= DXGPU_BAR_PREFETCH;
	}
	strscpy(info->pci_name, pci_name(pdev), sizeof(info->pci_name));
}

static int dxgpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct dxgpu_dev *dev;
	int err;

	err = pcim_enable_device(pdev);
	if (err)
		return err;
	pci_set_master(pdev);
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err)
		return err;
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	kref_init(&dev->ref);
	mutex_init(&dev->lock);
	mutex_init(&dev->files_lock);
	INIT_LIST_HEAD(&dev->files);
	init_waitqueue_head(&dev->wq);
	dev->pdev = pci_dev_get(pdev);
	dev->id = ida_alloc(&dxgpu_ida, GFP_KERNEL);
	if (dev->id < 0) {
		pci_dev_put(pdev);
		kfree(dev);
		return -ENOMEM;
	}
	snprintf(dev->name, sizeof(dev->name), "dxgpu%d", dev->id);
	err = -ENOMEM;
	dev->regs = pcim_iomap(pdev, 0, 0);
	if (!dev->regs)
		goto put;
	dev->regs_len = pci_resource_len(pdev, 0);
	err = -ENODEV;
	if (dev->regs_len < SZ_4K || readl(dev->regs + DXGPU_REG_ID) != DXGPU_ID_VALUE) {
		pci_err(pdev, "BAR0 is not a model GPU's registers\n");
		goto put;
	}
	dxgpu_fill_info(dev);
	err = dxgpu_setup_irqs(dev);
	if (err) {
		pci_err(pdev, "no MSI-X interrupts: %d\n", err);
		goto put;
	}
	dev->misc = (struct miscdevice){ .minor = MISC_DYNAMIC_MINOR,
					 .name = dev->name,
					 .fops = &dxgpu_fops,
					 .parent = &pdev->dev,
					 .mode = 0600 };
	err = misc_register(&dev->misc);
	if (err)
		goto quiet;
	pci_set_drvdata(pdev, dev);
	pci_info(pdev, "/dev/%s: %llu MiB, %u MSI-X vectors\n", dev->name,
		 dev->info.memory_bytes >> 20, dev->info.msix_vectors);
	return 0;
quiet:
	writel(0, dev->regs + DXGPU_REG_INTR_ENABLE);
	dxgpu_free_irqs(dev);
put:
	kref_put(&dev->ref, dxgpu_dev_release);
	return err; /* devres frees the vectors and the mapping */
}

/*
 * Lost first: every call answers ENODEV from now, a register batch stops at its next op, and
 * the batch in flight is waited for. Then the device's DMA mappings go, before the driver's
 * binding does; the files keep what they need to answer ENODEV.
 */
static void dxgpu_remove(struct pci_dev *pdev)
{
	struct dxgpu_dev *dev = pci_get_drvdata(pdev);

	WRITE_ONCE(dev->lost, true); /* a batch stops at its next op... */
	mutex_lock(&dev->lock);	     /* ...and the op in flight ends */
	mutex_unlock(&dev->lock);
	wake_up_interruptible(&dev->wq);
	misc_deregister(&dev->misc);
	writel(0, dev->regs + DXGPU_REG_INTR_ENABLE);
	dxgpu_free_irqs(dev);
	dxgpu_unmap_all(dev);
	pci_clear_master(pdev);
	pci_set_drvdata(pdev, NULL);
	kref_put(&dev->ref, dxgpu_dev_release);
}

static const struct pci_device_id dxgpu_ids[] = {
	{ PCI_DEVICE(0x4450, 0x0001) }, /* the model's own IDs (profile dxgpu) */
	{}
};
MODULE_DEVICE_TABLE(pci, dxgpu_ids);

static struct pci_driver dxgpu_driver = {
	.name = "dxgpu",
	.id_table = dxgpu_ids,
	.probe = dxgpu_probe,
	.remove = dxgpu_remove,
};
module_pci_driver(dxgpu_driver);

MODULE_DESCRIPTION("The model GPU's PCI driver: registers, DMA buffers, interrupts");
MODULE_LICENSE("GPL");
