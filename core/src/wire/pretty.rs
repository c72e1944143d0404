//! A datagram as one line of text, for packet traces (the idea of smoltcp's
//! `PrettyPrinter`): whatever the bytes, [`Pretty`] prints something and never panics — the
//! message's `Display` when it parses, the parse error and the length when it does not.
//!
//! An adapter traces each datagram it receives and sends with it, under the log target
//! [`TRACE_TARGET`], so that `RUST_LOG=switchml::packet=trace` shows the protocol at work:
//!
//! ```text
//! 127.0.0.1:40112 → switch  Contribution job 1 rank 0 slot 3 ver 1 seq 9 count 256 exp 4 …
//! switch → 127.0.0.1:40112  Result job 1 rank 65535 slot 3 ver 1 seq 9 count 256 exp 5 …
//! ```

use super::Message;

/// The log target every packet trace uses, on the worker and the switch side.
pub const TRACE_TARGET: &str = "switchml::packet";

/// Display a datagram: its message, or why it is not one.
#[derive(Debug, Clone, Copy)]
pub struct Pretty<'a>(pub &'a [u8]);

impl core::fmt::Display for Pretty<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match Message::parse(self.0) {
            Ok(message) => message.fmt(f),
            Err(e) => write!(f, "not a message ({e}): {} bytes", self.0.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::ToString;

    use super::*;

    #[test]
    fn a_message_prints_its_repr_and_junk_its_error() {
        let abort = [
            1, 0x14, 0, 7, 0, 1, 6, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2,
        ];
        let line = Pretty(&abort).to_string();
        assert!(line.starts_with("Abort"), "{line}");
        assert!(line.contains("job 7"), "{line}");
        assert_eq!(
            Pretty(&[1, 0x14, 0]).to_string(),
            "not a message (message truncated): 3 bytes"
        );
        assert!(Pretty(&[9; 40]).to_string().contains("protocol version 9"));
    }
}
