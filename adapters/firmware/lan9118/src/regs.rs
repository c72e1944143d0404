//! The LAN9118's register map and the seam through which the driver reaches it.
//!
//! Offsets and bits are the datasheet's (SMSC LAN9118, "System Control and Status
//! Registers" and "MAC Control and Status Registers"); QEMU's `hw/net/lan9118.c` models the
//! same map. The driver only ever touches the chip through [`Registers`], so that the unit
//! tests can put a fake register block in its place.

/// Word access to the controller's 256-byte register window.
///
/// Reads are not pure: reading a FIFO port pops it. Implementations perform exactly the
/// access asked for, once, in program order.
pub trait Registers {
    /// Read the 32-bit register at byte offset `offset`.
    fn read(&mut self, offset: u8) -> u32;
    /// Write `value` to the 32-bit register at byte offset `offset`.
    fn write(&mut self, offset: u8, value: u32);
}

impl<R: Registers + ?Sized> Registers for &mut R {
    fn read(&mut self, offset: u8) -> u32 {
        (**self).read(offset)
    }
    fn write(&mut self, offset: u8, value: u32) {
        (**self).write(offset, value)
    }
}

/// The register window of a memory-mapped LAN9118, by volatile word access.
#[derive(Debug)]
pub struct Mmio {
    base: usize,
}

impl Mmio {
    /// The controller of Arm's MPS2 AN385/AN386 boards (and QEMU's `mps2-an385`/`-an386`).
    pub const MPS2_BASE: usize = 0x4020_0000;

    /// Address the controller whose register window starts at `base`.
    ///
    /// # Safety
    ///
    /// `base` must be the 4-byte-aligned start of a LAN9118's 256-byte register window, and
    /// nothing else may access that window while this value (or a copy made with
    /// [`Mmio::alias`]) is alive, except reads of [`FREE_RUN`] and other side-effect-free
    /// registers.
    pub const unsafe fn new(base: usize) -> Mmio {
        Mmio { base }
    }

    /// A second handle on the same window, for side-effect-free reads (the free-running
    /// counter) while the driver owns the first.
    ///
    /// # Safety
    ///
    /// The alias must only read registers whose reads have no side effect.
    pub unsafe fn alias(&self) -> Mmio {
        Mmio { base: self.base }
    }
}

impl Registers for Mmio {
    fn read(&mut self, offset: u8) -> u32 {
        let addr = (self.base + usize::from(offset)) as *const u32;
        // SAFETY: `Mmio::new`'s contract: `base` starts a register window of 256 bytes, so
        // `base + offset` (offset < 256, callers pass word offsets) is a device register.
        unsafe { core::ptr::read_volatile(addr) }
    }

    fn write(&mut self, offset: u8, value: u32) {
        let addr = (self.base + usize::from(offset)) as *mut u32;
        // SAFETY: as for `read`.
        unsafe { core::ptr::write_volatile(addr, value) }
    }
}

// System control and status registers (byte offsets).
/// RX data FIFO port (reads pop one word; 0x00..0x1C alias it).
pub const RX_DATA_FIFO: u8 = 0x00;
/// TX data FIFO port (writes push one word; 0x20..0x3C alias it).
pub const TX_DATA_FIFO: u8 = 0x20;
/// RX status FIFO port (reads pop one status word).
pub const RX_STATUS_FIFO: u8 = 0x40;
/// TX status FIFO port (reads pop one status word).
pub const TX_STATUS_FIFO: u8 = 0x48;
/// Chip id (bits 31:16, 0x0118) and revision.
pub const ID_REV: u8 = 0x50;
/// Interrupt configuration.
pub const IRQ_CFG: u8 = 0x54;
/// Interrupt status (write 1 to clear).
pub const INT_STS: u8 = 0x58;
/// Interrupt enable.
pub const INT_EN: u8 = 0x5C;
/// Reads 0x87654321 whatever the bus width or byte order: the first access at boot.
pub const BYTE_TEST: u8 = 0x64;
/// Receive configuration (end alignment, data offset, RX_DUMP).
pub const RX_CFG: u8 = 0x6C;
/// Transmit configuration (TX_ON, status FIFO dump).
pub const TX_CFG: u8 = 0x70;
/// Hardware configuration (soft reset, TX FIFO size).
pub const HW_CFG: u8 = 0x74;
/// RX datapath control (fast-forward past a frame).
pub const RX_DP_CTRL: u8 = 0x78;
/// RX FIFO information: status words used (23:16), data bytes used (15:0).
pub const RX_FIFO_INF: u8 = 0x7C;
/// TX FIFO information: status words used (23:16), data bytes free (15:0).
pub const TX_FIFO_INF: u8 = 0x80;
/// Power management control (READY bit).
pub const PMT_CTRL: u8 = 0x84;
/// A 25 MHz free-running counter, wrapping at 2^32.
pub const FREE_RUN: u8 = 0x9C;
/// Indirect access to the MAC registers: command.
pub const MAC_CSR_CMD: u8 = 0xA4;
/// Indirect access to the MAC registers: data.
pub const MAC_CSR_DATA: u8 = 0xA8;
/// EEPROM command (the MAC address loads from the EEPROM at reset).
pub const E2P_CMD: u8 = 0xB0;

