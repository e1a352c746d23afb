package nodewasm

// RedirectTo sends every connection of the call to addr, whatever the port the guest asks
// for, as the smoke call does: the plugin kit serves a case's fake pod endpoint on
// loopback this way. The kubelet never sets it; the guest cannot.
func (c *Call) RedirectTo(addr string) { c.dial = addr }
