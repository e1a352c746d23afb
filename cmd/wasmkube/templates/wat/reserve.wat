;; {{.Name}}: a wasmkube scheduler Reserve/Unreserve plugin in WebAssembly text (docs/abi.md
;; section 1.4), from wasm-examples/wat/binding-limit-reserve.
;; It caps how many pods may be in their binding cycle on one node at once (slow volume attach, a node agent that admits pods one by one): a
;; node labelled wasmkube.io/max-binding=N (a decimal number, 1..9999) takes at most N pods
;; between Reserve and the end of their binding; a node without the label has no cap.
;;
;; Counting uses the shared counters (one per node name): Reserve adds 1 and refuses (2)
;; when that goes over N, taking its 1 back; PostBind (bound) and Unreserve (not bound)
;; take it back. Both look at the marker Reserve left in cycle state first, so that an
;; Unreserve after a refused Reserve, or with no Reserve at all, changes nothing.
;;
;; Queueing: it registers Pod Delete and Node Add and Update; its hint skips a Node Update
;; (the cap is a count of pods in flight, which no node change lowers) and queues the rest.
(module
  (import "wasmkube" "node_name" (func $node_name (param i32 i32 i32) (result i32)))
  (import "wasmkube" "node_label" (func $node_label (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "state_get" (func $state_get (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "state_set" (func $state_set (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "shared_add" (func $shared_add (param i32 i32 i64) (result i64)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  (import "wasmkube" "register_event" (func $register_event (param i32 i32 i32)))
  (import "wasmkube" "event_resource" (func $event_resource (param i32 i32) (result i32)))
  (import "wasmkube" "event_action" (func $event_action (result i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "wasmkube.io/max-binding")        ;; 23 bytes
  (data (i32.const 32) "counted")                       ;; state key, 7 bytes
  (data (i32.const 40) "1")
  (data (i32.const 41) "0")
  (data (i32.const 48) "too many pods binding on this node") ;; 34 bytes
  (data (i32.const 96) "Node")
  (data (i32.const 104) "Pod")
  ;; 256: node name (256 bytes); 512: label value (16); 528: state value (16); 544: resource (16)

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  (func $name (result i32)
    (local $len i32)
    (local.set $len (call $node_name (i32.const 0) (i32.const 256) (i32.const 256)))
    (if (i32.gt_s (local.get $len) (i32.const 256)) (then (local.set $len (i32.const 256))))
    (local.get $len))

  ;; $cap parses the node's max-binding label: 1..9999, or 0 (no cap).
  (func $cap (result i32)
    (local $len i32) (local $i i32) (local $c i32) (local $v i32)
    (local.set $len (call $node_label (i32.const 0) (i32.const 0) (i32.const 23) (i32.const 512) (i32.const 16)))
    (if (i32.or (i32.lt_s (local.get $len) (i32.const 1)) (i32.gt_s (local.get $len) (i32.const 4)))
      (then (return (i32.const 0))))
    (block $done
      (loop $digit
        (br_if $done (i32.ge_s (local.get $i) (local.get $len)))
        (local.set $c (i32.sub (i32.load8_u (i32.add (i32.const 512) (local.get $i))) (i32.const 48)))
        (if (i32.gt_u (local.get $c) (i32.const 9)) (then (return (i32.const 0))))
        (local.set $v (i32.add (i32.mul (local.get $v) (i32.const 10)) (local.get $c)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $digit)))
    (local.get $v))

  (func (export "wasmkube_reserve") (result i32)
    (local $cap i32) (local $len i32)
    (local.set $cap (call $cap))
    (if (i32.eqz (local.get $cap)) (then (return (i32.const 0))))
    (local.set $len (call $name))
    ;; the marker first: a Reserve stopped after it is undone by its Unreserve
    (drop (call $state_set (i32.const 32) (i32.const 7) (i32.const 40) (i32.const 1)))
    (if (i64.gt_s (call $shared_add (i32.const 256) (local.get $len) (i64.const 1)) (i64.extend_i32_u (local.get $cap)))
      (then
        (drop (call $shared_add (i32.const 256) (local.get $len) (i64.const -1)))
        (drop (call $state_set (i32.const 32) (i32.const 7) (i32.const 41) (i32.const 1)))
        (call $status_reason (i32.const 48) (i32.const 34))
        (return (i32.const 2))))
    (i32.const 0))

  ;; $release takes the pod's 1 back if its Reserve counted it, once.
  (func $release (result i32)
    (local $len i32)
    (if (i32.ne (call $state_get (i32.const 32) (i32.const 7) (i32.const 528) (i32.const 16)) (i32.const 1))
      (then (return (i32.const 0))))
    (if (i32.ne (i32.load8_u (i32.const 528)) (i32.const 49)) (then (return (i32.const 0))))
    (local.set $len (call $name))
    (drop (call $shared_add (i32.const 256) (local.get $len) (i64.const -1)))
    (drop (call $state_set (i32.const 32) (i32.const 7) (i32.const 41) (i32.const 1)))
    (i32.const 0))

  (func (export "wasmkube_unreserve") (result i32) (call $release))
  (func (export "wasmkube_postbind") (result i32) (call $release))

  (func (export "wasmkube_events") (result i32)
    (call $register_event (i32.const 104) (i32.const 3) (i32.const 2)) ;; Pod: Delete
    (call $register_event (i32.const 96) (i32.const 4) (i32.const 5))  ;; Node: Add | Update
    (i32.const 0))

  (func (export "wasmkube_queueing_hint") (result i32)
    (if (i32.and (i32.eq (call $event_resource (i32.const 544) (i32.const 16)) (i32.const 4))
                 (i32.eq (call $event_action) (i32.const 4)))
      (then (return (i32.const 5)))) ;; Node Update: Skip
    (i32.const 0)))
