// Package netguard decides which network addresses the gateway may connect
// to on behalf of a configured MCP server.
//
// It sits under the remote upstreams, at the moment a connection is made:
//
//	router ──▶ upstream (HTTP) ──▶ net.Dialer ──Control──▶ Policy.Allow ──▶ MCP server
//
// A URL in the configuration is checked once when it is read ([Policy.CheckURL])
// so that a bad one fails early with a clear message, and every connection is
// checked again on the address actually dialled ([Policy.Control],
// [Policy.DialContext]), after DNS resolution: a name that resolves to a
// public address when the configuration is read and to the metadata service
// later (DNS rebinding) is still refused.
//
// Refused: cloud metadata services (169.254.169.254, fd00:ec2::254,
// 100.100.100.200 and the others listed in [MetadataAddrs]), link-local addresses,
// unspecified, multicast and broadcast addresses. Allowed with a warning,
// logged once per server and kind of address: loopback and private addresses
// (RFC 1918, RFC 4193, the shared 100.64.0.0/10 range). Allowed silently:
// everything else. [Policy.AllowAll] turns every check off.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
)

// Class is the kind of an address, as far as the policy cares.
type Class string

const (
	Public      Class = "public"
	Private     Class = "private"  // allowed with a warning
	Loopback    Class = "loopback" // allowed with a warning
	LinkLocal   Class = "link-local"
	Metadata    Class = "cloud metadata"
	Unspecified Class = "unspecified"
	Multicast   Class = "multicast"
	Broadcast   Class = "broadcast"
)

// Refused reports whether the policy refuses addresses of class c.
func (c Class) Refused() bool {
	switch c {
	case Public, Private, Loopback:
		return false
	}
	return true
}

// Warned reports whether the policy allows addresses of class c with a warning.
func (c Class) Warned() bool { return c == Private || c == Loopback }

// article returns the class with "a" or "an" before it.
func article(c Class) string {
	if strings.ContainsRune("aeiou", rune(c[0])) {
		return "an " + string(c)
	}
	return "a " + string(c)
}

// MetadataAddrs lists the addresses of cloud instance metadata services, which
// hand out the machine's credentials to whoever asks.
var MetadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean, Hetzner, ...
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata and credentials
	netip.MustParseAddr("169.254.170.23"),  // AWS EKS Pod Identity
	netip.MustParseAddr("169.254.0.23"),    // Tencent Cloud
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud (classic)
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS Pod Identity over IPv6
}

var (
	sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598 (carrier-grade NAT)
	thisNetwork        = netip.MustParsePrefix("0.0.0.0/8")
	nat64              = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour          = netip.MustParsePrefix("2002::/16")
	broadcast          = netip.MustParseAddr("255.255.255.255")
)

// Classify returns the class of ip. An IPv4 address written in IPv6 form
// (IPv4-mapped, NAT64, 6to4) is classified by the IPv4 address it reaches.
func Classify(ip netip.Addr) Class {
	ip = ip.WithZone("")
	if v4, ok := embeddedIPv4(ip); ok {
		if c := Classify(v4); c != Public {
			return c
		}
	}
	ip = ip.Unmap()
	for _, m := range MetadataAddrs {
		if ip == m {
			return Metadata
		}
	}
	switch {
	case !ip.IsValid() || ip.IsUnspecified() || thisNetwork.Contains(ip):
		return Unspecified
	case ip.IsLoopback():
		return Loopback
	case ip.IsLinkLocalUnicast():
		return LinkLocal
	case ip.IsMulticast():
		return Multicast
	case ip == broadcast:
		return Broadcast
	case ip.IsPrivate() || sharedAddressSpace.Contains(ip):
		return Private
	}
	return Public
}

// embeddedIPv4 returns the IPv4 address an IPv6 NAT64 or 6to4 address leads to.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() || ip.Is4In6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// ErrRefused is wrapped by every *RefusedError.
var ErrRefused = errors.New("address refused by the gateway's network policy")

