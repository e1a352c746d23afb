;; PreFilter stores the pod's name in cycle state under "pod"; Filter reads it back and
;; rejects every node whose name differs from it with reason "state mismatch", and every
;; node when the state is missing ("no state"). It proves that cycle state written by one
;; instance is read by others.
(module
  (import "wasmkube" "pod_name" (func $pod_name (param i32 i32) (result i32)))
  (import "wasmkube" "node_name" (func $node_name (param i32 i32 i32) (result i32)))
  (import "wasmkube" "state_get" (func $state_get (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "state_set" (func $state_set (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "pod")
  (data (i32.const 16) "state mismatch")
  (data (i32.const 32) "no state")
  ;; 1024: pod name buffer (256), 2048: state buffer (256), 3072: node name buffer (256)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_prefilter") (result i32)
    (local $len i32)
    (local.set $len (call $pod_name (i32.const 1024) (i32.const 256)))
    (drop (call $state_set (i32.const 0) (i32.const 3) (i32.const 1024) (local.get $len)))
    (i32.const 0))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (local $i i32) (local $slen i32) (local $nlen i32) (local $j i32) (local $same i32)
    (local.set $slen (call $state_get (i32.const 0) (i32.const 3) (i32.const 2048) (i32.const 256)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (block $verdict
          (if (i32.lt_s (local.get $slen) (i32.const 0))
            (then (call $node_status (local.get $i) (i32.const 3) (i32.const 32) (i32.const 8)) (br $verdict)))
          (local.set $nlen (call $node_name (local.get $i) (i32.const 3072) (i32.const 256)))
          (local.set $same (i32.eq (local.get $nlen) (local.get $slen)))
          (local.set $j (i32.const 0))
          (block $cmp
            (loop $c
              (br_if $cmp (i32.or (i32.eqz (local.get $same)) (i32.ge_u (local.get $j) (local.get $nlen))))
              (if (i32.ne (i32.load8_u (i32.add (i32.const 3072) (local.get $j)))
                          (i32.load8_u (i32.add (i32.const 2048) (local.get $j))))
                (then (local.set $same (i32.const 0))))
              (local.set $j (i32.add (local.get $j) (i32.const 1)))
              (br $c)))
          (if (i32.eqz (local.get $same))
            (then (call $node_status (local.get $i) (i32.const 2) (i32.const 16) (i32.const 14)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
