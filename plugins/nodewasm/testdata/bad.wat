;; Misbehaving probe and preStop plugins, written from docs/abi.md alone. Its args are one
;; digit choosing what it does: 1 loops forever, 2 traps, 3 grows its memory until refused
;; and then traps (as a language runtime aborts), 4 returns a status code no kind allows,
;; 5 passes a pointer outside its memory, 6 sleeps in a loop forever (preStop) and ignores
;; sleep_ms's ETIMEDOUT. It behaves (returns 0) for the container "app", the container of
;; the kubelet's smoke call, so that it loads: a plugin may well pass its smoke call and
;; misbehave later.
(module
  (import "wasmkube" "args" (func $args (param i32 i32) (result i32)))
  (import "wasmkube" "container_name" (func $container (param i32 i32) (result i32)))
  (import "wasmkube" "pod_name" (func $pod_name (param i32 i32) (result i32)))
  (import "wasmkube" "sleep_ms" (func $sleep (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func $mode (result i32)
    (drop (call $args (i32.const 0) (i32.const 8)))
    (i32.sub (i32.load8_u (i32.const 0)) (i32.const 48)))
  (func $run (result i32) (local $m i32)
    (drop (call $container (i32.const 16) (i32.const 16)))
    (if (i32.eq (i32.load8_u (i32.const 16)) (i32.const 97)) (then (return (i32.const 0)))) ;; "app"
    (local.set $m (call $mode))
    (if (i32.eq (local.get $m) (i32.const 1)) (then (loop $forever (br $forever))))
    (if (i32.eq (local.get $m) (i32.const 2)) (then unreachable))
    (if (i32.eq (local.get $m) (i32.const 3)) (then
      (loop $grow (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
      unreachable))
    (if (i32.eq (local.get $m) (i32.const 4)) (then (return (i32.const 7))))
    (if (i32.eq (local.get $m) (i32.const 5)) (then (return (call $pod_name (i32.const 0x7ffffff0) (i32.const 64)))))
    (if (i32.eq (local.get $m) (i32.const 6)) (then (loop $nap (drop (call $sleep (i32.const 100))) (br $nap))))
    (i32.const 0))
  (func (export "wasmkube_probe") (result i32) (call $run))
  (func (export "wasmkube_prestop") (result i32) (call $run)))
