// Command pause is the process of a pod sandbox: it holds the pod's network, IPC and UTS
// namespaces open and does nothing else until it is told to stop.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
