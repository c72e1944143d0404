//! End to end over veths in network namespaces (root only; issue 30): the dialect switch
//! with `--io xdp` takes the workers' frames through AF_XDP — exact sums, and counters that
//! say the frames really went that way (the test fails if AF_XDP is never used) — and falls
//! back to its AF_PACKET socket on an interface that refuses XDP. The topology is
//! `common`'s; every namespace is `px-…`. Skipped, with a message, when not root or when
//! `ip netns` fails.

mod common;

use common::*;
use switchml_core::p4app::P4appSize;
use switchml_p4app_switch::Stats;

const XDP: SwitchSide = SwitchSide {
    prefix: "px-",
    queues: 1,
    xdp: true,
    bridge: false,
    busy_queue: None,
};

/// The counters of the frames the engine saw and sent add up over the two paths.
fn paths_add_up(s: &Stats) {
    let p = s.paths;
    assert_eq!(
        p.received_af_xdp + p.received_af_packet,
        s.frames.received,
        "{s:?}"
    );
    assert_eq!(p.sent_af_xdp + p.sent_af_packet, s.frames.sent, "{s:?}");
}

/// Two workers and the intruder's junk, one queue: every dialect frame is steered to the
/// AF_XDP socket and answered through it; ARP, the wrong port and the frames that do not
/// parse (IPv4 with a too-long header, version 6) are passed to the kernel and still reach
/// the switch through its AF_PACKET socket, counted as on the AF_PACKET path.
#[test]
fn two_workers_through_af_xdp_with_junk() {
    let Some((s, queues)) = scenario(XDP, "a", 2, P4appSize::Elements64, 0) else {
        return;
    };
    assert_eq!(queues, 1, "{s:?}");
    paths_add_up(&s);
    let p = s.paths;
    assert!(p.received_af_xdp > 0 && p.sent_af_xdp > 0, "{s:?}");
    // Only ARP was answered through the AF_PACKET socket: no reply went out twice.
    assert_eq!(p.sent_af_packet, s.frames.arp_replies, "{s:?}");
    // ARP requests, the wrong port and the two frames that do not parse came that way.
    assert!(p.received_af_packet >= s.frames.arp_replies + 3, "{s:?}");
    // A request from an unregistered sender is still a dialect frame: steered, dropped.
    assert_eq!(s.frames.unknown_sender, 1, "{s:?}");
}

/// Two queues a veth, an AF_XDP socket on each, 256 values: which queue a veth hands a frame
/// to follows the sender's CPU, so the split between the queues is the scheduler's; the
/// sums are exact whatever it is.
#[test]
fn two_queues_each_with_an_af_xdp_socket_sum_exactly() {
    let side = SwitchSide { queues: 2, ..XDP };
    let Some((s, queues)) = scenario(side, "q", 2, P4appSize::Elements256, 0) else {
        return;
    };
    assert_eq!(queues, 2, "{s:?}");
    paths_add_up(&s);
    assert!(s.paths.received_af_xdp > 0, "{s:?}");
}

/// Two queues, the second held by another AF_XDP socket: the switch binds only the first,
/// and whatever lands on the second (the veth picks by the sender's CPU, so how much is
/// the scheduler's) finds no port range in the program's map, is passed to the kernel and
/// read from the AF_PACKET socket: no frame is lost, the sums are exact.
#[test]
fn frames_on_a_queue_without_the_switch_s_socket_reach_its_af_packet_socket() {
    let side = SwitchSide {
        queues: 2,
        busy_queue: Some(1),
        ..XDP
    };
    let Some((s, queues)) = scenario(side, "u", 2, P4appSize::Elements64, 0) else {
        return;
    };
    assert_eq!(queues, 1, "{s:?}");
    paths_add_up(&s);
}

/// A bridge has no native XDP hook: the switch says why (a warning) and serves every frame
/// on its AF_PACKET socket, exactly.
#[test]
fn an_interface_that_refuses_xdp_falls_back_to_the_af_packet_socket() {
    let side = SwitchSide {
        bridge: true,
        ..XDP
    };
    let Some((s, queues)) = scenario(side, "f", 2, P4appSize::Elements64, 0) else {
        return;
    };
    assert_eq!(queues, 0, "{s:?}");
    paths_add_up(&s);
    assert_eq!((s.paths.received_af_xdp, s.paths.sent_af_xdp), (0, 0));
    assert!(s.paths.received_af_packet > 0 && s.paths.sent_af_packet > 0);
}
