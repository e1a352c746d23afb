;; Filter that, for a pod labelled "bad", grows its memory in 4 MiB steps until a grow is
;; refused and then aborts, as a language runtime with a coarse heap does. With a 16 MiB
;; limit the last refused step leaves almost 4 MiB free: only the refused grow itself
;; tells that the memory limit caused the trap.
(module
  (import "wasmkube" "pod_label" (func $pod_label (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "bad")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func $bad (result i32)
    (i32.ne (call $pod_label (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 0)) (i32.const -1)))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (call $bad)
      (then
        (loop $more
          (br_if $more (i32.ne (memory.grow (i32.const 64)) (i32.const -1))))
        unreachable))
    (i32.const 0)))
