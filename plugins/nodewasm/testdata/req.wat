;; Written from docs/abi.md alone, for the sandbox tests. Its args are a JSON string
;; "<port> <path>" (or "<port>" alone: tcp_connect). The probe sends GET <path> to that
;; port of its pod (or opens a TCP connection) and always fails, with the result (the HTTP
;; status or -errno) in decimal as its reason, followed by " " and the Location header of
;; the response when it has one. The preStop sends a POST of "drain" instead.
(module
  (import "wasmkube" "args" (func $args (param i32 i32) (result i32)))
  (import "wasmkube" "http_get" (func $http_get (param i32 i32 i32) (result i32)))
  (import "wasmkube" "http_post" (func $http_post (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "tcp_connect" (func $tcp (param i32) (result i32)))
  (import "wasmkube" "response_header" (func $header (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $reason (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "Location")
  (data (i32.const 16) "drain")
  (global $port (mut i32) (i32.const 0))
  (global $path (mut i32) (i32.const 0))  ;; start of the path in memory, 0: none
  (global $plen (mut i32) (i32.const 0))
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; parse reads args at 1024: skip '"', digits, then ' ' and the path up to the last '"'.
  (func $parse (local $n i32) (local $i i32) (local $c i32)
    (local.set $n (call $args (i32.const 1024) (i32.const 4096)))
    (global.set $port (i32.const 0)) (global.set $path (i32.const 0)) (global.set $plen (i32.const 0))
    (local.set $i (i32.const 1))
    (block $end (loop $digits
      (br_if $end (i32.ge_s (local.get $i) (local.get $n)))
      (local.set $c (i32.load8_u (i32.add (i32.const 1024) (local.get $i))))
      (br_if $end (i32.lt_u (local.get $c) (i32.const 48)))
      (br_if $end (i32.gt_u (local.get $c) (i32.const 57)))
      (global.set $port (i32.add (i32.mul (global.get $port) (i32.const 10)) (i32.sub (local.get $c) (i32.const 48))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $digits)))
    (if (i32.eq (local.get $c) (i32.const 32)) (then
      (global.set $path (i32.add (i32.const 1025) (local.get $i)))
      (global.set $plen (i32.sub (i32.sub (local.get $n) (local.get $i)) (i32.const 2))))))
  ;; report writes v in decimal at 512, then the Location header, as the reason.
  (func $report (param $v i32) (local $p i32) (local $neg i32) (local $q i32) (local $t i32) (local $h i32)
    (local.set $p (i32.const 600))
    (if (i32.lt_s (local.get $v) (i32.const 0)) (then (local.set $neg (i32.const 1)) (local.set $v (i32.sub (i32.const 0) (local.get $v)))))
    (loop $d
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $d (i32.ne (local.get $v) (i32.const 0))))
    (if (local.get $neg) (then (local.set $p (i32.sub (local.get $p) (i32.const 1))) (i32.store8 (local.get $p) (i32.const 45))))
    (local.set $q (i32.const 600))
    (local.set $h (call $header (i32.const 0) (i32.const 8) (i32.const 601) (i32.const 300)))
    (if (i32.and (i32.gt_s (local.get $h) (i32.const 0)) (i32.le_s (local.get $h) (i32.const 300))) (then
      (i32.store8 (i32.const 600) (i32.const 32))
      (local.set $q (i32.add (i32.const 601) (local.get $h)))))
    (call $reason (local.get $p) (i32.sub (local.get $q) (local.get $p))))
  (func $run (param $post i32) (result i32) (local $r i32)
    (call $parse)
    (if (i32.eqz (global.get $path))
      (then (local.set $r (call $tcp (global.get $port))))
      (else (if (local.get $post)
        (then (local.set $r (call $http_post (global.get $port) (global.get $path) (global.get $plen) (i32.const 16) (i32.const 5))))
        (else (local.set $r (call $http_get (global.get $port) (global.get $path) (global.get $plen)))))))
    (call $report (local.get $r))
    (local.get $r))
  (func (export "wasmkube_probe") (result i32) (drop (call $run (i32.const 0))) (i32.const 2))
  (func (export "wasmkube_prestop") (result i32) (drop (call $run (i32.const 1))) (i32.const 0)))
