;; {{.Name}}: a wasmkube scheduler Filter plugin in WebAssembly text (docs/abi.md). It
;; rejects every node labelled example.com/blocked (any value) as Unschedulable.
(module
  ;; node_label(i, key_ptr, key_len, buf, cap) -> value length, -1 when absent
  (import "wasmkube" "node_label" (func $node_label (param i32 i32 i32 i32 i32) (result i32)))
  ;; node_status(i, code, reason_ptr, reason_len)
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "example.com/blocked")                          ;; 19 bytes
  (data (i32.const 32) "node is blocked (label example.com/blocked)") ;; 43 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; wasmkube_sign: the signature (docs/abi.md section 1.5). The filter reads nothing of
  ;; the pod, so every pod signs alike (no fragments, Success) and the scheduler may place
  ;; a pod from the pass of the pod before it (batching). Sign everything the filter reads
  ;; when you change it (sign_fragment); `wasmkube plugin conformance` fails a plugin that
  ;; signs too little.
  (func (export "wasmkube_sign") (result i32) (i32.const 0))

  ;; wasmkube_filter(count): nodes 0..count-1 of the batch; the ones not rejected pass.
  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        ;; cap 0: only ask whether the label exists (its length, or -1)
        (if (i32.ge_s (call $node_label (local.get $i) (i32.const 0) (i32.const 19) (i32.const 0) (i32.const 0))
                      (i32.const 0))
          (then (call $node_status (local.get $i) (i32.const 2) (i32.const 32) (i32.const 43))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))  ;; Success
