package main

import (
	"fmt"
	"log/slog"
	"os"
	"syscall"
)

// restartSelf returns the API server's storage.Config.RestartProcess for `wasmkube server`:
// after the embedded etcd gave up on a failed write (a disk filled to the last byte faster
// than the server could refuse writes), the goroutine that failed holds etcd's locks and its
// database's file lock, so etcd cannot start again inside this process. Once the disk has
// room, the server replaces itself with a fresh copy of the same command (execve: same PID,
// arguments and environment; every descriptor is close-on-exec, so the listeners are
// released and bound again), as a supervisor restarts a crashed etcd. etcd starts from its
// WAL, which holds every write it acknowledged; clients reconnect as after any restart.
func restartSelf(log *slog.Logger) func(reason string) {
	return func(reason string) {
		exe, err := os.Executable()
		if err != nil {
			log.Error("cannot restart the server after etcd's failure: restart it by hand", "err", err, "etcd", reason)
			return
		}
		log.Warn("restarting the server process: the embedded etcd failed a write and its disk has room again", "etcd", reason, "exe", exe)
		if err := syscall.Exec(exe, os.Args, os.Environ()); err != nil {
			log.Error("cannot restart the server after etcd's failure: restart it by hand", "err", fmt.Errorf("exec %s: %w", exe, err), "etcd", reason)
		}
	}
}
