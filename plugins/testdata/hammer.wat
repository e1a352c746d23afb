;; Filter for the pool hammer test: traps for a pod labelled "trap", loops forever for one
;; labelled "loop", and passes every other pod.
(module
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "trap")
  (data (i32.const 16) "loop")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func $has (param $p i32) (result i32)
    (i32.ne (call $pod_label (local.get $p) (i32.const 4) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (call $has (i32.const 0)) (then unreachable))
    (if (call $has (i32.const 16)) (then (loop $forever (br $forever))))
    (i32.const 0)))
