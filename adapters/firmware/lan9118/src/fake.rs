//! A fake LAN9118 register block for the host-run tests: FIFOs, the indirect MAC and PHY
//! registers, and a log of what the driver did, after the datasheet's description.

use std::collections::VecDeque;
use std::vec::Vec;

use crate::regs::*;

/// A LAN9118 as its registers show it.
pub struct FakeChip {
    /// What `BYTE_TEST` reads.
    pub byte_test: u32,
    /// What `ID_REV` reads.
    pub id_rev: u32,
    /// Reads of `PMT_CTRL` before READY shows.
    pub not_ready_for: u32,
    /// The MAC address registers (as loaded from the EEPROM).
    pub mac: [u8; 6],
    /// MAC_CR.
    pub mac_cr: u32,
    /// Soft resets seen.
    pub resets: u32,
    /// TX_CFG.
    pub tx_cfg: u32,
    /// RX_CFG.
    pub rx_cfg: u32,
    /// INT_EN.
    pub int_en: u32,
    /// The PHY's basic status register.
    pub phy_bsr: u32,
    /// Status words of received frames.
    pub rx_status: VecDeque<u32>,
    /// Data words of received frames.
    pub rx_data: VecDeque<u32>,
    /// Frames the driver transmitted, as the chip reassembled them from the TX FIFO.
    pub sent: Vec<Vec<u8>>,
    /// TX status words not yet read.
    pub tx_status: VecDeque<u32>,
    /// Free bytes in the TX data FIFO.
    pub tx_free: u32,
    /// Set the error summary in TX status words.
    pub tx_fail: bool,
    /// The free-running counter.
    pub free_run: u32,
    mac_data: u32,
    mac_cmd: u32,
    mii_data: u32,
    tx_words: Vec<u32>,
}

impl FakeChip {
    /// A chip out of reset with address `mac` in its EEPROM, link up.
    pub fn new(mac: [u8; 6]) -> FakeChip {
        FakeChip {
            byte_test: BYTE_TEST_VALUE,
            id_rev: 0x0118_0001,
            not_ready_for: 3,
            mac,
            mac_cr: MAC_CR_PRMS,
            resets: 0,
            tx_cfg: 0,
            rx_cfg: 0,
            int_en: 0,
            phy_bsr: 0x7809 | PHY_BSR_LINK,
            rx_status: VecDeque::new(),
            rx_data: VecDeque::new(),
            sent: Vec::new(),
            tx_status: VecDeque::new(),
            tx_free: 4608,
            tx_fail: false,
            free_run: 0,
            mac_data: 0,
            mac_cmd: 0,
            mii_data: 0,
            tx_words: Vec::new(),
        }
    }

    /// Queue a received frame (without CRC); `error` sets its status's error summary.
    pub fn deliver(&mut self, frame: &[u8], error: bool) {
        let mut bytes = frame.to_vec();
        bytes.extend_from_slice(&[0xC0, 0xC1, 0xC2, 0xC3]); // the CRC, never checked
        let status = ((bytes.len() as u32) << RX_STS_LEN_SHIFT) | if error { RX_STS_ES } else { 0 };
        self.rx_status.push_back(status);
        for chunk in bytes.chunks(4) {
            let mut w = [0u8; 4];
            w[..chunk.len()].copy_from_slice(chunk);
            self.rx_data.push_back(u32::from_le_bytes(w));
        }
    }

