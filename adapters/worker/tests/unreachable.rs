//! A worker pointed at an address where nothing listens fails at once, with an error that
//! names the address, instead of waiting out its whole join timeout: the kernel reports
//! ICMP port unreachable to each lane's connected socket. (Before, it waited the full join
//! timeout and then reported that the switch did not answer.)

mod common;

use std::net::UdpSocket;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use switchml_worker::{Communicator, Error};

#[test]
fn joining_where_nothing_listens_fails_fast_naming_the_address() {
    // Bound and released: nothing listens there.
    let addr = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = config(0, 2, addr)
        .into_builder()
        .join_timeout(Duration::from_secs(60))
        .build();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Communicator::connect(&config).map(|_| ()));
    });
    // A bound on the behaviour, not a timing: it fails well inside its 60 s join timeout.
    let outcome = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("connect must not wait out its join timeout");
    let e = outcome.expect_err("nothing listens there");
    assert_eq!(e, Error::SwitchUnreachable { addr });
    let text = e.to_string();
    assert!(
        text.contains(&format!("nothing listens at {addr}")),
        "{text}"
    );
}
