//! Every scheduler runner of the SDK, for sdk_test.go, which runs cases.yaml on it (and
//! sdk/assemblyscript runs the same cases on its own version of this module):
//! PreFilter skips pods labelled skip=yes and restricts to the node the pod's `only`
//! annotation names; Filter rejects nodes labelled bad (Unschedulable) or gone
//! (UnschedulableAndUnresolvable); PostFilter nominates the first Unschedulable node; Score
//! is the node's `score` label (a raw score, any i64); NormalizeScore is min-max.
#![no_std]

use wasmkube::{nominate, normalize_min_max, restrict_to, state, Code, Node, Nodes, Pod, Scores, Status};

fn prefilter(pod: &Pod) -> Status {
    let mut buf = [0u8; 256];
    if let Ok(Some("yes")) = pod.label("skip", &mut buf) {
        return Status::skip();
    }
    if let Ok(Some(only)) = pod.annotation("only", &mut buf) {
        restrict_to(only);
    }
    let _ = state::set("prefilter", b"ran");
    Status::OK
}

fn filter(_pod: &Pod, node: &Node) -> Status {
    let mut buf = [0u8; 64];
    if let Ok(Some(_)) = node.label("bad", &mut buf) {
        return Status::reject("node is bad");
    }
    if let Ok(Some(_)) = node.label("gone", &mut buf) {
        return Status::unresolvable("node is gone");
    }
    // PreFilter ran in this cycle: its state is readable here.
    match state::get("prefilter", &mut buf) {
        Ok(Some(b"ran")) => Status::OK,
        _ => Status::error("no prefilter state"),
    }
}

fn postfilter(_pod: &Pod, nodes: &Nodes) -> Status {
    let mut name = [0u8; 256];
    for n in nodes.iter() {
        if n.filter_code() == Code::UNSCHEDULABLE {
            if let Ok(name) = n.name(&mut name) {
                nominate(name);
                return Status::OK;
            }
        }
    }
    Status::reject("nothing to nominate")
}

fn prescore(_pod: &Pod, nodes: &Nodes) -> Status {
    if nodes.is_empty() {
        Status::skip()
    } else {
        Status::OK
    }
}

fn score(_pod: &Pod, node: &Node) -> Result<i64, Status> {
    let mut buf = [0u8; 64];
    match node.label("score", &mut buf) {
        Ok(Some(s)) => s.parse().map_err(|_| Status::error("label score: not an integer")),
        _ => Ok(0),
    }
}

fn normalize(_pod: &Pod, scores: &Scores) -> Status {
    normalize_min_max(scores)
}

wasmkube::export_prefilter!(prefilter);
wasmkube::export_filter!(filter);
wasmkube::export_postfilter!(postfilter);
wasmkube::export_prescore!(prescore);
wasmkube::export_score!(score);
wasmkube::export_normalizescore!(normalize);