    fn mac_access(&mut self, cmd: u32) {
        let index = (cmd & 0xFF) as u8;
        let read = cmd & MAC_CSR_READ != 0;
        let reg = match index {
            MAC_CR => &mut self.mac_cr,
            MAC_MII_DATA => &mut self.mii_data,
            MAC_ADDRL | MAC_ADDRH => {
                if read {
                    let m = self.mac;
                    self.mac_data = if index == MAC_ADDRL {
                        u32::from_le_bytes([m[0], m[1], m[2], m[3]])
                    } else {
                        u32::from_le_bytes([m[4], m[5], 0, 0])
                    };
                } else {
                    let b = self.mac_data.to_le_bytes();
                    if index == MAC_ADDRL {
                        self.mac[..4].copy_from_slice(&b);
                    } else {
                        self.mac[4..].copy_from_slice(&b[..2]);
                    }
                }
                return;
            }
            MAC_MII_ACC => {
                if read {
                    self.mac_data = 0; // never busy
                } else if self.mac_data & MII_WRITE == 0 {
                    let phy_reg = (self.mac_data >> MII_REG_SHIFT) & 0x1F;
                    self.mii_data = if phy_reg == PHY_BSR { self.phy_bsr } else { 0 };
                }
                return;
            }
            other => panic!("the driver touched MAC register {other}"),
        };
        if read {
            self.mac_data = *reg;
        } else {
            *reg = self.mac_data;
        }
    }

    fn push_tx(&mut self, word: u32) {
        self.tx_words.push(word);
        let a = self.tx_words[0];
        assert_eq!(
            a & (TX_CMD_A_FIRST | TX_CMD_A_LAST),
            TX_CMD_A_FIRST | TX_CMD_A_LAST,
            "one buffer per frame"
        );
        let len = (a & 0x7FF) as usize;
        if self.tx_words.len() < 2 + len.div_ceil(4) {
            return;
        }
        let b = self.tx_words[1];
        assert_eq!((b & 0x7FF) as usize, len, "command B's length matches A's");
        let mut frame: Vec<u8> = self.tx_words[2..]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        frame.truncate(len);
        self.sent.push(frame);
        let es = if self.tx_fail { TX_STS_ES } else { 0 };
        self.tx_status.push_back((b & 0xFFFF_0000) | es);
        self.tx_words.clear();
    }
}

impl Registers for FakeChip {
    fn read(&mut self, offset: u8) -> u32 {
        match offset {
            0x00..=0x1C => self.rx_data.pop_front().expect("RX data FIFO underrun"),
            RX_STATUS_FIFO => self.rx_status.pop_front().expect("RX status FIFO underrun"),
            TX_STATUS_FIFO => self.tx_status.pop_front().expect("TX status FIFO underrun"),
            ID_REV => self.id_rev,
            BYTE_TEST => self.byte_test,
            HW_CFG => 0x0005_0004,
            PMT_CTRL => {
                if self.not_ready_for > 0 {
                    self.not_ready_for -= 1;
                    0
                } else {
                    PMT_CTRL_READY
                }
            }
            RX_FIFO_INF => ((self.rx_status.len() as u32) << 16) | (4 * self.rx_data.len() as u32),
            TX_FIFO_INF => ((self.tx_status.len() as u32) << 16) | self.tx_free,
            FREE_RUN => self.free_run,
            MAC_CSR_CMD => self.mac_cmd,
            MAC_CSR_DATA => self.mac_data,
            INT_EN => self.int_en,
            other => panic!("the driver read register {other:#04x}"),
        }
    }

    fn write(&mut self, offset: u8, value: u32) {
        match offset {
            0x20..=0x3C => self.push_tx(value),
            HW_CFG => {
                if value & HW_CFG_SRST != 0 {
                    self.resets += 1;
                    self.mac_cr = MAC_CR_PRMS;
                    self.not_ready_for = 2;
                }
            }
            MAC_CSR_DATA => self.mac_data = value,
            MAC_CSR_CMD => {
                self.mac_cmd = value & !MAC_CSR_BUSY;
                if value & MAC_CSR_BUSY != 0 {
                    self.mac_access(value);
                }
            }
            TX_CFG => self.tx_cfg = value,
            RX_CFG => self.rx_cfg = value,
            INT_EN => self.int_en = value,
            INT_STS | IRQ_CFG => {}
            other => panic!("the driver wrote register {other:#04x}"),
        }
    }
}
