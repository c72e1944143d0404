//! The Tofino 1 rules that stopped bf-p4c 9.13.4 on the TNA program (issue 31), checked on
//! the program's text without the compiler, in both builds (flat, and `-DSWITCHML_TIERS`):
//!
//! - the egress parser's longest path, intrinsic metadata included, is at most 160 bytes
//!   (bf-p4c's `ParserEnforceDepthReq`: the sum of what each state extracts or skips);
//! - a `ParserCounter` is loaded only in a form bf-p4c lowers (`set` of a constant, of a
//!   whole header field, or of a whole field with constant max, rotate, mask and add), with
//!   at most 127 (the counter is 8 bits, signed);
//! - a `RegisterAction` compares at most twice (a Tofino 1 stateful ALU has two comparison
//!   units), masks in a comparison only with a constant, gives its output from one source
//!   (besides 0), and a register has at most four of them;
//! - a gateway (an `if` of a control) negates no `!=` inside a longer row: bf-p4c merges an
//!   `if` whose then-branch is one `if` into one gateway, splits `||` into rows, and turns a
//!   row `X && a != c` into `X && a == c` followed by copies of the rows below it, giving up
//!   ("gateway condition too complex") after two rounds. The rule is conservative: a `!=`
//!   stands alone in its row, or its row is the gateway's last;
//! - every field of `metadata_t` is written by the ingress parser's start state before any
//!   control reads it (Tofino does not zero metadata), and read there only after its write;
//! - p4test's warnings: every constant is used, and a RegisterAction reads nothing p4test
//!   sees as uninitialised (a control's local, or a parameter passed anything but a whole
//!   field of `hdr` or `meta`).
//!
//! Each rule also runs on a small planted violation, which it must report. The figures the
//! compiler prints (stages, SRAM, PHV) replace none of this; they need it to compile first.
//! The rules live in `tofino/`, one module each with its tests; `p4text/` reads the text.

mod p4text;
mod tofino;
