//! The XDP program, assembled here as the 30-odd eBPF instructions it is, so that no C
//! compiler, `bpf-linker` or object loader is needed. In C it would read:
//!
//! ```c
//! int steer(struct xdp_md *ctx) {
//!     void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
//!     if (data + 42 > end || data + MAX_FRAME < end) return XDP_PASS;   // short or too long
//!     if (eth->h_proto != htons(ETH_P_IP) || ip->ihl_version != 0x45   // IPv4, no options
//!         || ip->protocol != IPPROTO_UDP || (ip->frag_off & htons(0x3fff)))  // whole UDP
//!         return XDP_PASS;
//!     __u32 queue = ctx->rx_queue_index;
//!     __u32 *ports = bpf_map_lookup_elem(&ports, &queue);              // this queue's ports
//!     __u16 dest = ntohs(udp->dest);                                   // first | last << 16
//!     if (!ports || dest < (*ports & 0xffff) || dest > (*ports >> 16)) return XDP_PASS;
//!     return bpf_redirect_map(&xsks, queue, XDP_PASS);                 // no socket: pass
//! }
//! ```
//!
//! A queue's entry in the port map is a range, so that one socket can take every port of a
//! protocol that uses several (the p4app dialect's 0xBEE0–0xBEEF); the daemon's and the
//! worker's sockets steer a range of one port.
//!
//! Everything else — ARP, ICMP, other ports, IP options, fragments, a datagram that arrived
//! on another queue than its socket's — goes to the kernel as if no program were there, so
//! the interface keeps its address, its neighbour table and its ordinary sockets.

/// One eBPF instruction (`struct bpf_insn`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Insn {
    code: u8,
    /// Destination register in the low nibble, source in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

/// The longest frame the program steers: a frame longer than a UMEM chunk goes to the kernel.
pub const MAX_FRAME: i32 = crate::xsk::FRAME_SIZE as i32;

const XDP_PASS: i32 = 2;
const HELPER_MAP_LOOKUP: i32 = 1;
const HELPER_REDIRECT_MAP: i32 = 51;
/// `BPF_PSEUDO_MAP_FD`: the 64-bit immediate is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// Instructions with forward jumps to one `pass` label, patched at the end.
struct Asm {
    insns: Vec<Insn>,
    to_pass: Vec<usize>,
}

impl Asm {
    fn op(&mut self, i: Insn) {
        self.insns.push(i);
    }
    /// A conditional jump (`code`) to the `pass` label.
    fn pass_if(&mut self, code: u8, dst: u8, src: u8, imm: i32) {
        self.to_pass.push(self.insns.len());
        self.op(insn(code, dst, src, 0, imm));
    }
    /// `dst = map` (a two-instruction 64-bit immediate).
    fn map(&mut self, dst: u8, fd: i32) {
        self.op(insn(0x18, dst, PSEUDO_MAP_FD, 0, fd));
        self.op(Insn::default());
    }
}

