;; {{.Name}}: a wasmkube kubelet probe plugin in WebAssembly text (docs/abi.md section
;; 4.7): the container is healthy when GET :8080/healthz on the pod's IP answers 2xx or 3xx.
(module
  ;; http_get(port, path_ptr, path_len) -> the HTTP status, or -errno
  (import "wasmkube" "http_get" (func $http_get (param i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "/healthz")                                       ;; 8 bytes
  (data (i32.const 16) "GET :8080/healthz: no connection")              ;; 32 bytes
  (data (i32.const 64) "GET :8080/healthz: HTTP status not 2xx or 3xx") ;; 45 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  (func (export "wasmkube_probe") (result i32)
    (local $status i32)
    (local.set $status (call $http_get (i32.const 8080) (i32.const 0) (i32.const 8)))
    (if (i32.lt_s (local.get $status) (i32.const 0))
      (then
        (call $status_reason (i32.const 16) (i32.const 32))
        (return (i32.const 2))))  ;; Failure: the reason is the Unhealthy event's message
    (if (i32.or (i32.lt_s (local.get $status) (i32.const 200)) (i32.ge_s (local.get $status) (i32.const 400)))
      (then
        (call $status_reason (i32.const 64) (i32.const 45))
        (return (i32.const 2))))
    (i32.const 0)))               ;; Success
