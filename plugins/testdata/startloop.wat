;; A module with a start section (which the host's rewriter refuses, so it runs with
;; wazero's context interruption) whose Filter loops forever for a pod labelled "bad".
(module
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "bad")
  (global $started (mut i32) (i32.const 0))
  (func $start (global.set $started (i32.const 1)))
  (start $start)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1))
      (then (loop $forever (br $forever))))
    (global.get $started)
    (drop)
    (i32.const 0)))
