;; Three defects conformance must name, one per entry point:
;;   Reserve counts "n" +1 and Unreserve never takes it back;
;;   Permit waits for ten minutes, for every pod, and never allows anyone;
;;   the Filter rejects nodes without the label disk=ssd, registers Node Add, and the hint
;;   says Skip for every event, also for a node with disk=ssd, which would help.
(module
  (import "wasmkube" "shared_add" (func $shared_add (param i32 i32 i64) (result i64)))
  (import "wasmkube" "permit_wait" (func $permit_wait (param i32 i32 i32)))
  (import "wasmkube" "node_label" (func $node_label (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (import "wasmkube" "register_event" (func $register_event (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "n")
  (data (i32.const 8) "g")
  (data (i32.const 16) "disk")
  (data (i32.const 24) "Node")
  (data (i32.const 32) "no ssd")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_reserve") (result i32)
    (drop (call $shared_add (i32.const 0) (i32.const 1) (i64.const 1)))
    (i32.const 0))
  (func (export "wasmkube_unreserve") (result i32) (i32.const 0))
  (func (export "wasmkube_permit") (result i32)
    (call $permit_wait (i32.const 600000) (i32.const 8) (i32.const 1))
    (i32.const 4))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.ne (call $node_label (local.get $i) (i32.const 16) (i32.const 4) (i32.const 64) (i32.const 8)) (i32.const 3))
          (then (call $node_status (local.get $i) (i32.const 2) (i32.const 32) (i32.const 6))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0))
  (func (export "wasmkube_events") (result i32)
    (call $register_event (i32.const 24) (i32.const 4) (i32.const 1))
    (i32.const 0))
  (func (export "wasmkube_queueing_hint") (result i32) (i32.const 5)))
