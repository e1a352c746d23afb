package runtime

import "testing"

func TestHostsFile(t *testing.T) {
	const loopback = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	for _, c := range []struct {
		name, ip, hostname, domain, want string
	}{
		{"pod", "10.42.0.5", "web", "", loopback + "10.42.0.5\tweb\n"},
		// Upstream's kubelet: the FQDN first, then the short name.
		{"subdomain", "10.42.0.5", "web-0", "nginx.default.svc.cluster.local", loopback + "10.42.0.5\tweb-0.nginx.default.svc.cluster.local\tweb-0\n"},
		{"no address yet", "", "web-0", "nginx.default.svc.cluster.local", loopback},
	} {
		if got := string(HostsFile(c.ip, c.hostname, c.domain)); got != c.want {
			t.Errorf("%s: HostsFile(%q, %q, %q) =\n%q, want\n%q", c.name, c.ip, c.hostname, c.domain, got, c.want)
		}
	}
}
