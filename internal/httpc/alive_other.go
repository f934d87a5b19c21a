//go:build !linux

package httpc

import (
	"errors"
	"net"
)

// alive takes an idle connection as alive where the socket cannot be
// peeked at without blocking. A request written to one the server closed
// meanwhile fails; one written to nothing (a failed write) or a GET is sent
// again on a new connection (see Transport.RoundTrip).
func alive(net.Conn) bool { return true }

// Answers of peek.
const (
	nothingYet = iota
	hasData
	broken
)

// peek cannot look without waiting here: it says there may be data.
func peek(net.Conn) int { return hasData }

var errNoReadNow = errors.New("httpc: no read without waiting on this system")

// readNow cannot read without waiting here: a released body's connection
// is then closed rather than reused (finishTail fails).
func readNow(net.Conn, []byte) (int, error) { return 0, errNoReadNow }
