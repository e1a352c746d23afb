package proxy

import (
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/google/nftables"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/internal/netnstest"
)

// TestNodePortToAnotherHost: a client on the hosts' network connects to a NodePort on one
// node whose only endpoint is a pod on another host. Three hosts (client, node, backend)
// are network namespaces of the test's own on one bridge; the backend answers the client
// directly unless the node masqueraded the connection, so the connection works only if
// the node took it as its own source (as kube-proxy does for externalTrafficPolicy Cluster).
func TestNodePortToAnotherHost(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("nftables tests need root")
	}
	p := fmt.Sprintf("wknp%d", os.Getpid()%100000)
	sh := func(args ...string) { t.Helper(); netnstest.Sh(t, args...) }
	hosts := []string{p + "l", p + "c", p + "n", p + "b"} // lan (bridge), client, node, backend
	for _, h := range hosts {
		netnstest.Add(t, h)
	}
	lan := hosts[0]
	sh("ip", "-n", lan, "link", "add", "br0", "type", "bridge")
	sh("ip", "-n", lan, "link", "set", "br0", "up")
	for i, h := range hosts[1:] {
		port := fmt.Sprintf("p%d", i)
		sh("ip", "-n", lan, "link", "add", port, "master", "br0", "type", "veth", "peer", "name", "eth0", "netns", h)
		sh("ip", "-n", lan, "link", "set", port, "up")
		sh("ip", "-n", h, "addr", "add", fmt.Sprintf("192.168.77.%d/24", i+2), "dev", "eth0")
		sh("ip", "-n", h, "link", "set", "eth0", "up")
	}
	client, node, backend := hosts[1], hosts[2], hosts[3]
	// the backend host holds the "pod" 10.42.1.2; the node routes that subnet to it
	sh("ip", "-n", backend, "addr", "add", "10.42.1.2/32", "dev", "lo")
	sh("ip", "-n", node, "route", "add", "10.42.1.0/24", "via", "192.168.77.4")
	sh("ip", "netns", "exec", node, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.eth0.send_redirects=0")

	tbl, err := newTable("wasmkube-test", Network{Bridge: "wkt0", PodCIDR: "10.42.0.0/24", ServiceCIDR: "10.96.0.0/16",
		NodeIPs: []string{"10.42.0.1", "192.168.77.3"}}, nftables.WithNetNSFd(int(netnstest.Handle(t, node))))
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.apply(Ruleset{Services: []ServicePort{{Name: "ns/web/http/tcp", ClusterIP: "10.96.0.10", Protocol: v1.ProtocolTCP,
		Port: 80, NodePort: 30080, Endpoints: []Endpoint{{IP: "10.42.1.2", Port: 8080}}}}}); err != nil {
		t.Fatal(err)
	}

	var ln net.Listener
	netnstest.Run(t, backend, func() { ln, err = net.Listen("tcp", "10.42.1.2:8080") })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peers := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		peers <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		_, _ = io.WriteString(c, "hello")
		c.Close()
	}()

	var got []byte
	netnstest.Run(t, client, func() {
		var c net.Conn
		c, err = net.DialTimeout("tcp", "192.168.77.3:30080", 5*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		got, err = io.ReadAll(c)
	})
	if err != nil || string(got) != "hello" {
		t.Fatalf("client -> NodePort 192.168.77.3:30080 -> pod 10.42.1.2:8080 on another host: %q, %v", got, err)
	}
	if peer := <-peers; peer != "192.168.77.3" {
		t.Errorf("the backend saw the connection from %s, want the node's address 192.168.77.3 (masqueraded)", peer)
	}
}
