/*
 * ethx-gpu: an emulated GPU whose memory other GPUs reach with loads and stores carried as
 * Ethernet frames (the ethx fabric emulator). Register map: ethx_gpu_regs.h (qemu-device/),
 * explained in docs/register-map.md.
 *
 * BAR 0 control registers; BAR 2 this GPU's memory ("HBM"), RAM from the shared-memory file
 * the fabric's completer serves; BAR 4 the remote window, whose every access goes through
 * ethx's address map and packet engine (qemu-device/host/ethx_gpu_api.h, a C API over the C++
 * library). Window loads, atomics and FLUSH reads drop the big QEMU lock while they wait for the
 * fabric (and the vCPU drives the packet engine itself meanwhile); the copy engine completes on a
 * thread without the lock, which hands the interrupt to a bottom half.
 *
 * Guest mistakes (unknown register, bad access size, write to a read-only register, an access
 * outside every window, a timeout) are logged with LOG_GUEST_ERROR and survived: reads return
 * all-ones, writes are ignored, the error is latched with its address.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later (as QEMU, which this file is built into)
 */

#include "qemu/osdep.h" /* must come first in every QEMU source file */
#include "ethx_gpu_api.h"
#include "ethx_gpu_regs.h" /* the register map; symlinked next to this file too */
#include "hw/pci/msi.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qom/object.h"
#include "sysemu/sysemu.h"
#include <sys/mman.h>

#define TYPE_ETHX_GPU "ethx-gpu"
OBJECT_DECLARE_SIMPLE_TYPE(EthxGpuState, ETHX_GPU)

struct EthxGpuState {
    PCIDevice pdev;
    MemoryRegion ctrl;
    MemoryRegion hbm;
    MemoryRegion window;

    /* Properties. */
    uint32_t gpu_id;
    char *fabric;
    char *transport;
    char *netns_tag;
    char *interface;
    char *netns;
    char *config;
    uint32_t gpus;

    ethx_gpu *gpu; /* NULL without a fabric */
    void *hbm_ptr;
    uint64_t hbm_bytes;

    uint32_t error; /* latched ERROR bits */
    uint64_t fault_addr;
    uint64_t scratch;
    uint32_t guest_ready;

    uint64_t atomic_addr, atomic_operand, atomic_compare, atomic_result;
    uint32_t atomic_status;

    /* The first posted store that failed since the last FLUSH read (its status code). */
    int store_status;

    uint64_t copy_src, copy_dst, copy_len;
    /* Written by the library's service thread, read by vCPUs and the bottom half. */
    int copy_state; /* COPY_* (atomic) */
    int copy_code;  /* status code of the last copy */
    uint64_t copy_fault;
    bool copy_irq;
    QEMUBH *copy_bh;
    Notifier exit_notifier; /* QEMU does not unrealize devices when it exits */
};

static void ethx_gpu_latch(EthxGpuState *s, uint32_t bit, uint64_t addr)
{
    if (s->error == 0) {
        s->fault_addr = addr;
    }
    s->error |= bit;
}

/* A failed fabric access: latch the error bit of its status code. */
static void ethx_gpu_latch_status(EthxGpuState *s, int status, uint64_t addr, const char *what)
{
    qemu_log_mask(LOG_GUEST_ERROR, "ethx-gpu %u: %s at window address 0x%" PRIx64 ": %s\n",
                  s->gpu_id, what, addr, ethx_gpu_status_name(status));
    ethx_gpu_latch(s, ethx_error_bit_of_status(status), addr);
}

static uint64_t ethx_gpu_counter(EthxGpuState *s, unsigned index)
{
    ethx_gpu_counters c;
    uint64_t values[ETHX_GPU_COUNTER_COUNT];

    if (!s->gpu) {
        return 0;
    }
    ethx_gpu_get_counters(s->gpu, &c);
    values[0] = c.loads;
    values[1] = c.stores;
    values[2] = c.atomics;
    values[3] = c.errors;
    values[4] = c.timeouts;
    values[5] = c.served_requests;
    values[6] = c.copies;
    values[7] = c.copy_bytes;
    return values[index];
}