// RefusedError says that an address may not be connected to, and why.
type RefusedError struct {
	IP    netip.Addr
	Class Class
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is %s address, which the gateway does not connect to", e.IP, article(e.Class))
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Policy checks the addresses the gateway connects to. The zero value is the
// default policy; it is safe for concurrent use and must not be copied after
// first use. Share one Policy for the whole gateway, so that each warning is
// logged once per server.
type Policy struct {
	// AllowAll turns every check off (and every warning).
	AllowAll bool
	// AllowPrivate also allows link-local addresses, and private,
	// loopback and link-local ones without a warning: the override of one
	// server meant to reach a local network. Cloud-metadata addresses stay
	// refused.
	AllowPrivate bool
	// Logger receives the warnings about private and loopback addresses.
	// Nil means slog.Default().
	Logger *slog.Logger

	warned sync.Map // warnKey → struct{}
}

type warnKey struct {
	server string
	class  Class
}

// Allow returns nil when ip may be connected to (perhaps with a warning, see
// Class.Warned) and a *RefusedError otherwise.
func (p *Policy) Allow(ip netip.Addr) error {
	if p != nil && p.AllowAll {
		return nil
	}
	if c := Classify(ip); c.Refused() && !(p != nil && p.AllowPrivate && c == LinkLocal) {
		return &RefusedError{IP: ip.WithZone(""), Class: c}
	}
	return nil
}

// Check is Allow for a connection made for server, and logs the warning for
// a private or loopback address, once per server and class.
func (p *Policy) Check(server string, ip netip.Addr) error {
	if err := p.Allow(ip); err != nil {
		return err
	}
	if p == nil || p.AllowAll || p.AllowPrivate {
		return nil
	}
	if c := Classify(ip); c.Warned() {
		if _, seen := p.warned.LoadOrStore(warnKey{server, c}, struct{}{}); !seen {
			p.logger().Warn(fmt.Sprintf("mcp server %q is at %s, %s address; allowed, but make sure the configuration means to reach this network", server, ip.WithZone(""), article(c)),
				"server", server, "ip", ip.WithZone("").String())
		}
	}
	return nil
}

func (p *Policy) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// Control returns a net.Dialer Control function that checks the address of
// every connection made for server, after name resolution and before the
// connection is attempted. A refused address fails the dial with a
// *RefusedError.
func (p *Policy) Control(server string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			if p != nil && p.AllowAll {
				return nil
			}
			return fmt.Errorf("cannot check the address %q: %w", address, err)
		}
		return p.Check(server, ap.Addr())
	}
}

// DialContext returns d's DialContext with the policy's Control hook added
// (after d's own Control, if any), for an http.Transport's DialContext. A nil
// d means a zero net.Dialer.
func (p *Policy) DialContext(server string, d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	var dialer net.Dialer
	if d != nil {
		dialer = *d
	}
	check := p.Control(server)
	own, ownCtx := dialer.Control, dialer.ControlContext
	dialer.ControlContext = nil
	dialer.Control = func(network, address string, c syscall.RawConn) error {
		if own != nil {
			if err := own(network, address, c); err != nil {
				return err
			}
		}
		return check(network, address, c)
	}
	if ownCtx != nil {
		dialer.Control = nil
		dialer.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
			if err := ownCtx(ctx, network, address, c); err != nil {
				return err
			}
			return check(network, address, c)
		}
	}
	return dialer.DialContext
}

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL validates a server's URL when the configuration is read: it must
// be http or https with a host, and every address the host resolves to now
// must be allowed (a private or loopback one is logged as a warning). The
// error names the server. Since the answer of DNS may change, the dial-time
// check (Control, DialContext) is what protects; this one reports mistakes
// early.
func (p *Policy) CheckURL(ctx context.Context, server, rawURL string) error {
	return p.CheckURLWith(ctx, net.DefaultResolver, server, rawURL)
}

// CheckURLWith is CheckURL with the given resolver.
func (p *Policy) CheckURLWith(ctx context.Context, r Resolver, server, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("mcp server %q: the url is invalid: %w", server, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("mcp server %q: the url must start with http:// or https://, not %q", server, rawURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("mcp server %q: the url %q has no host", server, rawURL)
	}
	if p != nil && p.AllowAll {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := p.Check(server, ip); err != nil {
			return fmt.Errorf("mcp server %q: the url %s: %w", server, redact(u), err)
		}
		return nil
	}
	ips, err := r.LookupNetIP(ctx, "ip", strings.TrimSuffix(host, "."))
	if err != nil {
		return fmt.Errorf("mcp server %q: cannot resolve the host of %s: %w", server, redact(u), err)
	}
	for _, ip := range ips {
		if err := p.Check(server, ip); err != nil {
			return fmt.Errorf("mcp server %q: the url %s resolves to %s: %w", server, redact(u), ip, err)
		}
	}
	return nil
}

// redact returns u without its user information and query, which may carry secrets.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery = "", false
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}
