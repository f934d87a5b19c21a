package netguard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClassifyAndAllow(t *testing.T) {
	tests := []struct {
		ip    string
		class Class
	}{
		// Cloud metadata services: refused.
		{"169.254.169.254", Metadata},
		{"169.254.170.2", Metadata},
		{"169.254.170.23", Metadata},
		{"169.254.0.23", Metadata},
		{"100.100.100.200", Metadata},
		{"192.0.0.192", Metadata},
		{"168.63.129.16", Metadata},
		{"fd00:ec2::254", Metadata},
		{"fd00:ec2::23", Metadata},
		{"::ffff:169.254.169.254", Metadata}, // IPv4-mapped
		{"64:ff9b::a9fe:a9fe", Metadata},     // NAT64 of 169.254.169.254
		{"2002:a9fe:a9fe::1", Metadata},      // 6to4 of 169.254.169.254
		// Link-local: refused.
		{"169.254.1.1", LinkLocal},
		{"fe80::1", LinkLocal},
		{"fe80::1%eth0", LinkLocal},
		{"::ffff:169.254.10.10", LinkLocal},
		// Nothing to connect to: refused.
		{"0.0.0.0", Unspecified},
		{"0.1.2.3", Unspecified},
		{"::", Unspecified},
		{"224.0.0.1", Multicast},
		{"ff02::1", Multicast},
		{"255.255.255.255", Broadcast},
		// Loopback and private: allowed with a warning.
		{"127.0.0.1", Loopback},
		{"127.8.9.10", Loopback},
		{"::1", Loopback},
		{"::ffff:127.0.0.1", Loopback},
		{"10.1.2.3", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"192.168.1.1", Private},
		{"100.64.0.1", Private},
		{"fd12:3456::1", Private},
		{"64:ff9b::a00:1", Private}, // NAT64 of 10.0.0.1
		// Public: allowed silently.
		{"1.1.1.1", Public},
		{"172.32.0.1", Public},
		{"100.128.0.1", Public},
		{"2606:4700::1111", Public},
		{"64:ff9b::101:101", Public}, // NAT64 of 1.1.1.1
	}
	var p Policy
	all := &Policy{AllowAll: true}
	for _, tc := range tests {
		t.Run(tc.ip, func(t *testing.T) {
			ip := netip.MustParseAddr(tc.ip)
			if got := Classify(ip); got != tc.class {
				t.Fatalf("Classify(%s) = %q, want %q", tc.ip, got, tc.class)
			}
			err := p.Allow(ip)
			if tc.class.Refused() {
				var re *RefusedError
				if !errors.As(err, &re) || !errors.Is(err, ErrRefused) || re.Class != tc.class {
					t.Fatalf("Allow(%s) = %v, want a *RefusedError of class %q", tc.ip, err, tc.class)
				}
			} else if err != nil {
				t.Fatalf("Allow(%s) = %v, want nil", tc.ip, err)
			}
			if err := all.Allow(ip); err != nil {
				t.Errorf("AllowAll: Allow(%s) = %v, want nil", tc.ip, err)
			}
		})
	}
}

