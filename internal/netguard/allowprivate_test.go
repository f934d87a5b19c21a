package netguard

import (
	"net/netip"
	"testing"
)

// A server's --allow-private-address lets it reach link-local addresses too,
// never a cloud-metadata service.
func TestAllowPrivate(t *testing.T) {
	p := &Policy{AllowPrivate: true}
	for addr, allowed := range map[string]bool{
		"10.0.0.1": true, "127.0.0.1": true, "169.254.10.1": true, "fe80::1": true, "8.8.8.8": true,
		"169.254.169.254": false, "fd00:ec2::254": false, "0.0.0.0": false,
	} {
		if err := p.Allow(netip.MustParseAddr(addr)); (err == nil) != allowed {
			t.Errorf("Allow(%s) = %v, want allowed %v", addr, err, allowed)
		}
	}
	if err := (&Policy{}).Allow(netip.MustParseAddr("169.254.10.1")); err == nil {
		t.Error("the default policy allows a link-local address")
	}
}
