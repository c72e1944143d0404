//! # switchml-lan9118
//!
//! A [`smoltcp::phy::Device`] for the SMSC LAN9118 Ethernet controller: the NIC of Arm's
//! MPS2 FPGA boards (AN385, AN386, ...), which QEMU's `mps2-an385` and `mps2-an386` machines
//! emulate at [`Mmio::MPS2_BASE`]. Written against the controller's register map, with no
//! vendor HAL, and polled: no interrupt is used.
//!
//! The chip moves frames through FIFOs, one 32-bit word at a time:
//!
//! - **Receive**: each frame leaves a status word in the RX status FIFO (its length, CRC
//!   included, and an error summary) and its bytes, little-endian, in the RX data FIFO.
//!   [`Device::receive`] pops one status word and that many bytes into a buffer of the
//!   driver's, drops frames with errors, and hands smoltcp the frame without its CRC.
//! - **Transmit**: a frame is two command words (`A`: first/last segment and the buffer
//!   length; `B`: a tag and the frame length) then its bytes; each sent frame leaves a word
//!   in the TX status FIFO, which the driver drains after every frame.
//! - **Set-up** ([`Lan9118::new`]): wait for the chip to be ready, soft-reset it, check the
//!   byte-order test and chip id, read the MAC address the EEPROM loaded (or set one),
//!   and turn the transmitter and the receiver on in full duplex.
//!
//! All register access goes through the [`Registers`] trait: [`Mmio`] on hardware, a fake
//! register block in the unit tests (which run on the host). The driver also exposes the
//! chip's 25 MHz free-running counter ([`FreeRunCounter`]), a monotonic tick source for a
//! board that has no other.
//!
//! ## Features
//!
//! - `defmt`: `defmt::Format` on [`Error`] and [`Counters`].
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

pub mod regs;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use regs::*;
pub use regs::{Mmio, Registers};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

/// The largest frame smoltcp may send or receive: 1500 bytes of IP and the 14-byte
/// Ethernet header (the CRC is the chip's).
pub const MTU: usize = 1514;

/// Buffer for one frame and its CRC, a whole number of FIFO words.
const FRAME_BUF: usize = 1536;

/// Spins on a busy bit before the driver calls the chip stuck.
const SPIN_LIMIT: u32 = 100_000;

/// Why the controller could not be brought up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// `BYTE_TEST` did not read 0x87654321: no LAN9118 at this address, or the bus is not
    /// 32 bits wide.
    NotFound {
        /// What `BYTE_TEST` read.
        byte_test: u32,
    },
    /// `ID_REV` names another chip.
    WrongChip {
        /// What `ID_REV` read.
        id_rev: u32,
    },
    /// A busy or not-ready bit never cleared.
    Stuck {
        /// The register that stayed busy.
        register: u8,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::NotFound { byte_test } => {
                write!(f, "no LAN9118: BYTE_TEST reads {byte_test:#010x}")
            }
            Error::WrongChip { id_rev } => write!(f, "not a LAN9118: ID_REV reads {id_rev:#010x}"),
            Error::Stuck { register } => write!(f, "LAN9118 register {register:#04x} stays busy"),
        }
    }
}

/// What the driver has seen, for a firmware's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Frames handed to smoltcp.
    pub rx_frames: u32,
    /// Frames the chip flagged with an error, or too short or too long, dropped.
    pub rx_dropped: u32,
    /// Frames written to the TX FIFO.
    pub tx_frames: u32,
    /// TX status words with the error summary set.
    pub tx_errors: u32,
    /// Frames dropped because the TX FIFO stayed full.
    pub tx_full: u32,
}

/// A LAN9118 behind register access `R`, as a smoltcp Ethernet device.
pub struct Lan9118<R: Registers> {
    regs: R,
    mac: [u8; 6],
    rx: [u8; FRAME_BUF],
    tx: [u8; FRAME_BUF],
    counters: Counters,
}

