package rpc

import (
	crand "crypto/rand"
	"math/rand/v2"
)

// maxID bounds the request ids the gateway sends: below 2^53, so that a
// server that reads JSON numbers as doubles (JavaScript, the TypeScript SDK)
// sends back the very id it got.
const maxID = 1 << 53

// idSource draws the ids of a process's or a session's requests to its
// server: random in [1, 2^53), from a ChaCha8 generator seeded from the
// system's cryptographic source, so that no id tells another (a server, or
// anyone who sees one request, cannot guess the ids of other clients'
// calls). Not safe for concurrent use: its owner draws under its own lock,
// and checks the id against its pending calls (see next).
type idSource struct{ r *rand.ChaCha8 }

func newIDSource() idSource {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails on Linux (and panics where it cannot)
	return idSource{r: rand.NewChaCha8(seed)}
}

// next returns an id for which taken is false: unique among the pending
// calls taken looks up.
func (s idSource) next(taken func(uint64) bool) uint64 {
	for {
		id := s.r.Uint64() & (maxID - 1) // [0, 2^53)
		if id != 0 && !taken(id) {
			return id
		}
	}
}