/*
 * How long one COPY_STATUS read may drive a running copy (below): long enough for a 4 KiB copy
 * (a read and a flush round trip, tens of microseconds here) to finish within the read that
 * polls it, short enough that a guest polling a large copy still takes its timer interrupts.
 */
#define ETHX_COPY_POLL_BUDGET_NS 200000

/*
 * A guest polling COPY_STATUS is waiting for the copy: its vCPU drives the copy engine with the
 * big lock dropped, as a load does, instead of waiting for the service thread (which naps while
 * vCPUs are busy).
 */
static uint32_t ethx_gpu_copy_status(EthxGpuState *s)
{
    int state = qatomic_load_acquire(&s->copy_state);

    if (state == ETHX_COPY_BUSY && s->gpu) {
        qemu_mutex_unlock_iothread();
        ethx_gpu_copy_poll(s->gpu, ETHX_COPY_POLL_BUDGET_NS);
        qemu_mutex_lock_iothread();
        state = qatomic_load_acquire(&s->copy_state);
    }

    return (uint32_t)state |
           (state == ETHX_COPY_FAILED ? (uint32_t)s->copy_code << ETHX_COPY_STATUS_CODE_SHIFT : 0);
}

/*
 * FLUSH: waits until every store this GPU posted so far (from any vCPU) is performed at its
 * target, with the big lock dropped as a load does. Reads the flush's status (its failure
 * latched like a load's), else the status of the first posted store that failed since the
 * previous FLUSH read (latched when it failed), else 0.
 */
static uint32_t ethx_gpu_flush_read(EthxGpuState *s)
{
    uint64_t fault = 0;
    int status, store_status = s->store_status;

    if (!s->gpu) {
        ethx_gpu_latch(s, ETHX_ERROR_NO_FABRIC, ETHX_REG_FLUSH);
        return ETHX_GPU_UNREACHABLE;
    }
    s->store_status = ETHX_GPU_OK;
    qemu_mutex_unlock_iothread();
    status = ethx_gpu_flush(s->gpu, &fault);
    qemu_mutex_lock_iothread();
    if (status != ETHX_GPU_OK) {
        ethx_gpu_latch_status(s, status, fault, "flush");
        return (uint32_t)status;
    }
    return (uint32_t)store_status;
}

static uint64_t ethx_gpu_ctrl_read(void *opaque, hwaddr addr, unsigned size)
{
    EthxGpuState *s = opaque;

    switch (addr) {
    case ETHX_REG_IDENT:
        return ETHX_IDENT;
    case ETHX_REG_VERSION:
        return ETHX_REGISTER_MAP_VERSION;
    case ETHX_REG_GPU_ID:
        return s->gpu_id;
    case ETHX_REG_STATUS:
        return (s->gpu ? ETHX_STATUS_FABRIC_UP : 0) | (s->error ? ETHX_STATUS_ERROR : 0) |
               (qatomic_read(&s->copy_state) == ETHX_COPY_BUSY ? ETHX_STATUS_COPY_BUSY : 0);
    case ETHX_REG_ERROR:
        return s->error;
    case ETHX_REG_FAULT_ADDR:
        return s->fault_addr;
    case ETHX_REG_SCRATCH:
        return s->scratch;
    case ETHX_REG_GPU_COUNT:
        return s->gpu ? ethx_gpu_gpu_count(s->gpu) : 0;
    case ETHX_REG_APERTURE_MIB:
        return s->gpu ? ethx_gpu_aperture_bytes(s->gpu) >> 20 : 0;
    case ETHX_REG_HBM_MIB:
        return s->hbm_bytes >> 20;
    case ETHX_REG_GUEST_READY:
        return s->guest_ready;
    case ETHX_REG_ATOMIC_ADDR:
        return s->atomic_addr;
    case ETHX_REG_ATOMIC_OPERAND:
        return s->atomic_operand;
    case ETHX_REG_ATOMIC_COMPARE:
        return s->atomic_compare;
    case ETHX_REG_ATOMIC_RESULT:
        return s->atomic_result;
    case ETHX_REG_ATOMIC_STATUS:
        return s->atomic_status;
    case ETHX_REG_FLUSH:
        return ethx_gpu_flush_read(s);
    case ETHX_REG_COPY_SRC:
        return s->copy_src;
    case ETHX_REG_COPY_DST:
        return s->copy_dst;
    case ETHX_REG_COPY_LEN:
        return s->copy_len;
    case ETHX_REG_COPY_STATUS:
        return ethx_gpu_copy_status(s);
    default:
        if (addr >= ETHX_REG_COUNTERS && addr < ETHX_REG_COUNTERS_END && addr % 8 == 0) {
            return ethx_gpu_counter(s, (addr - ETHX_REG_COUNTERS) / 8);
        }
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ethx-gpu %u: read of unknown register 0x%" HWADDR_PRIx " (size %u)\n",
                      s->gpu_id, addr, size);
        ethx_gpu_latch(s, ETHX_ERROR_BAD_REGISTER, addr);
        return UINT64_MAX;
    }
}

