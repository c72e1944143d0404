//! The control plane the original client needs before its first frame: `Sync.Broadcast`,
//! `Sync.Barrier` and `Session.UdpSession` of package `switchml_proto`, served with tonic
//! on a thread of its own (the only place of this crate with an async runtime).

use std::net::Ipv4Addr;
use std::sync::mpsc::Sender;
use std::sync::Mutex;

use tokio::sync::watch;
use tonic::{Request, Response, Status};

use crate::dataplane::{Command, WORDS};
use crate::frame::Peer;
use crate::proto::{
    BarrierRequest, BarrierResponse, BroadcastRequest, BroadcastResponse, PacketSize,
    UdpSessionRequest, UdpSessionResponse,
};

/// Rounds of `n` calls: each call waits until the `n`th arrives, then all return the value
/// the round kept. Reused round after round, as the original's are. A call whose client
/// went away still counts in its round (nothing can tell it from a slow one), so after a
/// client died inside a call, restart the switch before the next session.
#[derive(Debug)]
struct Rounds {
    state: Mutex<(u32, u64, u64)>,
    done: watch::Sender<(u64, u64)>,
}

impl Rounds {
    fn new() -> Rounds {
        Rounds {
            state: Mutex::new((0, 0, 0)),
            done: watch::Sender::new((0, 0)),
        }
    }

    /// Arrive at the current round of `n` calls, leaving `value` if given; return the
    /// value the round kept once it is complete.
    async fn arrive(&self, n: u32, value: Option<u64>) -> Result<u64, Status> {
        let (target, mut rx) = {
            let mut s = self
                .state
                .lock()
                .map_err(|_| Status::internal("poisoned"))?;
            let (arrived, kept, generation) = &mut *s;
            if let Some(v) = value {
                *kept = v;
            }
            *arrived += 1;
            if *arrived >= n.max(1) {
                *arrived = 0;
                *generation += 1;
                self.done.send_replace((*generation, *kept));
                return Ok(*kept);
            }
            (*generation + 1, self.done.subscribe())
        };
        let got = rx
            .wait_for(|(g, _)| *g >= target)
            .await
            .map_err(|_| Status::unavailable("shutting down"))?;
        Ok(got.1)
    }
}

/// The controller: the two services over one state.
#[derive(Debug)]
pub struct Controller {
    commands: Mutex<Sender<Command>>,
    mac: [u8; 6],
    ip: Ipv4Addr,
    barrier: Rounds,
    broadcast: Rounds,
}

/// A MAC as the original's messages carry it: 48 bits, the first byte most significant.
pub fn mac_to_u64(mac: [u8; 6]) -> u64 {
    mac.iter().fold(0, |a, b| a << 8 | u64::from(*b))
}

/// The inverse of [`mac_to_u64`] (bits above 48 ignored).
pub fn mac_from_u64(v: u64) -> [u8; 6] {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

impl Controller {
    /// A controller for the switch (`mac`, `ip`) that registers ranks through `commands`.
    pub fn new(commands: Sender<Command>, mac: [u8; 6], ip: Ipv4Addr) -> Controller {
        Controller {
            commands: Mutex::new(commands),
            mac,
            ip,
            barrier: Rounds::new(),
            broadcast: Rounds::new(),
        }
    }

    fn command(&self, c: Command) -> Result<(), Status> {
        self.commands
            .lock()
            .map_err(|_| Status::internal("poisoned"))?
            .send(c)
            .map_err(|_| Status::unavailable("the data plane has stopped"))
    }
}

#[tonic::async_trait]
impl crate::proto::sync::sync_server::Sync for std::sync::Arc<Controller> {
    async fn broadcast(
        &self,
        request: Request<BroadcastRequest>,
    ) -> Result<Response<BroadcastResponse>, Status> {
        let r = request.into_inner();
        let value = (r.rank == r.root).then_some(r.value);
        let value = self.broadcast.arrive(r.num_workers, value).await?;
        Ok(Response::new(BroadcastResponse { value }))
    }

    async fn barrier(
        &self,
        request: Request<BarrierRequest>,
    ) -> Result<Response<BarrierResponse>, Status> {
        self.barrier
            .arrive(request.into_inner().num_workers, None)
            .await?;
        Ok(Response::new(BarrierResponse {}))
    }
}

#[tonic::async_trait]
impl crate::proto::session::session_server::Session for std::sync::Arc<Controller> {
    async fn udp_session(
        &self,
        request: Request<UdpSessionRequest>,
    ) -> Result<Response<UdpSessionResponse>, Status> {
        let r = request.into_inner();
        if r.num_workers == 0 || r.num_workers as usize > 32 * WORDS {
            return Err(Status::invalid_argument(format!(
                "num_workers {} is not in 1..={}",
                r.num_workers,
                32 * WORDS
            )));
        }
        if r.rank >= r.num_workers {
            return Err(Status::invalid_argument("rank is not below num_workers"));
        }
        if PacketSize::try_from(r.packet_size).is_err() {
            return Err(Status::invalid_argument("unknown packet_size"));
        }
        let rank = r.rank as u16;
        if rank == 0 {
            self.command(Command::Reset {
                workers: r.num_workers as u16,
            })?;
        }
        let peer = Peer {
            mac: mac_from_u64(r.mac),
            ip: Ipv4Addr::from(r.ipv4),
        };
        self.command(Command::Register { rank, peer })?;
        log::info!("p4app: rank {rank} of {} is {peer:?}", r.num_workers);
        Ok(Response::new(UdpSessionResponse {
            session_id: r.session_id,
            mac: mac_to_u64(self.mac),
            ipv4: u32::from(self.ip),
        }))
    }
}

/// Serve `controller` on `listener` from a new thread with a current-thread tokio runtime;
/// return the thread and the sender that stops it, dropping open connections and calls.
pub fn spawn(
    listener: std::net::TcpListener,
    controller: std::sync::Arc<Controller>,
) -> std::io::Result<(
    std::thread::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
)> {
    use crate::proto::session::session_server::SessionServer;
    use crate::proto::sync::sync_server::SyncServer;
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (shutdown, on_shutdown) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("p4app-control".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => return log::error!("p4app control plane: {e}"),
                };
                let server = tokio::spawn(
                    tonic::transport::Server::builder()
                        .add_service(SyncServer::new(controller.clone()))
                        .add_service(SessionServer::new(controller))
                        .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
                );
                let _ = on_shutdown.await;
                // Not a graceful shutdown: a client keeps its channel open for its whole
                // run, and waiting for it would keep the switch from stopping.
                server.abort();
            });
            // Dropping the runtime drops every connection and every call still waiting.
            drop(runtime);
        })?;
    Ok((thread, shutdown))
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
