;; {{.Name}}: a wasmkube kubelet preStop plugin in WebAssembly text (docs/abi.md section
;; 4.7): before the container is stopped it asks the application to shut down with
;; POST :8080/shutdown. SIGTERM follows either way.
(module
  ;; http_post(port, path_ptr, path_len, body_ptr, body_len) -> the HTTP status, or -errno
  (import "wasmkube" "http_post" (func $http_post (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))

  (memory (export "memory") 1)
  (data (i32.const 0) "/shutdown")                                    ;; 9 bytes
  (data (i32.const 16) "POST :8080/shutdown: no connection")          ;; 34 bytes
  (data (i32.const 64) "POST :8080/shutdown: HTTP status not 2xx")    ;; 40 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  (func (export "wasmkube_prestop") (result i32)
    (local $status i32)
    (local.set $status (call $http_post (i32.const 8080) (i32.const 0) (i32.const 9) (i32.const 0) (i32.const 0)))
    (if (i32.lt_s (local.get $status) (i32.const 0))
      (then
        (call $status_reason (i32.const 16) (i32.const 34))
        (return (i32.const 1))))  ;; Error: a FailedPreStopHook event
    (if (i32.or (i32.lt_s (local.get $status) (i32.const 200)) (i32.ge_s (local.get $status) (i32.const 300)))
      (then
        (call $status_reason (i32.const 64) (i32.const 40))
        (return (i32.const 1))))
    (i32.const 0)))               ;; done: the container may be stopped