/* ATOMIC_CMD: one fabric atomic, performed now; the big lock is dropped while it waits. */
static void ethx_gpu_atomic_doorbell(EthxGpuState *s, uint32_t command)
{
    uint64_t addr = s->atomic_addr, operand = s->atomic_operand, compare = s->atomic_compare;
    uint64_t old_value = UINT64_MAX, fault = addr;
    int op = command & ETHX_ATOMIC_CMD_OP_MASK, status;
    unsigned width = (command >> ETHX_ATOMIC_CMD_WIDTH_SHIFT) & ETHX_ATOMIC_CMD_WIDTH_MASK;

    if (!s->gpu) {
        s->atomic_result = UINT64_MAX;
        s->atomic_status = ETHX_GPU_UNREACHABLE;
        ethx_gpu_latch(s, ETHX_ERROR_NO_FABRIC, addr);
        return;
    }
    qemu_mutex_unlock_iothread();
    status = ethx_gpu_atomic(s->gpu, op, addr, width, operand, compare, &old_value, &fault);
    qemu_mutex_lock_iothread();
    s->atomic_result = old_value;
    s->atomic_status = status;
    if (status != ETHX_GPU_OK) {
        ethx_gpu_latch_status(s, status, fault, "atomic");
    }
}

/*
 * Runs on the library's service thread, or on a vCPU that was driving the engine for its own
 * load (with the big lock dropped): no big lock here, so only record and defer.
 */
static void ethx_gpu_copy_finished(void *opaque, int status, uint64_t fault_addr)
{
    EthxGpuState *s = opaque;

    s->copy_code = status;
    s->copy_fault = fault_addr;
    qatomic_store_release(&s->copy_state,
                          status == ETHX_GPU_OK ? ETHX_COPY_DONE : ETHX_COPY_FAILED);
    qemu_bh_schedule(s->copy_bh);
}

/* Bottom half, with the big lock: latch a copy's error and raise its interrupt. */
static void ethx_gpu_copy_bh(void *opaque)
{
    EthxGpuState *s = opaque;

    if (qatomic_load_acquire(&s->copy_state) == ETHX_COPY_FAILED) {
        ethx_gpu_latch_status(s, s->copy_code, s->copy_fault, "copy");
    }
    if (s->copy_irq && msi_enabled(&s->pdev)) {
        msi_notify(&s->pdev, 0);
    }
}