impl<R: Registers> Lan9118<R> {
    /// Bring the controller up: reset it, check it is a LAN9118, take the MAC address the
    /// EEPROM loaded (else `fallback_mac`, written to the chip), and enable TX and RX.
    pub fn new(mut regs: R, fallback_mac: [u8; 6]) -> Result<Self, Error> {
        // The datasheet's order: PMT_CTRL.READY before any other access but BYTE_TEST.
        let byte_test = regs.read(BYTE_TEST);
        if byte_test != BYTE_TEST_VALUE {
            return Err(Error::NotFound { byte_test });
        }
        spin_until(&mut regs, PMT_CTRL, |v| v & PMT_CTRL_READY != 0)?;
        regs.write(HW_CFG, HW_CFG_SRST);
        spin_until(&mut regs, HW_CFG, |v| v & HW_CFG_SRST == 0)?;
        spin_until(&mut regs, PMT_CTRL, |v| v & PMT_CTRL_READY != 0)?;
        let id_rev = regs.read(ID_REV);
        if id_rev >> 16 != CHIP_ID {
            return Err(Error::WrongChip { id_rev });
        }
        // Polled: no interrupt line, every status bit cleared.
        regs.write(INT_EN, 0);
        regs.write(INT_STS, u32::MAX);
        regs.write(IRQ_CFG, 0);
        let mut nic = Lan9118 {
            regs,
            mac: [0; 6],
            rx: [0; FRAME_BUF],
            tx: [0; FRAME_BUF],
            counters: Counters::default(),
        };
        let low = nic.mac_read(MAC_ADDRL)?.to_le_bytes();
        let high = nic.mac_read(MAC_ADDRH)?.to_le_bytes();
        let loaded = [low[0], low[1], low[2], low[3], high[0], high[1]];
        nic.mac = if loaded == [0; 6] || loaded == [0xFF; 6] {
            let m = fallback_mac;
            nic.mac_write(MAC_ADDRL, u32::from_le_bytes([m[0], m[1], m[2], m[3]]))?;
            nic.mac_write(MAC_ADDRH, u32::from_le_bytes([m[4], m[5], 0, 0]))?;
            m
        } else {
            loaded
        };
        // No data offset, no end padding: a frame's words follow its status word as they are.
        nic.regs.write(RX_CFG, 0);
        nic.regs.write(TX_CFG, TX_CFG_TX_ON);
        // Our address and broadcast only (PRMS off), full duplex, both directions on.
        nic.mac_write(MAC_CR, MAC_CR_FDPX | MAC_CR_TXEN | MAC_CR_RXEN)?;
        Ok(nic)
    }

    /// Return the MAC address in use.
    pub fn mac_address(&self) -> [u8; 6] {
        self.mac
    }

    /// Return the counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Return whether the internal PHY reports a link.
    pub fn link_up(&mut self) -> bool {
        self.phy_read(PHY_BSR)
            .is_ok_and(|bsr| bsr & PHY_BSR_LINK != 0)
    }

    fn mac_read(&mut self, index: u8) -> Result<u32, Error> {
        spin_until(&mut self.regs, MAC_CSR_CMD, |v| v & MAC_CSR_BUSY == 0)?;
        self.regs
            .write(MAC_CSR_CMD, MAC_CSR_BUSY | MAC_CSR_READ | u32::from(index));
        spin_until(&mut self.regs, MAC_CSR_CMD, |v| v & MAC_CSR_BUSY == 0)?;
        Ok(self.regs.read(MAC_CSR_DATA))
    }

    fn mac_write(&mut self, index: u8, value: u32) -> Result<(), Error> {
        spin_until(&mut self.regs, MAC_CSR_CMD, |v| v & MAC_CSR_BUSY == 0)?;
        self.regs.write(MAC_CSR_DATA, value);
        self.regs
            .write(MAC_CSR_CMD, MAC_CSR_BUSY | u32::from(index));
        spin_until(&mut self.regs, MAC_CSR_CMD, |v| v & MAC_CSR_BUSY == 0)
    }

    fn phy_read(&mut self, reg: u32) -> Result<u32, Error> {
        self.mac_write(
            MAC_MII_ACC,
            MII_PHY_ADDR | (reg << MII_REG_SHIFT) | MII_BUSY,
        )?;
        for _ in 0..SPIN_LIMIT {
            if self.mac_read(MAC_MII_ACC)? & MII_BUSY == 0 {
                return Ok(self.mac_read(MAC_MII_DATA)? & 0xFFFF);
            }
        }
        Err(Error::Stuck {
            register: MAC_MII_ACC,
        })
    }

    /// Pop frames until a good one is in `rx`; return its length without the CRC.
    fn next_frame(&mut self) -> Option<usize> {
        loop {
            let used = (self.regs.read(RX_FIFO_INF) >> 16) & 0xFF;
            if used == 0 {
                return None;
            }
            let status = self.regs.read(RX_STATUS_FIFO);
            let len = ((status >> RX_STS_LEN_SHIFT) & RX_STS_LEN_MASK) as usize;
            let words = len.div_ceil(4);
            if status & RX_STS_ES != 0 || !(14 + 4..=FRAME_BUF).contains(&len) {
                // Read the words out: the FIFO must stay in step with its status words.
                for _ in 0..words {
                    self.regs.read(RX_DATA_FIFO);
                }
                self.counters.rx_dropped += 1;
                continue;
            }
            for word in self.rx[..4 * words].chunks_exact_mut(4) {
                word.copy_from_slice(&self.regs.read(RX_DATA_FIFO).to_le_bytes());
            }
            self.counters.rx_frames += 1;
            return Some(len - 4);
        }
    }
}

