;; Filter that, for a pod labelled "bad", asks for more memory than its limit allows and
;; would cope with a -1: the host ends the call at the refused grow instead (a memory-limit
;; failure). For a pod labelled "late" it only traps, in a later call: the refused grow of
;; an earlier call is forgotten, so that trap is a plain trap.
(module
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "badlate")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func $has (param $p i32) (param $l i32) (result i32)
    (i32.ne (call $pod_label (local.get $p) (local.get $l) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (call $has (i32.const 0) (i32.const 3))
      (then (drop (memory.grow (i32.const 60000)))))
    (if (call $has (i32.const 3) (i32.const 4))
      (then unreachable))
    (i32.const 0)))