static void ethx_gpu_copy_doorbell(EthxGpuState *s, uint32_t command)
{
    int started;

    if (!(command & ETHX_COPY_CMD_START)) {
        return;
    }
    if (!s->gpu) {
        ethx_gpu_latch(s, ETHX_ERROR_NO_FABRIC, s->copy_src);
        return;
    }
    if (qatomic_read(&s->copy_state) == ETHX_COPY_BUSY) {
        ethx_gpu_latch(s, ETHX_ERROR_COPY_BUSY, s->copy_src);
        return;
    }
    s->copy_irq = (command & ETHX_COPY_CMD_IRQ) != 0;
    qatomic_set(&s->copy_state, ETHX_COPY_BUSY);
    if (s->copy_irq) {
        started =
            ethx_gpu_copy(s->gpu, s->copy_src, s->copy_dst, s->copy_len, ethx_gpu_copy_finished, s);
    } else {
        /* The guest will poll COPY_STATUS: start driving now, without the big lock. */
        uint64_t src = s->copy_src, dst = s->copy_dst, len = s->copy_len;

        qemu_mutex_unlock_iothread();
        started = ethx_gpu_copy_driven(s->gpu, src, dst, len, ethx_gpu_copy_finished, s,
                                       ETHX_COPY_POLL_BUDGET_NS);
        qemu_mutex_lock_iothread();
    }
    if (started != 0) {
        qatomic_set(&s->copy_state, ETHX_COPY_IDLE);
        ethx_gpu_latch(s, ETHX_ERROR_COPY_BUSY, s->copy_src);
    }
}

/* BAR 4: a load waits for the fabric without holding the big lock. */
static uint64_t ethx_gpu_window_read(void *opaque, hwaddr addr, unsigned size)
{
    EthxGpuState *s = opaque;
    uint64_t value = UINT64_MAX, fault = addr;
    int status;

    if (!s->gpu) {
        ethx_gpu_latch(s, ETHX_ERROR_NO_FABRIC, addr);
        return UINT64_MAX;
    }
    qemu_mutex_unlock_iothread();
    status = ethx_gpu_load(s->gpu, addr, size, &value, &fault);
    qemu_mutex_lock_iothread();
    if (status != ETHX_GPU_OK) {
        ethx_gpu_latch_status(s, status, fault, "load");
        return UINT64_MAX;
    }
    return value;
}

/*
 * Stores are posted: queued for the service thread. Only a full queue makes one wait, and that
 * wait happens without the big lock: a vCPU blocked while holding it would stop the VM's main
 * loop (serial ports, timers, virtio) for as long as the guest keeps storing.
 */
static void ethx_gpu_window_write(void *opaque, hwaddr addr, uint64_t value, unsigned size)
{
    EthxGpuState *s = opaque;
    uint64_t fault = addr;
    int status;

    if (!s->gpu) {
        ethx_gpu_latch(s, ETHX_ERROR_NO_FABRIC, addr);
        return;
    }
    status = ethx_gpu_try_store(s->gpu, addr, size, value, &fault);
    if (status == ETHX_GPU_QUEUE_FULL) {
        qemu_mutex_unlock_iothread();
        status = ethx_gpu_store(s->gpu, addr, size, value, &fault);
        qemu_mutex_lock_iothread();
    }
    if (status != ETHX_GPU_OK) {
        ethx_gpu_latch_status(s, status, fault, "store");
        if (s->store_status == ETHX_GPU_OK) {
            s->store_status = status;
        }
    }
}

static const MemoryRegionOps ethx_gpu_window_ops = {
    .read = ethx_gpu_window_read,
    .write = ethx_gpu_window_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid =
        {
            .min_access_size = 1,
            .max_access_size = 8,
        },
    .impl =
        {
            .min_access_size = 1,
            .max_access_size = 8,
        },
};

