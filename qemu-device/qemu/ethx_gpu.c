/*
 * ethx-gpu: an emulated GPU whose memory other GPUs reach with loads and stores carried as
 * Ethernet frames (the ethx fabric emulator).
 *
 * This is the first stage of the device: one PCIe endpoint with its control BAR (BAR 0,
 * registers below, documented in docs/register-map.md). The local-memory BAR, the remote
 * window BAR, the copy engine and the link to ethx's address map and packet engine follow.
 *
 * Guest mistakes (unknown register, bad access size, write to a read-only register) are
 * logged with LOG_GUEST_ERROR and survived: reads return all-ones, writes are ignored.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later (as QEMU, which this file is built into)
 */

#include "qemu/osdep.h" /* must come first in every QEMU source file */
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qom/object.h"

#define TYPE_ETHX_GPU "ethx-gpu"
OBJECT_DECLARE_SIMPLE_TYPE(EthxGpuState, ETHX_GPU)

/* PCI identity: vendor 0x1234 is QEMU's experimental vendor (as edu uses); device 0xe7e0. */
#define ETHX_GPU_VENDOR_ID 0x1234
#define ETHX_GPU_DEVICE_ID 0xe7e0

#define ETHX_GPU_CTRL_BAR_BYTES 4096

/* Control BAR registers (byte offsets). */
enum {
    ETHX_REG_IDENT = 0x00,      /* RO 32: 0x45544858 ("ETHX") */
    ETHX_REG_VERSION = 0x04,    /* RO 32: register map version */
    ETHX_REG_GPU_ID = 0x08,     /* RO 32: this GPU's id in the fabric */
    ETHX_REG_STATUS = 0x0c,     /* RO 32: bit 0 fabric up, bit 1 error latched */
    ETHX_REG_ERROR = 0x10,      /* RW1C 32: latched error bits */
    ETHX_REG_FAULT_ADDR = 0x18, /* RO 64: window address of the first faulting access */
    ETHX_REG_SCRATCH = 0x20,    /* RW 64: scratch, for guest tools to probe MMIO */
};

#define ETHX_IDENT 0x45544858u
#define ETHX_REGISTER_MAP_VERSION 1u

#define ETHX_STATUS_FABRIC_UP (1u << 0)
#define ETHX_STATUS_ERROR (1u << 1)

/* ERROR register bits. */
#define ETHX_ERROR_BAD_REGISTER (1u << 0) /* guest touched an unknown register */

struct EthxGpuState {
    PCIDevice pdev;
    MemoryRegion ctrl;

    uint32_t gpu_id; /* property gpu-id */
    uint32_t error;  /* latched ERROR bits */
    uint64_t fault_addr;
    uint64_t scratch;
};

static void ethx_gpu_latch(EthxGpuState *s, uint32_t bit, uint64_t addr)
{
    if (s->error == 0) {
        s->fault_addr = addr;
    }
    s->error |= bit;
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
        return s->error ? ETHX_STATUS_ERROR : 0;
    case ETHX_REG_ERROR:
        return s->error;
    case ETHX_REG_FAULT_ADDR:
        return s->fault_addr;
    case ETHX_REG_SCRATCH:
        return s->scratch;
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ethx-gpu %u: read of unknown register 0x%" HWADDR_PRIx " (size %u)\n",
                      s->gpu_id, addr, size);
        ethx_gpu_latch(s, ETHX_ERROR_BAD_REGISTER, addr);
        return UINT64_MAX;
    }
}

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
    default:
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ethx-gpu %u: write 0x%" PRIx64 " to %s register 0x%" HWADDR_PRIx
                      " (size %u) ignored\n",
                      s->gpu_id, value, addr < ETHX_REG_SCRATCH + 8 ? "read-only" : "unknown", addr,
                      size);
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

static void ethx_gpu_realize(PCIDevice *pdev, Error **errp)
{
    EthxGpuState *s = ETHX_GPU(pdev);

    memory_region_init_io(&s->ctrl, OBJECT(s), &ethx_gpu_ctrl_ops, s, "ethx-gpu-ctrl",
                          ETHX_GPU_CTRL_BAR_BYTES);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->ctrl);
}

static void ethx_gpu_reset(DeviceState *dev)
{
    EthxGpuState *s = ETHX_GPU(dev);

    s->error = 0;
    s->fault_addr = 0;
    s->scratch = 0;
}

static Property ethx_gpu_properties[] = {
    DEFINE_PROP_UINT32("gpu-id", EthxGpuState, gpu_id, 0),
    DEFINE_PROP_END_OF_LIST(),
};

static void ethx_gpu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = ethx_gpu_realize;
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
