;; Every binding-cycle and queueing entry point (docs/abi.md section 1.4), its behaviour
;; chosen by the first letter of the pod's name:
;;   t  traps (unreachable) at every point, l loops forever at every point,
;;   d  is denied (2, reason "denied") by Reserve, Permit and PreBind,
;;   w  waits at Permit (200 ms, group "g"),
;;   a  allows, at Permit, every pod waiting in group "g",
;;   n  returns Wait from Permit without permit_wait (a garbage result),
;;   anything else is allowed everywhere.
;; Reserve sets state "r" and adds 1 to counter "reserved"; Unreserve takes it back only
;; when "r" is set; PreBind and PostBind count "prebound" and "bound". It registers Node
;; Add and Update; its hint queues a Node Add and skips the rest.
(module
  (import "wasmkube" "pod_name" (func $pod_name (param i32 i32) (result i32)))
  (import "wasmkube" "state_get" (func $state_get (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "state_set" (func $state_set (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "shared_add" (func $shared_add (param i32 i32 i64) (result i64)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (import "wasmkube" "permit_wait" (func $permit_wait (param i32 i32 i32)))
  (import "wasmkube" "waiting_pods" (func $waiting_pods (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "waiting_allow" (func $waiting_allow (param i32 i32) (result i32)))
  (import "wasmkube" "register_event" (func $register_event (param i32 i32 i32)))
  (import "wasmkube" "event_action" (func $event_action (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "r")
  (data (i32.const 8) "reserved")
  (data (i32.const 24) "prebound")
  (data (i32.const 40) "bound")
  (data (i32.const 48) "denied")
  (data (i32.const 56) "g")
  (data (i32.const 64) "Node")
  ;; 1024: pod name (256); 2048: state value (16); 4096: waiting pod UIDs (4096)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; $first returns the pod name's first byte, after trapping or looping for t and l.
  (func $first (result i32)
    (local $c i32)
    (drop (call $pod_name (i32.const 1024) (i32.const 256)))
    (local.set $c (i32.load8_u (i32.const 1024)))
    (if (i32.eq (local.get $c) (i32.const 116)) (then unreachable))
    (if (i32.eq (local.get $c) (i32.const 108)) (then (loop $forever (br $forever))))
    (local.get $c))
  (func $deny (result i32)
    (call $status_reason (i32.const 48) (i32.const 6))
    (i32.const 2))
  (func (export "wasmkube_reserve") (result i32)
    (if (i32.eq (call $first) (i32.const 100)) (then (return (call $deny))))
    (drop (call $state_set (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1)))
    (drop (call $shared_add (i32.const 8) (i32.const 8) (i64.const 1)))
    (i32.const 0))
  (func (export "wasmkube_unreserve") (result i32)
    (drop (call $first))
    (if (i32.ge_s (call $state_get (i32.const 0) (i32.const 1) (i32.const 2048) (i32.const 16)) (i32.const 0))
      (then (drop (call $shared_add (i32.const 8) (i32.const 8) (i64.const -1)))))
    (i32.const 0))
  (func (export "wasmkube_permit") (result i32)
    (local $c i32) (local $n i32) (local $i i32) (local $start i32)
    (local.set $c (call $first))
    (if (i32.eq (local.get $c) (i32.const 100)) (then (return (call $deny))))
    (if (i32.eq (local.get $c) (i32.const 110)) (then (return (i32.const 4))))
    (if (i32.eq (local.get $c) (i32.const 119))
      (then (call $permit_wait (i32.const 200) (i32.const 56) (i32.const 1)) (return (i32.const 4))))
    (if (i32.eq (local.get $c) (i32.const 97))
      (then
        (local.set $n (call $waiting_pods (i32.const 56) (i32.const 1) (i32.const 4096) (i32.const 4096)))
        (if (i32.gt_s (local.get $n) (i32.const 4096)) (then unreachable))
        ;; every line is one UID: allow each
        (block $done
          (loop $next
            (br_if $done (i32.ge_s (local.get $i) (local.get $n)))
            (if (i32.eq (i32.load8_u (i32.add (i32.const 4096) (local.get $i))) (i32.const 10))
              (then
                (drop (call $waiting_allow (i32.add (i32.const 4096) (local.get $start)) (i32.sub (local.get $i) (local.get $start))))
                (local.set $start (i32.add (local.get $i) (i32.const 1)))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $next)))))
    (i32.const 0))
  (func (export "wasmkube_prebind") (result i32)
    (if (i32.eq (call $first) (i32.const 100)) (then (return (call $deny))))
    (drop (call $shared_add (i32.const 24) (i32.const 8) (i64.const 1)))
    (i32.const 0))
  (func (export "wasmkube_postbind") (result i32)
    (drop (call $first))
    (drop (call $shared_add (i32.const 40) (i32.const 5) (i64.const 1)))
    (i32.const 0))
  (func (export "wasmkube_events") (result i32)
    (call $register_event (i32.const 64) (i32.const 4) (i32.const 5))
    (i32.const 0))
  (func (export "wasmkube_queueing_hint") (result i32)
    (drop (call $first))
    (if (result i32) (i32.eq (call $event_action) (i32.const 1))
      (then (i32.const 0)) (else (i32.const 5)))))