static void ethx_gpu_ctrl_write(void *opaque, hwaddr addr, uint64_t value, unsigned size)
{
    EthxGpuState *s = opaque;

    switch (addr) {
    case ETHX_REG_ERROR:
        s->error &= ~(uint32_t)value; /* write 1 to clear */
        if (s->error == 0) {
            s->fault_addr = 0;
        }
        return;
    case ETHX_REG_SCRATCH:
        s->scratch = value;
        return;
    case ETHX_REG_GUEST_READY:
        s->guest_ready = (uint32_t)value & 1;
        if (s->guest_ready && s->gpu) {
            ethx_gpu_guest_ready(s->gpu);
        }
        return;
    case ETHX_REG_ATOMIC_ADDR:
        s->atomic_addr = value;
        return;
    case ETHX_REG_ATOMIC_OPERAND:
        s->atomic_operand = value;
        return;
    case ETHX_REG_ATOMIC_COMPARE:
        s->atomic_compare = value;
        return;
    case ETHX_REG_ATOMIC_CMD:
        ethx_gpu_atomic_doorbell(s, (uint32_t)value);
        return;
    case ETHX_REG_COPY_SRC:
        s->copy_src = value;
        return;
    case ETHX_REG_COPY_DST:
        s->copy_dst = value;
        return;
    case ETHX_REG_COPY_LEN:
        s->copy_len = value;
        return;
    case ETHX_REG_COPY_CMD:
        ethx_gpu_copy_doorbell(s, (uint32_t)value);
        return;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ethx-gpu %u: write 0x%" PRIx64 " to %s register 0x%" HWADDR_PRIx
                      " (size %u) ignored\n",
                      s->gpu_id, value, addr < ETHX_REG_COUNTERS_END ? "read-only" : "unknown",
                      addr, size);
        ethx_gpu_latch(s, ETHX_ERROR_BAD_REGISTER, addr);
        return;
    }
}

static const MemoryRegionOps ethx_gpu_ctrl_ops = {
    .read = ethx_gpu_ctrl_read,
    .write = ethx_gpu_ctrl_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid =
        {
            .min_access_size = 4,
            .max_access_size = 8,
        },
    .impl =
        {
            .min_access_size = 4,
            .max_access_size = 8,
        },
};

/* Leave the fabric when QEMU exits (guest poweroff, SIGTERM): the library removes this GPU's
 * memory file and tells the launcher the GPU is gone. */
static void ethx_gpu_leave_fabric(Notifier *notifier, void *data)
{
    EthxGpuState *s = container_of(notifier, EthxGpuState, exit_notifier);

    if (s->gpu) {
        ethx_gpu_close(s->gpu);
        s->gpu = NULL;
    }
}

static void ethx_gpu_realize(PCIDevice *pdev, Error **errp)
{
    EthxGpuState *s = ETHX_GPU(pdev);
    ethx_gpu_options options = {
        .fabric = s->fabric,
        .gpu_id = s->gpu_id,
        .gpus = s->gpus,
        .config_path = s->config,
        .transport = s->transport,
        .netns_tag = s->netns_tag,
        .interface = s->interface,
        .netns = s->netns,
    };
    char reason[512];

    memory_region_init_io(&s->ctrl, OBJECT(s), &ethx_gpu_ctrl_ops, s, "ethx-gpu-ctrl",
                          ETHX_GPU_CTRL_BAR_BYTES);
    pci_register_bar(pdev, ETHX_GPU_CTRL_BAR, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->ctrl);
    if (msi_init(pdev, 0, 1, true, false, errp) != 0) {
        return;
    }
    if (!s->fabric || !*s->fabric) {
        return; /* control BAR only: STATUS.FABRIC_UP stays 0 */
    }
    s->gpu = ethx_gpu_open(&options, reason, sizeof(reason));
    if (!s->gpu) {
        error_setg(errp, "ethx-gpu %u: cannot join fabric '%s': %s", s->gpu_id, s->fabric, reason);
        return;
    }
    s->hbm_ptr = ethx_gpu_map_hbm(s->gpu, &s->hbm_bytes);
    if (!s->hbm_ptr) {
        error_setg(errp, "ethx-gpu %u: cannot map its memory", s->gpu_id);
        ethx_gpu_close(s->gpu);
        s->gpu = NULL;
        return;
    }
    memory_region_init_ram_ptr(&s->hbm, OBJECT(s), "ethx-gpu-hbm", s->hbm_bytes, s->hbm_ptr);
    pci_register_bar(pdev, ETHX_GPU_HBM_BAR,
                     PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64 |
                         PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->hbm);
    memory_region_init_io(&s->window, OBJECT(s), &ethx_gpu_window_ops, s, "ethx-gpu-window",
                          ethx_gpu_window_bytes(s->gpu));
    pci_register_bar(pdev, ETHX_GPU_WINDOW_BAR,
                     PCI_BASE_ADDRESS_SPACE_MEMORY | PCI_BASE_ADDRESS_MEM_TYPE_64 |
                         PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->window);
    s->copy_bh = qemu_bh_new(ethx_gpu_copy_bh, s);
    s->exit_notifier.notify = ethx_gpu_leave_fabric;
    qemu_add_exit_notifier(&s->exit_notifier);
}