func TestRefusedErrorText(t *testing.T) {
	var p Policy
	for ip, want := range map[string]string{
		"169.254.169.254": "169.254.169.254 is a cloud metadata address, which the gateway does not connect to",
		"fe80::1%eth0":    "fe80::1 is a link-local address, which the gateway does not connect to",
		"0.0.0.0":         "0.0.0.0 is an unspecified address, which the gateway does not connect to",
	} {
		if err := p.Allow(netip.MustParseAddr(ip)); err == nil || err.Error() != want {
			t.Errorf("Allow(%s) = %v, want %q", ip, err, want)
		}
	}
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogged() (*Policy, *logBuffer) {
	logs := &logBuffer{}
	return &Policy{Logger: slog.New(slog.NewTextHandler(logs, nil))}, logs
}

func TestCheckWarnsOncePerServer(t *testing.T) {
	p, logs := newLogged()
	for range 3 {
		for _, ip := range []string{"127.0.0.1", "127.0.0.2", "10.0.0.1", "1.1.1.1"} {
			if err := p.Check("notion", netip.MustParseAddr(ip)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Check("other", netip.MustParseAddr("127.0.0.1")); err != nil {
			t.Fatal(err)
		}
	}
	out := logs.String()
	for _, want := range []string{
		`mcp server \"notion\" is at 127.0.0.1, a loopback address; allowed`,
		`mcp server \"notion\" is at 10.0.0.1, a private address; allowed`,
		`mcp server \"other\" is at 127.0.0.1, a loopback address; allowed`,
	} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want exactly one %q in the log:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "level=WARN"); n != 3 {
		t.Errorf("%d warnings, want 3:\n%s", n, out)
	}

	all, logs := &Policy{AllowAll: true}, &logBuffer{}
	all.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if err := all.Check("x", netip.MustParseAddr("127.0.0.1")); err != nil || logs.String() != "" {
		t.Errorf("AllowAll: Check = %v, log %q; want nil and no warning", err, logs.String())
	}
}

// fakeResolver answers from a table.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := f[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestCheckURL(t *testing.T) {
	r := fakeResolver{
		"mcp.example.com":          {netip.MustParseAddr("93.184.216.34")},
		"metadata.example.com":     {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("169.254.169.254")},
		"internal.example.com":     {netip.MustParseAddr("10.0.0.7")},
		"metadata.google.internal": {netip.MustParseAddr("169.254.169.254")},
	}
	tests := []struct {
		url, want string // want "" means allowed
	}{
		{"https://mcp.example.com/mcp", ""},
		{"http://mcp.example.com:8080/sse?key=secret", ""},
		{"https://internal.example.com/mcp", ""},
		{"http://127.0.0.1:3001/mcp", ""},
		{"http://[::1]:3001/mcp", ""},
		{"http://169.254.169.254/latest/meta-data", `mcp server "s": the url http://169.254.169.254/latest/meta-data: 169.254.169.254 is a cloud metadata address, which the gateway does not connect to`},
		{"http://[fd00:ec2::254]/", `mcp server "s": the url http://[fd00:ec2::254]/: fd00:ec2::254 is a cloud metadata address, which the gateway does not connect to`},
		{"http://100.100.100.200/", `mcp server "s": the url http://100.100.100.200/: 100.100.100.200 is a cloud metadata address, which the gateway does not connect to`},
		{"http://[fe80::1%25eth0]:80/", `mcp server "s": the url http://[fe80::1%25eth0]:80/: fe80::1 is a link-local address, which the gateway does not connect to`},
		{"http://metadata.google.internal/computeMetadata/v1/", `mcp server "s": the url http://metadata.google.internal/computeMetadata/v1/ resolves to 169.254.169.254: 169.254.169.254 is a cloud metadata address, which the gateway does not connect to`},
		{"https://user:pw@metadata.example.com/x?token=secret", `mcp server "s": the url https://metadata.example.com/x resolves to 169.254.169.254: 169.254.169.254 is a cloud metadata address, which the gateway does not connect to`},
		{"ftp://mcp.example.com/", `mcp server "s": the url must start with http:// or https://, not "ftp://mcp.example.com/"`},
		{"https:///mcp", `mcp server "s": the url "https:///mcp" has no host`},
		{"https://nowhere.example.com/", `mcp server "s": cannot resolve the host of https://nowhere.example.com/: lookup nowhere.example.com: no such host`},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			var p Policy
			err := p.CheckURLWith(testContext(t), r, "s", tc.url)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckURL(%s) = %v, want nil", tc.url, err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("CheckURL(%s) =\n  %v\nwant\n  %s", tc.url, err, tc.want)
			}
			all := &Policy{AllowAll: true}
			if err := all.CheckURLWith(testContext(t), r, "s", tc.url); err != nil && !strings.Contains(tc.url, "ftp:") && !strings.Contains(tc.url, ":///") {
				t.Errorf("AllowAll: CheckURL(%s) = %v", tc.url, err)
			}
		})
	}
}

