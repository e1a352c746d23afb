// The raw host functions of ABI v1 (docs/abi.md section 4), as the host defines them.
// Declaring a function here does not import it: the compiler keeps only the imports a
// plugin calls, so a filter plugin imports neither admission nor kubelet functions (a host
// rejects imports it does not define). Pointers are offsets into linear memory.

// 4.1 Pod
@external("wasmkube", "pod_json") export declare function pod_json(buf: usize, cap: i32): i32;
@external("wasmkube", "pod_name") export declare function pod_name(buf: usize, cap: i32): i32;
@external("wasmkube", "pod_namespace") export declare function pod_namespace(buf: usize, cap: i32): i32;
@external("wasmkube", "pod_label") export declare function pod_label(key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "pod_annotation") export declare function pod_annotation(key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "pod_requests") export declare function pod_requests(out: usize): i32;
@external("wasmkube", "pod_scalar_names") export declare function pod_scalar_names(buf: usize, cap: i32): i32;
@external("wasmkube", "pod_scalar_request") export declare function pod_scalar_request(name: usize, nameLen: i32): i64;

// 4.2 Args and cycle state
@external("wasmkube", "args") export declare function args(buf: usize, cap: i32): i32;
@external("wasmkube", "state_get") export declare function state_get(key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "state_set") export declare function state_set(key: usize, keyLen: i32, val: usize, valLen: i32): i32;

// 4.3 Nodes of the batch
@external("wasmkube", "node_json") export declare function node_json(i: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "node_name") export declare function node_name(i: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "node_label") export declare function node_label(i: i32, key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "node_taints") export declare function node_taints(i: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "node_resources") export declare function node_resources(i: i32, out: usize): i32;
@external("wasmkube", "node_scalar") export declare function node_scalar(i: i32, which: i32, name: usize, nameLen: i32): i64;
@external("wasmkube", "node_filter_code") export declare function node_filter_code(i: i32): i32;
@external("wasmkube", "score_get") export declare function score_get(i: i32): i64;
// The run forms of node_resources and node_score: many nodes in one call.
@external("wasmkube", "node_resources_range") export declare function node_resources_range(first: i32, count: i32, out: usize): i32;
@external("wasmkube", "node_scores") export declare function node_scores(first: i32, count: i32, scores: usize): void;

// 4.4 Results
@external("wasmkube", "status_reason") export declare function status_reason(p: usize, l: i32): void;
@external("wasmkube", "node_status") export declare function node_status(i: i32, code: i32, p: usize, l: i32): void;
@external("wasmkube", "node_score") export declare function node_score(i: i32, score: i64): void;
@external("wasmkube", "prefilter_node") export declare function prefilter_node(p: usize, l: i32): void;
@external("wasmkube", "nominate") export declare function nominate(p: usize, l: i32): void;

// 4.5 Logging
@external("wasmkube", "log") export declare function log(level: i32, p: usize, l: i32): void;

// 4.8 Binding cycle and queueing
@external("wasmkube", "pod_uid") export declare function pod_uid(buf: usize, cap: i32): i32;
@external("wasmkube", "shared_add") export declare function shared_add(key: usize, keyLen: i32, delta: i64): i64;
@external("wasmkube", "shared_get") export declare function shared_get(key: usize, keyLen: i32): i64;
@external("wasmkube", "permit_wait") export declare function permit_wait(timeoutMs: i32, group: usize, groupLen: i32): void;
@external("wasmkube", "waiting_pods") export declare function waiting_pods(group: usize, groupLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "waiting_allow") export declare function waiting_allow(uid: usize, uidLen: i32): i32;
@external("wasmkube", "waiting_reject") export declare function waiting_reject(uid: usize, uidLen: i32, reason: usize, reasonLen: i32): i32;
@external("wasmkube", "register_event") export declare function register_event(res: usize, resLen: i32, actions: i32): void;
@external("wasmkube", "event_resource") export declare function event_resource(buf: usize, cap: i32): i32;
@external("wasmkube", "event_action") export declare function event_action(): i32;
@external("wasmkube", "event_object_json") export declare function event_object_json(buf: usize, cap: i32): i32;
@external("wasmkube", "event_old_object_json") export declare function event_old_object_json(buf: usize, cap: i32): i32;
// 1.5 Signatures
@external("wasmkube", "sign_fragment") export declare function sign_fragment(key: usize, keyLen: i32, value: usize, valueLen: i32): void;

// 4.6 Admission
@external("wasmkube", "request_json") export declare function request_json(buf: usize, cap: i32): i32;
@external("wasmkube", "request_operation") export declare function request_operation(buf: usize, cap: i32): i32;
@external("wasmkube", "request_kind") export declare function request_kind(buf: usize, cap: i32): i32;
@external("wasmkube", "request_resource") export declare function request_resource(buf: usize, cap: i32): i32;
@external("wasmkube", "request_name") export declare function request_name(buf: usize, cap: i32): i32;
@external("wasmkube", "request_namespace") export declare function request_namespace(buf: usize, cap: i32): i32;
@external("wasmkube", "request_user") export declare function request_user(buf: usize, cap: i32): i32;
@external("wasmkube", "request_groups") export declare function request_groups(buf: usize, cap: i32): i32;
@external("wasmkube", "object_json") export declare function object_json(buf: usize, cap: i32): i32;
@external("wasmkube", "old_object_json") export declare function old_object_json(buf: usize, cap: i32): i32;
@external("wasmkube", "object_get") export declare function object_get(path: usize, pathLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "old_object_get") export declare function old_object_get(path: usize, pathLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "object_label") export declare function object_label(key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "object_annotation") export declare function object_annotation(key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "old_object_label") export declare function old_object_label(key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "old_object_annotation") export declare function old_object_annotation(key: usize, keyLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "pod_images") export declare function pod_images(buf: usize, cap: i32): i32;
@external("wasmkube", "warning") export declare function warning(p: usize, l: i32): void;
@external("wasmkube", "audit_annotation") export declare function audit_annotation(key: usize, keyLen: i32, val: usize, valLen: i32): void;
@external("wasmkube", "set_patch") export declare function set_patch(p: usize, l: i32): void;
@external("wasmkube", "get_object") export declare function get_object(res: usize, resLen: i32, name: usize, nameLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "list_objects") export declare function list_objects(res: usize, resLen: i32, buf: usize, cap: i32): i32;

// 4.7 Kubelet hooks
@external("wasmkube", "container_name") export declare function container_name(buf: usize, cap: i32): i32;
@external("wasmkube", "probe_kind") export declare function probe_kind(buf: usize, cap: i32): i32;
@external("wasmkube", "pod_ip") export declare function pod_ip(buf: usize, cap: i32): i32;
@external("wasmkube", "tcp_connect") export declare function tcp_connect(port: i32): i32;
@external("wasmkube", "http_get") export declare function http_get(port: i32, path: usize, pathLen: i32): i32;
@external("wasmkube", "http_post") export declare function http_post(port: i32, path: usize, pathLen: i32, body: usize, bodyLen: i32): i32;
@external("wasmkube", "response_body") export declare function response_body(buf: usize, cap: i32): i32;
@external("wasmkube", "response_header") export declare function response_header(name: usize, nameLen: i32, buf: usize, cap: i32): i32;
@external("wasmkube", "sleep_ms") export declare function sleep_ms(ms: i32): i32;
