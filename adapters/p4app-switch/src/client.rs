//! A blocking client of the controller's services, for our own workers and the tests. It
//! runs a current-thread tokio runtime of its own, used only during these calls.

use std::net::{Ipv4Addr, SocketAddr};

use tonic::transport::{Channel, Endpoint};

use crate::control::{mac_from_u64, mac_to_u64};
use crate::frame::Peer;
use crate::proto::session::session_client::SessionClient;
use crate::proto::sync::sync_client::SyncClient;
use crate::proto::{BarrierRequest, BroadcastRequest, PacketSize, UdpSessionRequest};

/// A failed call: the transport or the status.
#[derive(Debug)]
pub enum ClientError {
    /// No connection.
    Transport(tonic::transport::Error),
    /// The controller refused the call.
    Status(Box<tonic::Status>),
    /// The runtime could not start.
    Io(std::io::Error),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Transport(e) => write!(f, "controller unreachable: {e}"),
            ClientError::Status(s) => write!(f, "controller refused: {}", s.message()),
            ClientError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<tonic::Status> for ClientError {
    fn from(s: tonic::Status) -> Self {
        ClientError::Status(Box::new(s))
    }
}

/// A connection to a controller (ours or the original's).
#[derive(Debug)]
pub struct ControlClient {
    runtime: tokio::runtime::Runtime,
    sync: SyncClient<Channel>,
    session: SessionClient<Channel>,
}

impl ControlClient {
    /// Connect to the controller at `addr` (port 50099 for the original's).
    pub fn connect(addr: SocketAddr) -> Result<ControlClient, ClientError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ClientError::Io)?;
        let endpoint =
            Endpoint::from_shared(format!("http://{addr}")).map_err(ClientError::Transport)?;
        let channel = runtime
            .block_on(endpoint.connect())
            .map_err(ClientError::Transport)?;
        Ok(ControlClient {
            runtime,
            sync: SyncClient::new(channel.clone()),
            session: SessionClient::new(channel),
        })
    }

    /// `Sync.Broadcast`: return `root`'s value once all `workers` have called.
    pub fn broadcast(
        &mut self,
        value: u64,
        rank: u32,
        workers: u32,
        root: u32,
    ) -> Result<u64, ClientError> {
        let req = BroadcastRequest {
            value,
            rank,
            num_workers: workers,
            root,
        };
        let r = self.runtime.block_on(self.sync.broadcast(req))?;
        Ok(r.into_inner().value)
    }

    /// `Sync.Barrier`: return once all `workers` have called.
    pub fn barrier(&mut self, workers: u32) -> Result<(), ClientError> {
        let req = BarrierRequest {
            num_workers: workers,
        };
        self.runtime.block_on(self.sync.barrier(req))?;
        Ok(())
    }

    /// `Session.UdpSession`: register `me` as `rank`; return the switch's addresses.
    pub fn udp_session(
        &mut self,
        session_id: u64,
        rank: u32,
        workers: u32,
        me: Peer,
        size: PacketSize,
    ) -> Result<Peer, ClientError> {
        let req = UdpSessionRequest {
            session_id,
            rank,
            num_workers: workers,
            mac: mac_to_u64(me.mac),
            ipv4: u32::from(me.ip),
            packet_size: size as i32,
        };
        let r = self
            .runtime
            .block_on(self.session.udp_session(req))?
            .into_inner();
        Ok(Peer {
            mac: mac_from_u64(r.mac),
            ip: Ipv4Addr::from(r.ipv4),
        })
    }

    /// The original client's start, in its order: broadcast rank 0's `session_id`; rank 0
    /// calls `UdpSession` then `Barrier`, the others `Barrier` then `UdpSession` (so rank 0
    /// starts the session first); then one more `Barrier` for all. Returns the switch.
    pub fn join(
        &mut self,
        session_id: u64,
        rank: u32,
        workers: u32,
        me: Peer,
        size: PacketSize,
    ) -> Result<Peer, ClientError> {
        let id = self.broadcast(session_id, rank, workers, 0)?;
        let switch = if rank == 0 {
            let s = self.udp_session(id, rank, workers, me, size)?;
            self.barrier(workers)?;
            s
        } else {
            self.barrier(workers)?;
            self.udp_session(id, rank, workers, me, size)?
        };
        self.barrier(workers)?;
        Ok(switch)
    }
}
