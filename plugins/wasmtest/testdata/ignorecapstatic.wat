;; Wrong on purpose, as C plugins usually are: reads pod_json into a static 4 KiB buffer it
;; never clears and ignores a result n > cap, so a truncated read sees whatever an earlier
;; call left there (conformance: "long, unicode and unrelated data do not change answers").
(module
  (import "wasmkube" "pod_json" (func $pod_json (param i32 i32) (result i32)))
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 8192) "pod is not JSON")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (local $i i32)
    (drop (call $pod_json (i32.const 0) (i32.const 4096)))
    (if (i32.ne (i32.load8_u (i32.const 0)) (i32.const 123))
      (then
        (loop $l
          (if (i32.lt_s (local.get $i) (local.get $n))
            (then
              (call $node_status (local.get $i) (i32.const 2) (i32.const 8192) (i32.const 15))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br $l))))))
    (i32.const 0)))
