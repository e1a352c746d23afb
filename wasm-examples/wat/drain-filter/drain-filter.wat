;; drain-filter: a wasmkube Filter plugin written by hand in WebAssembly text, from
;; docs/abi.md alone, to show the ABI needs no SDK and no language runtime.
;;
;; It rejects every node that carries the label wasmkube.io/drain (any value) with the
;; reason "node is draining", as UnschedulableAndUnresolvable.
(module
  ;; node_label(i, key_ptr, key_len, buf, cap) -> value length, or -1 when absent
  (import "wasmkube" "node_label" (func $node_label (param i32 i32 i32 i32 i32) (result i32)))
  ;; node_status(i, code, reason_ptr, reason_len)
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "wasmkube.io/drain")   ;; 17 bytes
  (data (i32.const 32) "node is draining")   ;; 16 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; wasmkube_filter(count): nodes 0..count-1; nodes not rejected pass.
  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        ;; cap 0: ask only whether the label exists
        (if (i32.ge_s (call $node_label (local.get $i) (i32.const 0) (i32.const 17) (i32.const 0) (i32.const 0))
                      (i32.const 0))
          (then (call $node_status (local.get $i) (i32.const 3) (i32.const 32) (i32.const 16))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
