//go:build !linux

package httpc

import "net"

// alive takes an idle connection as alive where the socket cannot be
// peeked at without blocking. A request written to one the server closed
// meanwhile fails; one written to nothing (a failed write) or a GET is sent
// again on a new connection (see Transport.RoundTrip).
func alive(net.Conn) bool { return true }