static void ethx_gpu_exit(PCIDevice *pdev)
{
    EthxGpuState *s = ETHX_GPU(pdev);

    if (s->exit_notifier.notify) {
        qemu_remove_exit_notifier(&s->exit_notifier);
        s->exit_notifier.notify = NULL;
    }
    if (s->gpu) {
        ethx_gpu_close(s->gpu); /* joins the service thread: no copy callback after this */
        s->gpu = NULL;
    }
    if (s->copy_bh) {
        qemu_bh_delete(s->copy_bh);
        s->copy_bh = NULL;
    }
    if (s->hbm_ptr) {
        munmap(s->hbm_ptr, s->hbm_bytes);
        s->hbm_ptr = NULL;
    }
    msi_uninit(pdev);
}

static void ethx_gpu_reset(DeviceState *dev)
{
    EthxGpuState *s = ETHX_GPU(dev);

    s->error = 0;
    s->fault_addr = 0;
    s->scratch = 0;
    s->guest_ready = 0;
    s->atomic_addr = s->atomic_operand = s->atomic_compare = s->atomic_result = 0;
    s->atomic_status = 0;
    s->store_status = ETHX_GPU_OK;
    if (qatomic_read(&s->copy_state) != ETHX_COPY_BUSY) {
        qatomic_set(&s->copy_state, ETHX_COPY_IDLE);
    }
}

static Property ethx_gpu_properties[] = {
    DEFINE_PROP_UINT32("gpu-id", EthxGpuState, gpu_id, 0),
    DEFINE_PROP_STRING("fabric", EthxGpuState, fabric),
    DEFINE_PROP_STRING("transport", EthxGpuState, transport),
    DEFINE_PROP_STRING("netns-tag", EthxGpuState, netns_tag),
    DEFINE_PROP_STRING("interface", EthxGpuState, interface),
    DEFINE_PROP_STRING("netns", EthxGpuState, netns),
    DEFINE_PROP_STRING("config", EthxGpuState, config),
    DEFINE_PROP_UINT32("gpus", EthxGpuState, gpus, 0),
    DEFINE_PROP_END_OF_LIST(),
};

static void ethx_gpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = ethx_gpu_realize;
    k->exit = ethx_gpu_exit;
    k->vendor_id = ETHX_GPU_VENDOR_ID;
    k->device_id = ETHX_GPU_DEVICE_ID;
    k->revision = 1;
    k->class_id = PCI_CLASS_PROCESSOR_CO;
    dc->desc = "ethx emulated GPU (load/store over Ethernet)";
    dc->reset = ethx_gpu_reset;
    device_class_set_props(dc, ethx_gpu_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo ethx_gpu_info = {
    .name = TYPE_ETHX_GPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(EthxGpuState),
    .class_init = ethx_gpu_class_init,
    .interfaces =
        (InterfaceInfo[]){
            {INTERFACE_PCIE_DEVICE},
            {INTERFACE_CONVENTIONAL_PCI_DEVICE},
            {},
        },
};

static void ethx_gpu_register_types(void)
{
    type_register_static(&ethx_gpu_info);
}

type_init(ethx_gpu_register_types)
