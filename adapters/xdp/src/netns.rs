//! Network namespaces joined by veths, for tests and benchmarks of the AF_XDP path (root
//! only): a hub namespace with a bridge, and one namespace per host, each with a veth
//! `NAME` whose other end is on the bridge. Everything is removed when the [`Net`] drops,
//! on a failing test's unwind too (deleting a namespace deletes its veths).

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::process::Command;

/// Namespaces built with `ip`, removed on drop.
#[derive(Debug)]
pub struct Net {
    prefix: String,
    hosts: Vec<String>,
}

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output()?;
    match out.status.success() {
        true => Ok(()),
        false => Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// Whether this process may build namespaces (is root).
pub fn can_build() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl Net {
    /// [`Net::build`] for a test of `what` named by `tag` (the prefix is `xd-{tag}{pid}`),
    /// or `None` with the reason printed if this process is not root or the namespaces
    /// cannot be made (a container without the capability, no `ip`).
    pub fn for_test(
        what: &str,
        tag: &str,
        hosts: &[&str],
        subnet: u8,
        queues: u8,
    ) -> Option<(Net, String)> {
        if !can_build() {
            println!("skipped: {what} needs root (network namespaces, bpf)");
            return None;
        }
        let prefix = format!("xd-{tag}{}", std::process::id() % 100_000);
        match Net::build_with_queues(&prefix, hosts, subnet, queues) {
            Ok(net) => Some((net, prefix)),
            Err(e) => {
                println!("skipped: {what}: network namespaces: {e}");
                None
            }
        }
    }

    /// Build `hosts` namespaces `{prefix}-{host}` on a bridge in `{prefix}-hub`, host `i`
    /// at 10.`subnet`.0.(i+1)/24 on a veth named `{prefix}` inside it (15 bytes at most).
    pub fn build(prefix: &str, hosts: &[&str], subnet: u8) -> io::Result<Net> {
        Net::build_with_queues(prefix, hosts, subnet, 1)
    }

    /// [`Net::build`], each host's veth with `queues` receive and transmit queues.
    pub fn build_with_queues(
        prefix: &str,
        hosts: &[&str],
        subnet: u8,
        queues: u8,
    ) -> io::Result<Net> {
        let queues = queues.max(1).to_string();
        let mut net = Net {
            prefix: prefix.to_string(),
            hosts: Vec::new(),
        };
        let hub = format!("{prefix}-hub");
        ip(&["netns", "add", &hub])?;
        net.hosts.push(hub.clone());
        ip(&["-n", &hub, "link", "add", "xd-br", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "xd-br", "up"])?;
        for (i, host) in hosts.iter().enumerate() {
            let ns = format!("{prefix}-{host}");
            ip(&["netns", "add", &ns])?;
            net.hosts.push(ns.clone());
            let port = format!("xd-p{i}");
            let q = &queues;
            ip(&[
                "-n",
                &hub,
                "link",
                "add",
                &port,
                "numtxqueues",
                q,
                "numrxqueues",
                q,
                "type",
                "veth",
                "peer",
                "name",
                prefix,
                "netns",
                &ns,
                "numtxqueues",
                q,
                "numrxqueues",
                q,
            ])?;
            ip(&["-n", &hub, "link", "set", &port, "master", "xd-br", "up"])?;
            let addr = format!("{}/24", Net::address(subnet, i));
            ip(&["-n", &ns, "addr", "add", &addr, "dev", prefix])?;
            ip(&["-n", &ns, "link", "set", prefix, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    /// Add an Ethernet interface `name` without a native XDP hook (a bridge) to `host`, for
    /// tests of the fallback.
    pub fn add_no_xdp(&self, host: &str, name: &str) -> io::Result<()> {
        ip(&[
            "-n",
            &self.namespace(host),
            "link",
            "add",
            name,
            "type",
            "bridge",
        ])
    }

    /// Host `i`'s address.
    pub fn address(subnet: u8, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, subnet, 0, (i + 1) as u8)
    }

    /// The namespace of host `host`.
    pub fn namespace(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    /// Move the calling thread into namespace `ns` (sockets it opens from now on live there).
    pub fn enter(ns: &str) -> io::Result<()> {
        let f = std::fs::File::open(format!("/run/netns/{ns}"))?;
        // SAFETY: setns on a live namespace descriptor affects only this thread's network
        // namespace (CLONE_NEWNET); no memory is involved.
        match unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in self.hosts.iter().rev() {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}
