//! A module that calls every wrapper of the SDK, so that it imports every host function,
//! and exports an entry point of every kind: sdk_test.go loads it into a host with every
//! extension, which refuses any import whose signature is not the host's.
#![no_std]

use wasmkube::admission::Request;
use wasmkube::kubelet::Container;
use wasmkube::binding::{self, Event, Hint};
use wasmkube::{state, Level, Node, Nodes, Pod, Scores, Status};

fn pod_all(p: &Pod) {
    let mut b = [0u8; 64];
    let _ = p.name(&mut b);
    let _ = p.namespace(&mut b);
    let _ = p.label("a", &mut b);
    let _ = p.annotation("a", &mut b);
    let _ = p.json(&mut b);
    let _ = p.requests();
    let _ = p.scalar_names(&mut b);
    let _ = p.scalar_request("x");
    let _ = wasmkube::args(&mut b);
    let _ = state::get("k", &mut b);
    let _ = state::set("k", b"v");
    wasmkube::log(Level::Info, "x");
}

fn node_all(n: &Node) {
    let mut b = [0u8; 64];
    let _ = n.name(&mut b);
    let _ = n.label("a", &mut b);
    let _ = n.taints(&mut b).map(|t| t.count());
    let _ = n.resources();
    let _ = n.scalar_allocatable("x");
    let _ = n.scalar_requested("x");
    let _ = n.json(&mut b);
    let _ = n.filter_code();
    let mut recs = [0i64; 10];
    let _ = unsafe { wasmkube::sys::node_resources_range(n.index(), 1, recs.as_mut_ptr()) };
}

fn init() -> Status {
    Status::OK
}

fn prefilter(p: &Pod) -> Status {
    pod_all(p);
    wasmkube::restrict_to("n");
    Status::OK
}

fn filter(_: &Pod, n: &Node) -> Status {
    node_all(n);
    Status::reject("no")
}

fn postfilter(_: &Pod, nodes: &Nodes) -> Status {
    nodes.iter().for_each(|n| node_all(&n));
    wasmkube::nominate("n");
    Status::OK
}

fn prescore(_: &Pod, _: &Nodes) -> Status {
    Status::skip()
}

fn score(_: &Pod, n: &Node) -> Result<i64, Status> {
    let one = [1i64];
    unsafe { wasmkube::sys::node_scores(n.index(), 1, one.as_ptr()) };
    Ok(1)
}

fn normalize(_: &Pod, s: &Scores) -> Status {
    wasmkube::normalize_min_max(s)
}

fn validate(r: &Request) -> Status {
    let mut b = [0u8; 64];
    let _ = r.operation();
    let _ = r.kind(&mut b);
    let _ = r.resource(&mut b);
    let _ = r.name(&mut b);
    let _ = r.namespace(&mut b);
    let _ = r.user(&mut b);
    let _ = r.groups(&mut b);
    let _ = r.pod_images(&mut b);
    let _ = r.json(&mut b);
    let _ = r.object_json(&mut b);
    let _ = r.old_object_json(&mut b);
    let _ = r.get("spec.hostNetwork", &mut b);
    let _ = r.old_get("spec.hostNetwork", &mut b);
    let _ = r.object_label("a", &mut b);
    let _ = r.object_annotation("a", &mut b);
    let _ = r.old_object_label("a", &mut b);
    let _ = r.old_object_annotation("a", &mut b);
    let _ = r.get_object("configmaps", "x", &mut b);
    let _ = r.list_objects("configmaps", &mut b);
    r.warning("w");
    r.audit_annotation("k", "v");
    Status::OK
}

fn mutate(r: &Request) -> Status {
    r.set_patch(b"[]");
    Status::OK
}

fn probe(c: &Container) -> Status {
    let mut b = [0u8; 64];
    let _ = c.name(&mut b);
    let _ = c.probe_kind();
    let _ = c.pod_ip(&mut b);
    let _ = c.tcp_connect(80);
    let _ = c.http_get(80, "/");
    let _ = c.response_body(&mut b);
    let _ = c.response_header("x", &mut b);
    Status::OK
}

fn prestop(c: &Container) -> Status {
    let _ = c.http_post(80, "/", b"");
    let _ = c.sleep_ms(1);
    Status::OK
}

wasmkube::export_init!(init);
wasmkube::export_prefilter!(prefilter);
wasmkube::export_filter!(filter);
wasmkube::export_postfilter!(postfilter);
wasmkube::export_prescore!(prescore);
wasmkube::export_score!(score);
wasmkube::export_normalizescore!(normalize);
wasmkube::export_validate!(validate);
wasmkube::export_mutate!(mutate);
wasmkube::export_probe!(probe);
wasmkube::export_prestop!(prestop);

fn reserve(p: &Pod, n: &Node) -> Status {
    let mut b = [0u8; 64];
    let _ = p.uid(&mut b);
    let _ = n.name(&mut b);
    binding::shared_add("k", 1);
    let _ = binding::shared_get("k");
    Status::OK
}

fn unreserve(_: &Pod, _: &Node) {}

fn permit(_: &Pod, _: &Node) -> Status {
    let mut b = [0u8; 256];
    if let Ok(lines) = binding::waiting_pods("g", &mut b) {
        let _ = lines.count();
    }
    binding::allow_waiting("u");
    binding::reject_waiting("u", "no");
    binding::wait(1000, "g")
}

fn prebind(_: &Pod, _: &Node) -> Status {
    Status::OK
}

fn postbind(_: &Pod, _: &Node) {}

fn events() {
    binding::register_event("Node", binding::action::ADD | binding::action::UPDATE);
}

fn hint(_: &Pod, e: &Event) -> Hint {
    let mut b = [0u8; 64];
    let _ = e.resource(&mut b);
    let _ = e.object_json(&mut b);
    let _ = e.old_object_json(&mut b);
    if e.action() == binding::action::ADD {
        Hint::Queue
    } else {
        Hint::Skip
    }
}

wasmkube::export_reserve!(reserve, unreserve);
wasmkube::export_permit!(permit);
wasmkube::export_prebind!(prebind);
wasmkube::export_postbind!(postbind);
wasmkube::export_events!(events);
wasmkube::export_queueing_hint!(hint);

#[export_name = "wasmkube_sign"]
pub extern "C" fn sign() -> i32 {
    binding::sign_fragment("requests", "100m");
    0
}
