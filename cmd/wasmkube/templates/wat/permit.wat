;; {{.Name}}: a wasmkube scheduler Permit plugin in WebAssembly text (docs/abi.md section
;; 1.4), from wasm-examples/wat/coscheduling-permit: a gang plugin.
;; A pod with the label scheduling.wasmkube.io/group=NAME belongs to group NAME, whose size
;; is the label scheduling.wasmkube.io/min-available (a decimal number, 1..9999). Permit
;; holds each member on its node (Wait, 60 s, group NAME) until the group's last member
;; arrives: that one's Permit allows every member waiting under NAME and passes itself,
;; so the whole group binds together or, when the 60 s pass first, none of it does (each
;; waiting member is rejected, unreserved and requeued). A pod without the group label is
;; allowed at once; one with a group but no valid size is denied (3, with the reason).
;;
;; The members of a group must not be able to wait for ever for each other: Permit runs in
;; the scheduling cycle one pod at a time, so the last member always sees the others.
;;
;; It registers Node Add and Update and Pod Delete: room that appears may let a group that
;; timed out fit. It exports no hint, so each of these events requeues its pods.
(module
  ;; pod_label(key_ptr, key_len, buf, cap) -> value length, or -1 when absent
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))
  ;; permit_wait(timeout_ms, group_ptr, group_len)
  (import "wasmkube" "permit_wait" (func $permit_wait (param i32 i32 i32)))
  ;; waiting_pods(group_ptr, group_len, buf, cap) -> length of "uid\n" lines
  (import "wasmkube" "waiting_pods" (func $waiting_pods (param i32 i32 i32 i32) (result i32)))
  ;; waiting_allow(uid_ptr, uid_len) -> 0, or -1 when not held
  (import "wasmkube" "waiting_allow" (func $waiting_allow (param i32 i32) (result i32)))
  (import "wasmkube" "register_event" (func $register_event (param i32 i32 i32)))

  (memory (export "memory") 2)
  (data (i32.const 0) "scheduling.wasmkube.io/group")           ;; 28 bytes
  (data (i32.const 32) "scheduling.wasmkube.io/min-available")  ;; 36 bytes
  (data (i32.const 80) "label scheduling.wasmkube.io/min-available must be a number from 1 to 9999") ;; 74 bytes
  (data (i32.const 160) "Node")
  (data (i32.const 168) "Pod")
  ;; 256: group name (256 bytes); 512: min-available (16 bytes); 1024: waiting UIDs (64 KiB)

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  (func (export "wasmkube_events") (result i32)
    (call $register_event (i32.const 160) (i32.const 4) (i32.const 5)) ;; Node: Add | Update
    (call $register_event (i32.const 168) (i32.const 3) (i32.const 2)) ;; Pod: Delete
    (i32.const 0))

  ;; $min parses the min-available label: 1..9999, or 0 when absent or invalid.
  (func $min (result i32)
    (local $len i32) (local $i i32) (local $c i32) (local $v i32)
    (local.set $len (call $pod_label (i32.const 32) (i32.const 36) (i32.const 512) (i32.const 16)))
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

  (func (export "wasmkube_permit") (result i32)
    (local $glen i32) (local $min i32) (local $n i32) (local $i i32) (local $start i32) (local $count i32)
    (local.set $glen (call $pod_label (i32.const 0) (i32.const 28) (i32.const 256) (i32.const 256)))
    (if (i32.lt_s (local.get $glen) (i32.const 0)) (then (return (i32.const 0)))) ;; no group
    (if (i32.gt_s (local.get $glen) (i32.const 256)) (then (local.set $glen (i32.const 256))))
    (local.set $min (call $min))
    (if (i32.eqz (local.get $min))
      (then (call $status_reason (i32.const 80) (i32.const 74)) (return (i32.const 3))))
    (local.set $n (call $waiting_pods (i32.const 256) (local.get $glen) (i32.const 1024) (i32.const 65536)))
    (if (i32.gt_s (local.get $n) (i32.const 65536)) (then (local.set $n (i32.const 65536))))
    ;; count the waiting members: one line each
    (block $counted
      (loop $scan
        (br_if $counted (i32.ge_s (local.get $i) (local.get $n)))
        (if (i32.eq (i32.load8_u (i32.add (i32.const 1024) (local.get $i))) (i32.const 10))
          (then (local.set $count (i32.add (local.get $count) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (if (i32.lt_s (i32.add (local.get $count) (i32.const 1)) (local.get $min))
      (then
        (call $permit_wait (i32.const 60000) (i32.const 256) (local.get $glen))
        (return (i32.const 4))))
    ;; the group is complete: allow every waiting member, then this pod
    (local.set $i (i32.const 0))
    (block $done
      (loop $allow
        (br_if $done (i32.ge_s (local.get $i) (local.get $n)))
        (if (i32.eq (i32.load8_u (i32.add (i32.const 1024) (local.get $i))) (i32.const 10))
          (then
            (drop (call $waiting_allow (i32.add (i32.const 1024) (local.get $start)) (i32.sub (local.get $i) (local.get $start))))
            (local.set $start (i32.add (local.get $i) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $allow)))
    (i32.const 0)))
