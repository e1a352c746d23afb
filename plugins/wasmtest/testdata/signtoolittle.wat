;; A Filter that reads the pod's app label but signs nothing: pods that differ only in
;; that label get equal signatures and different answers, which the conformance check
;; "pods with equal signatures get equal answers" must report.
(module
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "app")
  (data (i32.const 16) "not for app=other")
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))
  ;; Signs nothing: claims the verdicts read no part of the pod.
  (func (export "wasmkube_sign") (result i32) (i32.const 0))
  ;; Rejects every node for a pod labelled app=other (5 bytes at 64..68).
  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (local $i i32)
    (if (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 64) (i32.const 16)) (i32.const 5))
      (then (return (i32.const 0))))
    (if (i32.ne (i32.load8_u (i32.const 64)) (i32.const 111)) ;; 'o'
      (then (return (i32.const 0))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (call $node_status (local.get $i) (i32.const 2) (i32.const 16) (i32.const 17))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
