//! A UDP relay in front of the switch for some ranks, which can be told to stop passing
//! the switch's answers on: a rank that loses every Result from some point while the
//! others still get theirs.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A running relay; its threads end with the test process.
pub struct Relay {
    /// Where ranks send to instead of the switch.
    pub addr: SocketAddr,
    /// Set: the switch's datagrams to the relayed ranks are dropped.
    pub mute: Arc<AtomicBool>,
}

impl Relay {
    /// Relay datagrams between ranks and the switch at `switch`.
    pub fn start(switch: SocketAddr) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = front.local_addr().unwrap();
        let mute = Arc::new(AtomicBool::new(false));
        let muted = Arc::clone(&mute);
        std::thread::spawn(move || {
            // One socket towards the switch per rank-side address, so answers find their way.
            let mut back: HashMap<SocketAddr, UdpSocket> = HashMap::new();
            let mut buf = [0u8; 65536];
            while let Ok((n, from)) = front.recv_from(&mut buf) {
                let up = back.entry(from).or_insert_with(|| {
                    let up = UdpSocket::bind("127.0.0.1:0").unwrap();
                    up.connect(switch).unwrap();
                    let (up2, front2, muted) = (
                        up.try_clone().unwrap(),
                        front.try_clone().unwrap(),
                        Arc::clone(&muted),
                    );
                    std::thread::spawn(move || {
                        let _ = up2.set_read_timeout(Some(Duration::from_secs(60)));
                        let mut buf = [0u8; 65536];
                        while let Ok(n) = up2.recv(&mut buf) {
                            if !muted.load(Ordering::SeqCst) {
                                let _ = front2.send_to(&buf[..n], from);
                            }
                        }
                    });
                    up
                });
                let _ = up.send(&buf[..n]);
            }
        });
        Relay { addr, mute }
    }
}
