use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::sync::Arc;

use super::*;
use crate::client::ControlClient;
use crate::proto::PacketSize;

const MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];
const IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 254);

fn worker(i: u8) -> Peer {
    Peer {
        mac: [2, 0, 0, 0, 0, i + 1],
        ip: Ipv4Addr::new(10, 77, 0, i + 1),
    }
}

/// Three clients join in the original client's order over loopback: each learns the
/// switch's addresses, and the data plane is told Reset first, then every rank.
#[test]
fn three_ranks_join_in_the_clients_order() {
    let (tx, rx) = mpsc::channel();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let (thread, shutdown) = spawn(listener, Arc::new(Controller::new(tx, MAC, IP))).unwrap();
    let ranks: Vec<_> = (0..3u8)
        .map(|r| {
            std::thread::spawn(move || {
                let mut c = ControlClient::connect(addr).unwrap();
                // Only rank 0's session id counts: the others learn it by the broadcast.
                let id = if r == 0 { 77 } else { 0 };
                let switch = c
                    .join(id, u32::from(r), 3, worker(r), PacketSize::Mtu256)
                    .unwrap();
                let root = c
                    .broadcast(1000 + u64::from(r), u32::from(r), 3, 2)
                    .unwrap();
                (switch, root)
            })
        })
        .collect();
    for h in ranks {
        let (switch, root) = h.join().unwrap();
        assert_eq!(switch, Peer { mac: MAC, ip: IP });
        assert_eq!(root, 1002);
    }
    let commands: Vec<Command> = rx.try_iter().collect();
    assert_eq!(commands[0], Command::Reset { workers: 3 });
    assert_eq!(commands.len(), 4);
    for r in 0..3u8 {
        assert!(commands.contains(&Command::Register {
            rank: u16::from(r),
            peer: worker(r)
        }));
    }
    let _ = shutdown.send(());
    thread.join().unwrap();
}

#[test]
fn a_session_beyond_the_bitmaps_or_a_rank_beyond_it_is_refused() {
    let (tx, _rx) = mpsc::channel();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (thread, shutdown) = spawn(listener, Arc::new(Controller::new(tx, MAC, IP))).unwrap();
    let mut c = ControlClient::connect(addr).unwrap();
    assert!(c
        .udp_session(1, 0, 65, worker(0), PacketSize::Mtu256)
        .is_err());
    assert!(c
        .udp_session(1, 3, 3, worker(0), PacketSize::Mtu256)
        .is_err());
    assert!(c
        .udp_session(1, 0, 0, worker(0), PacketSize::Mtu256)
        .is_err());
    assert!(c
        .udp_session(1, 0, 1, worker(0), PacketSize::Mtu256)
        .is_ok());
    drop(c);
    let _ = shutdown.send(());
    thread.join().unwrap();
}

#[test]
fn macs_travel_as_48_bit_integers() {
    assert_eq!(mac_to_u64([2, 0, 0, 0, 0, 0xfe]), 0x0200_0000_00fe);
    assert_eq!(mac_from_u64(0xffff_0200_0000_00fe), [2, 0, 0, 0, 0, 0xfe]);
}

/// The original client keeps its channel open, and may wait in a barrier: neither holds up
/// the switch's stop.
#[test]
fn an_open_channel_and_a_waiting_call_do_not_hold_up_the_stop() {
    let (tx, _rx) = mpsc::channel();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (thread, shutdown) = spawn(listener, Arc::new(Controller::new(tx, MAC, IP))).unwrap();
    let mut idle = ControlClient::connect(addr).unwrap();
    idle.barrier(1).unwrap();
    let waiting = std::thread::spawn(move || {
        let mut c = ControlClient::connect(addr).unwrap();
        c.barrier(2).is_err()
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    let _ = shutdown.send(());
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        thread.join().unwrap();
        let _ = done_tx.send(());
    });
    assert!(
        done_rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .is_ok(),
        "the control plane did not stop"
    );
    assert!(waiting.join().unwrap(), "the waiting call should fail");
    drop(idle);
}