/// Assemble the program over the `ports` array map and the `xsks` XSKMAP (descriptors).
pub fn steer_program(ports: i32, xsks: i32) -> Vec<Insn> {
    const MOV64_REG: u8 = 0xbf;
    const MOV64_IMM: u8 = 0xb7;
    const ADD64_IMM: u8 = 0x07;
    const AND64_IMM: u8 = 0x57;
    const RSH64_IMM: u8 = 0x77;
    const LDX_W: u8 = 0x61;
    const LDX_H: u8 = 0x69;
    const LDX_B: u8 = 0x71;
    const STX_W: u8 = 0x63;
    const TO_BE: u8 = 0xdc;
    const JGT_REG: u8 = 0x2d;
    const JNE_IMM: u8 = 0x55;
    const JEQ_IMM: u8 = 0x15;
    const JLT_REG: u8 = 0xad;
    const CALL: u8 = 0x85;
    const EXIT: u8 = 0x95;
    let mut a = Asm {
        insns: Vec::with_capacity(40),
        to_pass: Vec::new(),
    };
    a.op(insn(MOV64_REG, 6, 1, 0, 0)); // r6 = ctx
    a.op(insn(LDX_W, 2, 6, 0, 0)); // r2 = data
    a.op(insn(LDX_W, 3, 6, 4, 0)); // r3 = data_end
    a.op(insn(MOV64_REG, 4, 2, 0, 0));
    a.op(insn(ADD64_IMM, 4, 0, 0, 42));
    a.pass_if(JGT_REG, 4, 3, 0); // data + 42 > end
    a.op(insn(MOV64_REG, 4, 2, 0, 0));
    a.op(insn(ADD64_IMM, 4, 0, 0, MAX_FRAME));
    a.pass_if(JGT_REG, 3, 4, 0); // end > data + MAX_FRAME
                                 // Loads read network-order bytes as little-endian integers: compare with swapped values.
    a.op(insn(LDX_H, 5, 2, 12, 0));
    a.pass_if(JNE_IMM, 5, 0, 0x0008); // EtherType IPv4
    a.op(insn(LDX_B, 5, 2, 14, 0));
    a.pass_if(JNE_IMM, 5, 0, 0x45); // version 4, 20-byte header
    a.op(insn(LDX_B, 5, 2, 23, 0));
    a.pass_if(JNE_IMM, 5, 0, 17); // UDP
    a.op(insn(LDX_H, 5, 2, 20, 0));
    a.op(insn(AND64_IMM, 5, 0, 0, 0xff3f)); // MF and fragment offset
    a.pass_if(JNE_IMM, 5, 0, 0);
    a.op(insn(LDX_H, 8, 2, 36, 0)); // r8 = UDP destination port
    a.op(insn(TO_BE, 8, 0, 0, 16));
    a.op(insn(LDX_W, 7, 6, 16, 0)); // r7 = rx_queue_index
    a.op(insn(STX_W, 10, 7, -4, 0));
    a.map(1, ports);
    a.op(insn(MOV64_REG, 2, 10, 0, 0));
    a.op(insn(ADD64_IMM, 2, 0, 0, -4));
    a.op(insn(CALL, 0, 0, 0, HELPER_MAP_LOOKUP));
    a.pass_if(JEQ_IMM, 0, 0, 0);
    a.op(insn(LDX_W, 1, 0, 0, 0)); // r1 = first | last << 16
    a.op(insn(MOV64_REG, 2, 1, 0, 0));
    a.op(insn(AND64_IMM, 2, 0, 0, 0xffff));
    a.pass_if(JLT_REG, 8, 2, 0); // below this queue's first port
    a.op(insn(RSH64_IMM, 1, 0, 0, 16));
    a.pass_if(JGT_REG, 8, 1, 0); // above its last
    a.map(1, xsks);
    a.op(insn(MOV64_REG, 2, 7, 0, 0));
    a.op(insn(MOV64_IMM, 3, 0, 0, XDP_PASS));
    a.op(insn(CALL, 0, 0, 0, HELPER_REDIRECT_MAP));
    a.op(insn(EXIT, 0, 0, 0, 0));
    let pass = a.insns.len();
    a.op(insn(MOV64_IMM, 0, 0, 0, XDP_PASS));
    a.op(insn(EXIT, 0, 0, 0, 0));
    for at in a.to_pass {
        // Jumps count from the next instruction; the program is far shorter than i16::MAX.
        a.insns[at].off = (pass - at - 1) as i16;
    }
    a.insns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_on_the_pass_return() {
        let p = steer_program(7, 8);
        let pass = p.len() - 2;
        assert_eq!(p[pass], insn(0xb7, 0, 0, 0, XDP_PASS));
        for (i, x) in p.iter().enumerate() {
            let conditional = x.code & 0x07 == 0x05 && !matches!(x.code, 0x85 | 0x95);
            if conditional {
                assert_eq!(i + 1 + x.off as usize, pass, "jump at {i}");
            }
        }
        // Both maps are referenced by descriptor.
        let maps: Vec<i32> = p.iter().filter(|x| x.code == 0x18).map(|x| x.imm).collect();
        assert_eq!(maps, [7, 8]);
    }
}
