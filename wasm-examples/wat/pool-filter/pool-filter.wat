;; pool-filter: a wasmkube Filter plugin that signs its pods (docs/abi.md section 1.5),
;; written by hand in WebAssembly text from docs/abi.md alone.
;;
;; A pod labelled pool=X fits only nodes labelled pool=X (reason "node is not in the
;; pod's pool", Unschedulable); a pod without the label fits every node. The verdict
;; depends on the pod's pool label and nothing else of the pod, so wasmkube_sign gives
;; that label as the one fragment ("pool" -> its value, "" when absent): pods of one pool
;; are scheduled from one Filter/Score pass, and this plugin never makes a pod unsignable.
(module
  ;; pod_label(key_ptr, key_len, buf, cap) -> value length, or -1 when absent
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  ;; node_label(i, key_ptr, key_len, buf, cap) -> value length, or -1 when absent
  (import "wasmkube" "node_label" (func $node_label (param i32 i32 i32 i32 i32) (result i32)))
  ;; node_status(i, code, reason_ptr, reason_len)
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  ;; sign_fragment(key_ptr, key_len, value_ptr, value_len)
  (import "wasmkube" "sign_fragment" (func $sign_fragment (param i32 i32 i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "pool")                          ;; 4 bytes
  (data (i32.const 16) "node is not in the pod's pool") ;; 29 bytes
  ;; 64..127: the pod's pool; 128..191: a node's pool (values up to 63 bytes, the
  ;; label value limit)

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; podPool writes the pod's pool at 64 and returns its length (-1: no label).
  (func $podPool (result i32)
    (call $pod_label (i32.const 0) (i32.const 4) (i32.const 64) (i32.const 64)))

  ;; wasmkube_sign: one fragment, the pool ("" when the pod has none). Returns 0 (signed).
  (func (export "wasmkube_sign") (result i32)
    (local $n i32)
    (local.set $n (call $podPool))
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then (local.set $n (i32.const 0))))
    (call $sign_fragment (i32.const 0) (i32.const 4) (i32.const 64) (local.get $n))
    (i32.const 0))

  ;; wasmkube_filter(count): nodes whose pool differs from the pod's are rejected.
  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (local $i i32) (local $want i32) (local $got i32) (local $j i32) (local $same i32)
    (local.set $want (call $podPool))
    (if (i32.lt_s (local.get $want) (i32.const 0)) (then (return (i32.const 0))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $got (call $node_label (local.get $i) (i32.const 0) (i32.const 4) (i32.const 128) (i32.const 64)))
        (local.set $same (i32.eq (local.get $got) (local.get $want)))
        (local.set $j (i32.const 0))
        (block $cmp
          (loop $byte
            (br_if $cmp (i32.eqz (local.get $same)))
            (br_if $cmp (i32.ge_s (local.get $j) (local.get $want)))
            (if (i32.ne (i32.load8_u (i32.add (i32.const 64) (local.get $j)))
                        (i32.load8_u (i32.add (i32.const 128) (local.get $j))))
              (then (local.set $same (i32.const 0))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $byte)))
        (if (i32.eqz (local.get $same))
          (then (call $node_status (local.get $i) (i32.const 2) (i32.const 16) (i32.const 29))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