func TestDialRefusesBeforeConnecting(t *testing.T) {
	var p Policy
	dial := p.DialContext("s", &net.Dialer{Timeout: 5 * time.Second})
	for _, addr := range []string{"169.254.169.254:80", "[fd00:ec2::254]:80", "169.254.1.1:80", "0.0.0.0:80"} {
		_, err := dial(testContext(t), "tcp", addr)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("dial %s: %v, want ErrRefused", addr, err)
		}
	}
}

// TestDialTimeCheckDefeatsDNSRebinding serves a name from a DNS server that
// answers 127.0.0.1 first and the metadata address afterwards: the URL check
// passes, the connection is refused all the same, because the dialer checks
// the address it actually connects to.
func TestDialTimeCheckDefeatsDNSRebinding(t *testing.T) {
	ctx := testContext(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	dns := startFakeDNS(t, "rebind.test.", []netip.Addr{
		netip.MustParseAddr("127.0.0.1"),       // the URL check
		netip.MustParseAddr("169.254.169.254"), // the first connection
		netip.MustParseAddr("127.0.0.1"),       // the second connection
	})
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	p, logs := newLogged()
	url := "http://rebind.test:" + port + "/"
	if err := p.CheckURLWith(ctx, resolver, "rebind", url); err != nil {
		t.Fatalf("CheckURL: %v", err)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:       p.DialContext("rebind", &net.Dialer{Resolver: resolver, Timeout: 5 * time.Second}),
		DisableKeepAlives: true,
	}}
	t.Cleanup(client.CloseIdleConnections)
	get := func() (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		return b.String(), err
	}
	if body, err := get(); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "169.254.169.254 is a cloud metadata address") {
		t.Fatalf("GET after rebinding = %q, %v; want the connection refused", body, err)
	}
	if body, err := get(); err != nil || body != "reached" {
		t.Fatalf("GET on loopback = %q, %v; want it to reach the server", body, err)
	}
	if n := strings.Count(logs.String(), `is at 127.0.0.1, a loopback address`); n != 1 {
		t.Errorf("%d loopback warnings, want 1:\n%s", n, logs)
	}
}

// startFakeDNS serves A queries for name on 127.0.0.1 (UDP), giving the
// answers in turn (the last one repeated); AAAA queries get no answer.
func startFakeDNS(t *testing.T, name string, answers []netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		next := 0
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			qname, qtype, end, ok := parseQuestion(q)
			if !ok {
				continue
			}
			var ans []netip.Addr
			if qtype == 1 && strings.EqualFold(qname, name) {
				ans = []netip.Addr{answers[min(next, len(answers)-1)]}
				next++
			}
			pc.WriteTo(dnsAnswer(q[:end], ans), from) //nolint:errcheck // the client retries
		}
	}()
	return pc.LocalAddr().String()
}

// parseQuestion reads the single question of a DNS query.
func parseQuestion(q []byte) (name string, qtype uint16, end int, ok bool) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return "", 0, 0, false
	}
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return "", 0, 0, false
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return "", 0, 0, false
	}
	qtype = binary.BigEndian.Uint16(q[i+1 : i+3])
	return strings.Join(labels, ".") + ".", qtype, i + 5, true
}

// dnsAnswer builds the response to header+question with A records.
func dnsAnswer(query []byte, ans []netip.Addr) []byte {
	out := append([]byte(nil), query...)
	out[2], out[3] = 0x81, 0x80 // response, recursion desired and available, no error
	binary.BigEndian.PutUint16(out[6:8], uint16(len(ans)))
	binary.BigEndian.PutUint16(out[8:10], 0)
	binary.BigEndian.PutUint16(out[10:12], 0) // drop the query's EDNS record
	for _, a := range ans {
		v4 := a.As4()
		out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
		out = append(out, v4[:]...)
	}
	return out
}
