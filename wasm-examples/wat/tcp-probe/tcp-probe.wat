;; tcp-probe: a wasmkube kubelet Probe written by hand in WebAssembly text, from docs/abi.md
;; alone: the probe passes when a TCP connection to the pod's IP and the args' port opens
;; (a tcpSocket probe as a plugin, the smallest one there is).
;;
;; Args: {"port": 5432}. wasmkube_init reads the first number of the args object as the
;; port and rejects the plugin at load time when the args are not an object, or the number
;; is missing or outside 1..65535.
(module
  ;; args(buf, cap) -> full length of the args JSON
  (import "wasmkube" "args" (func $args (param i32 i32) (result i32)))
  ;; tcp_connect(port) -> 0, or -errno (Linux numbers)
  (import "wasmkube" "tcp_connect" (func $tcp_connect (param i32) (result i32)))
  ;; status_reason(ptr, len)
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))

  (memory (export "memory") 1)
  ;; reasons, at fixed offsets below 1024; the args buffer is [1024, 2048)
  (data (i32.const 0) "args.port: a port 1..65535 is required, e.g. {\"port\": 5432}") ;; 59 bytes
  (data (i32.const 64) "connection refused")                                         ;; 18
  (data (i32.const 96) "connection timed out (the probe's timeoutSeconds)")          ;; 49
  (data (i32.const 160) "no route to the pod's IP")                                  ;; 24
  (data (i32.const 192) "connection reset")                                          ;; 16
  (data (i32.const 224) "the pod has no IP yet")                                     ;; 21
  (data (i32.const 256) "connection failed")                                         ;; 17

  (global $port (mut i32) (i32.const 0))

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; wasmkube_init: the first run of digits in the args object is the port.
  (func (export "wasmkube_init") (result i32)
    (local $n i32) (local $i i32) (local $c i32) (local $v i32) (local $seen i32)
    (local.set $n (call $args (i32.const 1024) (i32.const 1024)))
    (if (i32.gt_s (local.get $n) (i32.const 1024)) (then (local.set $n (i32.const 0))))
    ;; the args must be a JSON object ({"port": 5432}): 42 or [1, 2] is no port
    (if (i32.or (i32.le_s (local.get $n) (i32.const 0))
                (i32.ne (i32.load8_u (i32.const 1024)) (i32.const 123)))
      (then
        (call $status_reason (i32.const 0) (i32.const 59))
        (return (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $i) (local.get $n)))
        (local.set $c (i32.load8_u (i32.add (i32.const 1024) (local.get $i))))
        (if (i32.and (i32.ge_u (local.get $c) (i32.const 48)) (i32.le_u (local.get $c) (i32.const 57)))
          (then
            (local.set $seen (i32.const 1))
            ;; stop growing past 65535 so a long run of digits cannot wrap around
            (if (i32.le_u (local.get $v) (i32.const 65535))
              (then (local.set $v (i32.add (i32.mul (local.get $v) (i32.const 10))
                                           (i32.sub (local.get $c) (i32.const 48)))))))
          (else (br_if $done (local.get $seen))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (if (i32.or (i32.eqz (local.get $v)) (i32.gt_u (local.get $v) (i32.const 65535)))
      (then
        (call $status_reason (i32.const 0) (i32.const 59))
        (return (i32.const 1))))
    (global.set $port (local.get $v))
    (i32.const 0))

  ;; wasmkube_probe: 0 success, 2 failure with the errno's meaning as the reason.
  (func (export "wasmkube_probe") (result i32)
    (local $r i32)
    (local.set $r (call $tcp_connect (global.get $port)))
    (if (i32.eqz (local.get $r)) (then (return (i32.const 0))))
    (block $other
      (block $eacces
        (block $econnreset
          (block $ehostunreach
            (block $etimedout
              (block $econnrefused
                (br_if $econnrefused (i32.eq (local.get $r) (i32.const -111)))
                (br_if $etimedout (i32.eq (local.get $r) (i32.const -110)))
                (br_if $ehostunreach (i32.eq (local.get $r) (i32.const -113)))
                (br_if $econnreset (i32.eq (local.get $r) (i32.const -104)))
                (br_if $eacces (i32.eq (local.get $r) (i32.const -13)))
                (br $other))
              (call $status_reason (i32.const 64) (i32.const 18))
              (return (i32.const 2)))
            (call $status_reason (i32.const 96) (i32.const 49))
            (return (i32.const 2)))
          (call $status_reason (i32.const 160) (i32.const 24))
          (return (i32.const 2)))
        (call $status_reason (i32.const 192) (i32.const 16))
        (return (i32.const 2)))
      (call $status_reason (i32.const 224) (i32.const 21))
      (return (i32.const 2)))
    (call $status_reason (i32.const 256) (i32.const 17))
    (i32.const 2)))
