;; Garbage results for a pod labelled "bad": Filter returns status 42 and Score returns
;; scores of 1000 (outside [0, 100], and the module has no NormalizeScore).
(module
  (import "wasmkube" "node_score" (func $node_score (param i32 i64)))
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "bad")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; $bad is true when the pod has the label "bad": the plugin misbehaves only then, so a
  ;; test can show that the next call (without the label) is served by a fresh instance.
  (func $bad (result i32)
    (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (result i32) (call $bad) (then (i32.const 42)) (else (i32.const 0))))
  (func (export "wasmkube_score") (param $n i32) (result i32)
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (call $node_score (local.get $i)
          (if (result i64) (call $bad) (then (i64.const 1000)) (else (i64.const 7))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
