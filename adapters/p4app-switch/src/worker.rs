//! One rank of the dialect over a kernel UDP socket: the client's gRPC calls, then the
//! core's [`P4appWorker`] driven by a blocking loop (our workers against this switch or a
//! Tofino that runs the original program). The kernel builds the frames, with valid
//! checksums.

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use switchml_core::p4app::{P4appConfig, P4appEvent, P4appSize, P4appTensor, P4appWorker};
use switchml_core::time::Instant as CoreInstant;

use crate::client::{ClientError, ControlClient};
use crate::frame::Peer;
use crate::proto::PacketSize;

/// Packets in flight per worker (the original client's default).
pub const OUTSTANDING: usize = 8;

/// How a rank joins.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DialectSetup {
    /// The controller (port 50099 for the original's).
    pub controller: SocketAddr,
    /// This rank.
    pub rank: u16,
    /// The session's ranks.
    pub workers: u16,
    /// Values per packet.
    pub size: P4appSize,
    /// The UDP port every rank sends from (the client's `worker_port`, 4000): a completed
    /// set goes to the port of the packet that completed it, so all ranks must share it.
    pub port: u16,
    /// This rank's MAC; `None`: the MAC of the interface that holds the address the
    /// controller is reached from.
    pub mac: Option<[u8; 6]>,
    /// The session id rank 0 broadcasts.
    pub session_id: u64,
    /// A job that takes longer than this fails instead of waiting forever.
    pub job_limit: Duration,
}

impl DialectSetup {
    /// The defaults: 64 values per packet, port 4000, the interface's MAC, one minute a job.
    pub fn new(controller: SocketAddr, rank: u16, workers: u16) -> DialectSetup {
        DialectSetup {
            controller,
            rank,
            workers,
            size: P4appSize::Elements64,
            port: 4000,
            mac: None,
            session_id: 1,
            job_limit: Duration::from_secs(60),
        }
    }
}

/// Why a rank could not join or reduce.
#[derive(Debug)]
pub enum DialectError {
    /// The controller.
    Control(ClientError),
    /// The socket or the interface.
    Io(std::io::Error),
    /// The core refused the configuration or the tensor.
    Refused(String),
    /// The job did not finish within the setup's limit.
    Stalled,
}

impl std::fmt::Display for DialectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DialectError::Control(e) => write!(f, "{e}"),
            DialectError::Io(e) => write!(f, "{e}"),
            DialectError::Refused(e) => write!(f, "refused: {e}"),
            DialectError::Stalled => write!(f, "the job did not finish in time"),
        }
    }
}

impl std::error::Error for DialectError {}

impl From<std::io::Error> for DialectError {
    fn from(e: std::io::Error) -> Self {
        DialectError::Io(e)
    }
}

/// A joined rank.
#[derive(Debug)]
pub struct UdpDialectWorker {
    socket: UdpSocket,
    config: P4appConfig,
    next_job: u32,
    shift: u32,
    origin: Instant,
    limit: Duration,
    me: Peer,
    switch: Peer,
}

impl UdpDialectWorker {
    /// Join the session in the client's order and open the data socket.
    pub fn join(setup: &DialectSetup) -> Result<UdpDialectWorker, DialectError> {
        // The address this host reaches the controller from is the one the switch sees.
        let route = UdpSocket::bind("0.0.0.0:0")?;
        route.connect(setup.controller)?;
        let ip = match route.local_addr()?.ip() {
            std::net::IpAddr::V4(ip) => ip,
            std::net::IpAddr::V6(_) => {
                return Err(DialectError::Refused("the dialect is IPv4 only".into()))
            }
        };
        let mac = match setup.mac {
            Some(m) => m,
            None => crate::raw::interface_mac(ip)?,
        };
        let me = Peer { mac, ip };
        let mtu = match setup.size {
            P4appSize::Elements256 => PacketSize::Mtu1024,
            P4appSize::Elements64 => PacketSize::Mtu256,
        };
        let mut control =
            ControlClient::connect(setup.controller).map_err(DialectError::Control)?;
        let switch = control
            .join(
                setup.session_id,
                u32::from(setup.rank),
                u32::from(setup.workers),
                me,
                mtu,
            )
            .map_err(DialectError::Control)?;
        let socket = UdpSocket::bind(SocketAddrV4::new(ip, setup.port))?;
        socket.connect(SocketAddrV4::new(
            switch.ip,
            switchml_core::p4app::packet::SWITCH_PORT,
        ))?;
        let mut config = P4appConfig::new(setup.workers);
        config.size = setup.size;
        P4appWorker::<OUTSTANDING>::new(config)
            .map_err(|e| DialectError::Refused(format!("{e:?}")))?;
        Ok(UdpDialectWorker {
            socket,
            config,
            next_job: 0,
            shift: 0,
            origin: Instant::now(),
            limit: setup.job_limit,
            me,
            switch,
        })
    }

    /// Return this rank's addresses, as registered.
    pub fn me(&self) -> Peer {
        self.me
    }

    /// Return the switch's addresses, as the controller gave them.
    pub fn switch(&self) -> Peer {
        self.switch
    }

    fn now(&self) -> CoreInstant {
        CoreInstant::from_micros(
            u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX),
        )
    }

    /// Sum `tensor` with the other ranks' in place (every rank submits the same shapes in
    /// the same order).
    pub fn allreduce(&mut self, tensor: P4appTensor<'_>) -> Result<(), DialectError> {
        let refused = |e: &dyn std::fmt::Debug| DialectError::Refused(format!("{e:?}"));
        let mut w = P4appWorker::<OUTSTANDING>::resume(self.config, self.next_job, self.shift)
            .map_err(|e| refused(&e))?;
        w.submit(tensor).map_err(|e| refused(&e))?;
        let (mut tx, mut rx) = ([0u8; 1100], [0u8; 2048]);
        let start = Instant::now();
        loop {
            while let Some(len) = w.poll_transmit(self.now(), &mut tx) {
                // A refused send is a lost packet: its timer resends it.
                let _ = self.socket.send(&tx[..len]);
            }
            if let Some(P4appEvent::Done { .. }) = w.poll_event() {
                break;
            }
            if start.elapsed() > self.limit {
                return Err(DialectError::Stalled);
            }
            let wait = w
                .poll_timeout()
                .map(|t| t.saturating_duration_since(self.now()).total_micros())
                .unwrap_or(50_000)
                .clamp(200, 50_000);
            self.socket
                .set_read_timeout(Some(Duration::from_micros(wait)))?;
            // Timeouts and ICMP errors alike leave it to the timers.
            if let Ok(len) = self.socket.recv(&mut rx) {
                w.handle_packet(self.now(), &rx[..len]);
            }
            w.handle_timeout(self.now());
        }
        self.next_job = w.next_job();
        self.shift = w.shift();
        Ok(())
    }
}
