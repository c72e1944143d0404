//! Generates the gRPC stubs of the original controller's two services with
//! `tonic_build::manual`: the services are described here in Rust and the messages are
//! `#[derive(prost::Message)]` structs in `src/proto.rs`, so no `protoc` and no `.proto` file
//! is needed (the field numbers are the original's, `shared/p4app/README.md`).

use tonic_build::manual::{Builder, Method, Service};

fn method(name: &str, route: &str, input: &str, output: &str) -> Method {
    Method::builder()
        .name(name)
        .route_name(route)
        .input_type(format!("crate::proto::{input}"))
        .output_type(format!("crate::proto::{output}"))
        .codec_path("tonic_prost::ProstCodec")
        .build()
}

fn main() {
    let sync = Service::builder()
        .name("Sync")
        .package("switchml_proto")
        .method(method(
            "broadcast",
            "Broadcast",
            "BroadcastRequest",
            "BroadcastResponse",
        ))
        .method(method(
            "barrier",
            "Barrier",
            "BarrierRequest",
            "BarrierResponse",
        ))
        .build();
    let session = Service::builder()
        .name("Session")
        .package("switchml_proto")
        .method(method(
            "udp_session",
            "UdpSession",
            "UdpSessionRequest",
            "UdpSessionResponse",
        ))
        .build();
    Builder::new().compile(&[sync, session]);
}
