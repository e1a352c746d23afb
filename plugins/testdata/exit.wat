;; Filter that calls WASI proc_exit(3) for a pod labelled "bad".
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "bad")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; $bad is true when the pod has the label "bad": the plugin misbehaves only then, so a
  ;; test can show that the next call (without the label) is served by a fresh instance.
  (func $bad (result i32)
    (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (call $bad) (then (call $proc_exit (i32.const 3))))
    (i32.const 0)))
