;; Host calls with pointers outside memory for a pod labelled "bad": node_label with a key
;; at the end of the address space, then (never reached) a write buffer past memory.
(module
  (import "wasmkube" "node_label" (func $node_label (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "node_name" (func $node_name (param i32 i32 i32) (result i32)))
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "bad")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; $bad is true when the pod has the label "bad": the plugin misbehaves only then, so a
  ;; test can show that the next call (without the label) is served by a fresh instance.
  (func $bad (result i32)
    (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (call $bad)
      (then
        (drop (call $node_label (i32.const 0) (i32.const 0xfffffff0) (i32.const 100) (i32.const 0) (i32.const 0)))))
    (i32.const 0))
  (func (export "wasmkube_score") (param $n i32) (result i32)
    ;; a name buffer that starts inside memory and ends 1 byte past it
    (drop (call $node_name (i32.const 0) (i32.const 65535) (i32.const 2)))
    (i32.const 0)))