/// The value [`BYTE_TEST`] reads.
pub const BYTE_TEST_VALUE: u32 = 0x8765_4321;
/// The chip id in the high half of [`ID_REV`].
pub const CHIP_ID: u32 = 0x0118;

/// [`HW_CFG`]: soft reset (self-clearing).
pub const HW_CFG_SRST: u32 = 1 << 0;
/// [`PMT_CTRL`]: the chip is ready for register access.
pub const PMT_CTRL_READY: u32 = 1 << 0;
/// [`TX_CFG`]: the transmitter is on.
pub const TX_CFG_TX_ON: u32 = 1 << 1;
/// [`RX_DP_CTRL`]: skip the rest of the frame at the head of the RX data FIFO.
pub const RX_DP_CTRL_FFWD: u32 = 1 << 31;

/// RX status: frame length in bytes, CRC included (bits 29:16).
pub const RX_STS_LEN_SHIFT: u32 = 16;
/// RX status: the mask of the frame length after the shift.
pub const RX_STS_LEN_MASK: u32 = 0x3FFF;
/// RX status: error summary (CRC, runt, too long, collision...).
pub const RX_STS_ES: u32 = 1 << 15;
/// TX status: error summary.
pub const TX_STS_ES: u32 = 1 << 15;

/// TX command A: interrupt on completion (unused; the driver polls).
pub const TX_CMD_A_IOC: u32 = 1 << 31;
/// TX command A: this buffer is the first segment of a frame.
pub const TX_CMD_A_FIRST: u32 = 1 << 13;
/// TX command A: this buffer is the last segment of a frame.
pub const TX_CMD_A_LAST: u32 = 1 << 12;

/// [`MAC_CSR_CMD`]: busy; set to start an access, clears when done.
pub const MAC_CSR_BUSY: u32 = 1 << 31;
/// [`MAC_CSR_CMD`]: read (set) or write (clear).
pub const MAC_CSR_READ: u32 = 1 << 30;

/// MAC register index: control.
pub const MAC_CR: u8 = 1;
/// MAC register index: address high (bytes 4 and 5).
pub const MAC_ADDRH: u8 = 2;
/// MAC register index: address low (bytes 0 to 3).
pub const MAC_ADDRL: u8 = 3;
/// MAC register index: MII (PHY) access.
pub const MAC_MII_ACC: u8 = 6;
/// MAC register index: MII (PHY) data.
pub const MAC_MII_DATA: u8 = 7;

/// MAC_CR: receive all frames regardless of address (promiscuous).
pub const MAC_CR_PRMS: u32 = 1 << 18;
/// MAC_CR: full duplex.
pub const MAC_CR_FDPX: u32 = 1 << 20;
/// MAC_CR: transmitter enabled.
pub const MAC_CR_TXEN: u32 = 1 << 3;
/// MAC_CR: receiver enabled.
pub const MAC_CR_RXEN: u32 = 1 << 2;

/// MII_ACC: the internal PHY's address (bits 15:11).
pub const MII_PHY_ADDR: u32 = 1 << 11;
/// MII_ACC: the PHY register index shift (bits 10:6).
pub const MII_REG_SHIFT: u32 = 6;
/// MII_ACC: write (set) or read (clear).
pub const MII_WRITE: u32 = 1 << 1;
/// MII_ACC: busy.
pub const MII_BUSY: u32 = 1 << 0;
/// PHY register: basic status.
pub const PHY_BSR: u32 = 1;
/// PHY basic status: link up.
pub const PHY_BSR_LINK: u32 = 1 << 2;
