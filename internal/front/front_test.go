package front

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAuthorized(t *testing.T) {
	tests := []struct {
		header string
		want   bool
	}{
		{"Bearer secret", true},
		{"bearer secret", true},
		{"Bearer  secret ", true},
		{"Bearer wrong", false},
		{"secret", false},
		{"Basic secret", false},
		{"", false},
		{"Bearer ", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		if got := authorized(r, "secret"); got != tt.want {
			t.Errorf("Authorization %q: authorized = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestRebindingSafe(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50005}
	public := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 50005}
	tests := []struct {
		local        net.Addr
		host, origin string
		want         bool
	}{
		{loopback, "127.0.0.1:50005", "", true},
		{loopback, "localhost:50005", "http://localhost:3000", true},
		{loopback, "[::1]:50005", "", true},
		{loopback, "evil.example", "", false},
		{loopback, "127.0.0.1:50005", "https://evil.example", false},
		{public, "50005-sbx123.cube.example", "", true},
		{public, "anything", "https://app.example", true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Host = tt.host
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
		if got := rebindingSafe(r); got != tt.want {
			t.Errorf("listener %v, Host %q, Origin %q: safe = %v, want %v", tt.local, tt.host, tt.origin, got, tt.want)
		}
	}
}

func TestDecodeHeaderValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"us-west1", "us-west1"},
		{"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"},
		{"=?base64?IHBhZGRlZCA=?=", " padded "},
		{"=?base64?SGVsbG8=", "=?base64?SGVsbG8="}, // no suffix: a plain value
	}
	for _, tt := range tests {
		got, err := decodeHeaderValue(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("decodeHeaderValue(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := decodeHeaderValue("=?base64?!!!?="); err == nil {
		t.Error("malformed base64: want an error")
	}
}

func TestSameValue(t *testing.T) {
	tests := []struct {
		header string
		body   string
		want   bool
	}{
		{"us-west1", `"us-west1"`, true},
		{"42", `42`, true},
		{"42", `42.0`, true},
		{"true", `true`, true},
		{"false", `true`, false},
		{"x", `"y"`, false},
	}
	for _, tt := range tests {
		if got := sameValue(tt.header, json.RawMessage(tt.body)); got != tt.want {
			t.Errorf("sameValue(%q, %s) = %v, want %v", tt.header, tt.body, got, tt.want)
		}
	}
}