/// Room a frame of `len` bytes takes in the TX data FIFO: two command words and its words.
fn tx_room(len: usize) -> u32 {
    8 + 4 * len.div_ceil(4) as u32
}

fn tx_free(regs: &mut impl Registers) -> u32 {
    regs.read(TX_FIFO_INF) & 0xFFFF
}

fn spin_until(
    regs: &mut impl Registers,
    register: u8,
    done: impl Fn(u32) -> bool,
) -> Result<(), Error> {
    for _ in 0..SPIN_LIMIT {
        if done(regs.read(register)) {
            return Ok(());
        }
    }
    Err(Error::Stuck { register })
}

impl<R: Registers> Device for Lan9118<R> {
    type RxToken<'a>
        = RxToken<'a>
    where
        R: 'a;
    type TxToken<'a>
        = TxToken<'a, R>
    where
        R: 'a;

    fn receive(&mut self, _timestamp: Instant) -> Option<(RxToken<'_>, TxToken<'_, R>)> {
        let len = self.next_frame()?;
        let Lan9118 {
            regs,
            rx,
            tx,
            counters,
            ..
        } = self;
        Some((
            RxToken { frame: &rx[..len] },
            TxToken {
                regs,
                buf: tx,
                counters,
            },
        ))
    }

    fn transmit(&mut self, _timestamp: Instant) -> Option<TxToken<'_, R>> {
        if tx_free(&mut self.regs) < tx_room(MTU) {
            return None;
        }
        Some(TxToken {
            regs: &mut self.regs,
            buf: &mut self.tx,
            counters: &mut self.counters,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MTU;
        caps.max_burst_size = Some(1);
        caps
    }
}

/// A received frame, already out of the chip.
pub struct RxToken<'a> {
    frame: &'a [u8],
}

impl phy::RxToken for RxToken<'_> {
    fn consume<T, F>(self, f: F) -> T
    where
        F: FnOnce(&[u8]) -> T,
    {
        f(self.frame)
    }
}

/// Room to build one frame, written to the TX FIFO on `consume`.
pub struct TxToken<'a, R: Registers> {
    regs: &'a mut R,
    buf: &'a mut [u8; FRAME_BUF],
    counters: &'a mut Counters,
}

impl<R: Registers> phy::TxToken for TxToken<'_, R> {
    fn consume<T, F>(self, len: usize, f: F) -> T
    where
        F: FnOnce(&mut [u8]) -> T,
    {
        let len = len.min(MTU);
        let out = f(&mut self.buf[..len]);
        // A token from `receive` comes without a room check: wait for the FIFO to drain.
        let room = tx_room(len);
        if !(0..SPIN_LIMIT).any(|_| tx_free(self.regs) >= room) {
            self.counters.tx_full += 1;
            return out;
        }
        let len32 = len as u32;
        self.regs
            .write(TX_DATA_FIFO, TX_CMD_A_FIRST | TX_CMD_A_LAST | len32);
        let tag = self.counters.tx_frames & 0xFFFF;
        self.regs.write(TX_DATA_FIFO, (tag << 16) | len32);
        for word in self.buf[..len].chunks(4) {
            let mut bytes = [0u8; 4];
            bytes[..word.len()].copy_from_slice(word);
            self.regs.write(TX_DATA_FIFO, u32::from_le_bytes(bytes));
        }
        self.counters.tx_frames = self.counters.tx_frames.wrapping_add(1);
        // Drain the status FIFO so that it never fills (a full one stops the transmitter).
        while (self.regs.read(TX_FIFO_INF) >> 16) & 0xFF != 0 {
            if self.regs.read(TX_STATUS_FIFO) & TX_STS_ES != 0 {
                self.counters.tx_errors += 1;
            }
        }
        out
    }
}

/// The chip's free-running counter: 25 MHz, wrapping at 2^32 (about every 172 s).
pub struct FreeRunCounter<R: Registers> {
    regs: R,
}

impl<R: Registers> FreeRunCounter<R> {
    /// Ticks per second.
    pub const HZ: u32 = 25_000_000;

    /// Read the counter through `regs` (e.g. [`Mmio::alias`] of the driver's window).
    pub fn new(regs: R) -> Self {
        FreeRunCounter { regs }
    }

    /// Return the current count.
    pub fn ticks(&mut self) -> u32 {
        self.regs.read(FREE_RUN)
    }
}
