;; A probe and preStop written from docs/abi.md alone: its args are a port number (JSON,
;; e.g. 8080). Probe: GET /health on the pod; success when the status is 200 and the body
;; starts with "ok", failure otherwise with the reason "status N" or "body not ok".
;; PreStop: GET /cgi-bin/drain, then poll /inflight every 50ms until the body is "0"
;; (or "0\n").
(module
  (import "wasmkube" "args" (func $args (param i32 i32) (result i32)))
  (import "wasmkube" "http_get" (func $http_get (param i32 i32 i32) (result i32)))
  (import "wasmkube" "response_body" (func $body (param i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $reason (param i32 i32)))
  (import "wasmkube" "sleep_ms" (func $sleep (param i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "/health")      ;; 7
  (data (i32.const 16) "body not ok") ;; 11
  (data (i32.const 32) "/cgi-bin/drain") ;; 14
  (data (i32.const 48) "/inflight")   ;; 9
  (data (i32.const 64) "status ")     ;; 7, then digits at 71
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  ;; port parses the decimal args at 256.
  (func $port (result i32) (local $n i32) (local $i i32) (local $p i32)
    (local.set $n (call $args (i32.const 256) (i32.const 16)))
    (block $done (loop $next
      (br_if $done (i32.ge_s (local.get $i) (local.get $n)))
      (local.set $p (i32.add (i32.mul (local.get $p) (i32.const 10))
        (i32.sub (i32.load8_u (i32.add (i32.const 256) (local.get $i))) (i32.const 48))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (local.get $p))
  ;; itoa writes v (0..999) at 71 and returns its length.
  (func $itoa (param $v i32) (result i32)
    (i32.store8 (i32.const 71) (i32.add (i32.const 48) (i32.div_u (local.get $v) (i32.const 100))))
    (i32.store8 (i32.const 72) (i32.add (i32.const 48) (i32.rem_u (i32.div_u (local.get $v) (i32.const 10)) (i32.const 10))))
    (i32.store8 (i32.const 73) (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
    (i32.const 3))
  (func (export "wasmkube_probe") (result i32) (local $st i32) (local $n i32)
    (local.set $st (call $http_get (call $port) (i32.const 0) (i32.const 7)))
    (if (i32.ne (local.get $st) (i32.const 200)) (then
      (if (i32.lt_s (local.get $st) (i32.const 0))
        (then (local.set $st (i32.sub (i32.const 0) (local.get $st)))))
      (call $reason (i32.const 64) (i32.add (i32.const 7) (call $itoa (local.get $st))))
      (return (i32.const 2))))
    (local.set $n (call $body (i32.const 512) (i32.const 64)))
    (if (i32.and (i32.ge_s (local.get $n) (i32.const 2))
                 (i32.eq (i32.load16_u (i32.const 512)) (i32.const 0x6b6f))) ;; "ok"
      (then (return (i32.const 0))))
    (call $reason (i32.const 16) (i32.const 11))
    (i32.const 2))
;; zero: the n-byte body at 512 is "0" or "0\n".
  (func $zero (param $n i32) (result i32)
    (if (i32.ne (i32.load8_u (i32.const 512)) (i32.const 48)) (then (return (i32.const 0))))
    (if (i32.eq (local.get $n) (i32.const 1)) (then (return (i32.const 1))))
    (i32.and (i32.eq (local.get $n) (i32.const 2)) (i32.eq (i32.load8_u (i32.const 513)) (i32.const 10))))
  (func (export "wasmkube_prestop") (result i32) (local $port i32)
    (local.set $port (call $port))
    (drop (call $http_get (local.get $port) (i32.const 32) (i32.const 14)))
    (loop $poll
      (if (i32.eq (call $http_get (local.get $port) (i32.const 48) (i32.const 9)) (i32.const 200)) (then
        (if (call $zero (call $body (i32.const 512) (i32.const 64)))
          (then (return (i32.const 0))))))
      (drop (call $sleep (i32.const 50)))
      (br $poll))
    (i32.const 0)))
